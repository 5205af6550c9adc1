// tvm_ffi.Tensor: a TensorObj the runtime returned, exported by DLPack; and from_dlpack.
#include "core.h"

namespace tvm_ffi_next {
namespace {

const DLTensor* DLOf(PyObject* self) {
  return CellOf<DLTensor>(reinterpret_cast<ObjectWrapper*>(self)->handle);
}

PyObject* TensorShape(PyObject* self, void*) {
  const DLTensor* dl = DLOf(self);
  PyObject* shape = PyTuple_New(dl->ndim);
  for (int32_t i = 0; shape != nullptr && i < dl->ndim; ++i) {
    PyTuple_SET_ITEM(shape, i, PyLong_FromLongLong(dl->shape[i]));
  }
  return shape;
}

PyObject* TensorDType(PyObject* self, void*) {
  TVMFFIAny v{};
  v.type_index = kTVMFFIDataType;
  v.v_dtype = DLOf(self)->dtype;
  return ToPython(&v, nullptr);
}

// "cpu:0", "cuda:1", ...: DLPack's device types under the names torch and apache use.
PyObject* TensorDeviceName(PyObject* self, void*) {
  static const char* const kNames[] = {nullptr,  "cpu",       "cuda",    "cuda_host",    "opencl",
                                       nullptr,  nullptr,     "vulkan",  "metal",        "vpi",
                                       "rocm",   "rocm_host", "ext_dev", "cuda_managed", "oneapi",
                                       "webgpu", "hexagon",   "maia",    "trn"};
  const DLDevice device = DLOf(self)->device;
  const int type = static_cast<int>(device.device_type);
  const bool named = type >= 0 && type < static_cast<int>(sizeof(kNames) / sizeof(kNames[0])) &&
                     kNames[type] != nullptr;
  if (named) return PyUnicode_FromFormat("%s:%d", kNames[type], device.device_id);
  return PyUnicode_FromFormat("device_type_%d:%d", type, device.device_id);
}

PyObject* TensorDataPtr(PyObject* self, PyObject*) {
  const DLTensor* dl = DLOf(self);
  return PyLong_FromVoidPtr(static_cast<char*>(dl->data) + dl->byte_offset);
}

// The rest of apache-tvm-ffi's Tensor surface: ndim, strides (row-major ones when the tensor
// has none), numel(), size(dim), is_contiguous() and device as a tvm_ffi.Device.
PyObject* TensorNDim(PyObject* self, void*) { return PyLong_FromLong(DLOf(self)->ndim); }

int64_t StrideOf(const DLTensor* dl, int32_t i) {
  if (dl->strides != nullptr) return dl->strides[i];
  int64_t stride = 1;
  for (int32_t j = i + 1; j < dl->ndim; ++j) stride *= dl->shape[j];
  return stride;
}

PyObject* TensorStrides(PyObject* self, void*) {
  const DLTensor* dl = DLOf(self);
  PyObject* strides = PyTuple_New(dl->ndim);
  for (int32_t i = 0; strides != nullptr && i < dl->ndim; ++i) {
    PyTuple_SET_ITEM(strides, i, PyLong_FromLongLong(StrideOf(dl, i)));
  }
  return strides;
}

int64_t NumElements(const DLTensor* dl) {
  int64_t n = 1;
  for (int32_t i = 0; i < dl->ndim; ++i) n *= dl->shape[i];
  return n;
}

PyObject* TensorNumel(PyObject* self, PyObject*) {
  return PyLong_FromLongLong(NumElements(DLOf(self)));
}

PyObject* TensorSize(PyObject* self, PyObject* dim) {
  const DLTensor* dl = DLOf(self);
  const long long i = PyLong_AsLongLong(dim);
  if (i == -1 && PyErr_Occurred()) return nullptr;
  if (i < -dl->ndim || i >= dl->ndim) {
    PyErr_Format(PyExc_IndexError,
                 "tvm_ffi.Tensor.size: dimension %lld is out of range for a "
                 "tensor of %d dimensions",
                 i, static_cast<int>(dl->ndim));
    return nullptr;
  }
  return PyLong_FromLongLong(dl->shape[i < 0 ? i + dl->ndim : i]);
}

// Row-major compact; extents of 1 may have any stride, and a tensor without elements is
// contiguous whatever strides its producer wrote.
PyObject* TensorIsContiguous(PyObject* self, PyObject*) {
  const DLTensor* dl = DLOf(self);
  if (dl->strides == nullptr || NumElements(dl) == 0) Py_RETURN_TRUE;
  int64_t expected = 1;
  for (int32_t i = dl->ndim - 1; i >= 0; --i) {
    if (dl->shape[i] == 1) continue;
    if (dl->strides[i] != expected) Py_RETURN_FALSE;
    expected *= dl->shape[i];
  }
  Py_RETURN_TRUE;
}

PyObject* TensorDeviceValue(PyObject* self, void*) {
  TVMFFIAny v{};
  v.type_index = kTVMFFIDevice;
  v.v_device = DLOf(self)->device;
  return ToPython(&v, nullptr);
}

PyObject* TensorRepr(PyObject* self) {
  PyObject* shape = TensorShape(self, nullptr);
  PyObject* dtype = shape != nullptr ? TensorDType(self, nullptr) : nullptr;
  PyObject* device = dtype != nullptr ? TensorDeviceName(self, nullptr) : nullptr;
  PyObject* out = device != nullptr
                      ? PyUnicode_FromFormat("<tvm_ffi.Tensor shape=%R dtype=%U device=%U>", shape,
                                             dtype, device)
                      : nullptr;
  Py_XDECREF(shape);
  Py_XDECREF(dtype);
  Py_XDECREF(device);
  return out;
}

PyObject* TensorDevice(PyObject* self, PyObject*) {
  const DLTensor* dl = DLOf(self);
  return Py_BuildValue("(ii)", static_cast<int>(dl->device.device_type), dl->device.device_id);
}

void CapsuleDestructor(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
    auto* mt =
        static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(capsule, "dltensor_versioned"));
    if (mt->deleter != nullptr) mt->deleter(mt);
  } else if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto* mt = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
    if (mt->deleter != nullptr) mt->deleter(mt);
  }
}

// A (int, int) tuple's first item (any size: a huge major still means "1.x accepted") and
// second; 0, or -1 without an error set when `pair` is not one.
int ReadIntPair(PyObject* pair, PyObject** first, PyObject** second) {
  if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 ||
      !PyLong_Check(PyTuple_GET_ITEM(pair, 0)) || !PyLong_Check(PyTuple_GET_ITEM(pair, 1))) {
    return -1;
  }
  *first = PyTuple_GET_ITEM(pair, 0);
  *second = PyTuple_GET_ITEM(pair, 1);
  return 0;
}

// __dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None): CPU memory needs no
// stream; a versioned capsule when the consumer accepts DLPack 1.x; the tensor's own device
// only (no copies).
PyObject* TensorDLPack(PyObject* self, PyObject* args, PyObject* kwargs) {
  static const char* kKeywords[] = {"stream", "max_version", "dl_device", "copy", nullptr};
  PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO:__dlpack__", const_cast<char**>(kKeywords),
                                   &stream, &max_version, &dl_device, &copy)) {
    return nullptr;
  }
  TVMFFIObject* handle = reinterpret_cast<ObjectWrapper*>(self)->handle;
  PyObject *first = nullptr, *second = nullptr;
  bool versioned = false;
  if (max_version != Py_None) {
    if (ReadIntPair(max_version, &first, &second) != 0) {
      PyErr_Format(PyExc_TypeError,
                   "tvm_ffi.Tensor.__dlpack__: max_version must be None or a tuple of two ints "
                   "(major, minor), not %R",
                   max_version);
      return nullptr;
    }
    PyObject* one = PyLong_FromLong(1);
    const int ge = one != nullptr ? PyObject_RichCompareBool(first, one, Py_GE) : -1;
    Py_XDECREF(one);
    if (ge < 0) return nullptr;
    versioned = ge == 1;
  }
  if (dl_device != Py_None) {
    if (ReadIntPair(dl_device, &first, &second) != 0) {
      PyErr_Format(PyExc_TypeError,
                   "tvm_ffi.Tensor.__dlpack__: dl_device must be None or a tuple of two ints "
                   "(device_type, device_id), not %R",
                   dl_device);
      return nullptr;
    }
    const DLTensor* dl = DLOf(self);
    int overflow_type = 0, overflow_id = 0;
    const long long type = PyLong_AsLongLongAndOverflow(first, &overflow_type);
    const long long id = PyLong_AsLongLongAndOverflow(second, &overflow_id);
    if (overflow_type != 0 || overflow_id != 0 || type != dl->device.device_type ||
        id != dl->device.device_id) {
      PyErr_Format(PyExc_BufferError,
                   "tvm_ffi.Tensor.__dlpack__: the tensor is on device (%d, %d) and cannot be "
                   "exported to dl_device=%R without a copy (not supported)",
                   static_cast<int>(dl->device.device_type), static_cast<int>(dl->device.device_id),
                   dl_device);
      return nullptr;
    }
  }
  if (versioned) {
    DLManagedTensorVersioned* mt = nullptr;
    if (TVMFFITensorToDLPackVersioned(handle, &mt) != 0) {
      RaiseCallError(-1, "__dlpack__", nullptr);
      return nullptr;
    }
    return PyCapsule_New(mt, "dltensor_versioned", CapsuleDestructor);
  }
  DLManagedTensor* mt = nullptr;
  if (TVMFFITensorToDLPack(handle, &mt) != 0) {
    RaiseCallError(-1, "__dlpack__", nullptr);
    return nullptr;
  }
  return PyCapsule_New(mt, "dltensor", CapsuleDestructor);
}

PyMethodDef kTensorMethods[] = {
    {"__dlpack__", reinterpret_cast<PyCFunction>(reinterpret_cast<void*>(TensorDLPack)),
     METH_VARARGS | METH_KEYWORDS, "A DLPack capsule of this tensor."},
    {"__dlpack_device__", TensorDevice, METH_NOARGS, "(device_type, device_id)."},
    {"data_ptr", TensorDataPtr, METH_NOARGS, "Address of the first element."},
    {"numel", TensorNumel, METH_NOARGS, "The number of elements."},
    {"size", TensorSize, METH_O, "The extent of one dimension (negative: from the end)."},
    {"is_contiguous", TensorIsContiguous, METH_NOARGS,
     "Whether the elements are row-major "
     "compact."},
    {nullptr, nullptr, 0, nullptr},
};
PyGetSetDef kTensorGetSet[] = {
    {"shape", TensorShape, nullptr, "The shape, a tuple of ints.", nullptr},
    {"dtype", TensorDType, nullptr, "The element type as text ('float32').", nullptr},
    {"device", TensorDeviceValue, nullptr, "The device, a tvm_ffi.Device ('cpu:0').", nullptr},
    {"ndim", TensorNDim, nullptr, "The number of dimensions.", nullptr},
    {"strides", TensorStrides, nullptr, "The strides in elements, a tuple of ints.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};
PyType_Slot kTensorSlots[] = {
    {Py_tp_repr, reinterpret_cast<void*>(TensorRepr)},
    {Py_tp_methods, kTensorMethods},
    {Py_tp_getset, kTensorGetSet},
    {0, nullptr},
};
}  // namespace

PyType_Spec kTensorSpec = {"tvm_ffi.Tensor", sizeof(ObjectWrapper), 0,
                           Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, kTensorSlots};

namespace {

// The managed tensor inside a capsule from __dlpack__, which we then own (the capsule is
// renamed "used_*" as the protocol asks); NULL with an error set. `versioned` says which kind.
void* TakeCapsule(PyObject* capsule, bool* versioned) {
  for (const char* name : {"dltensor_versioned", "dltensor"}) {
    if (!PyCapsule_IsValid(capsule, name)) continue;
    void* managed = PyCapsule_GetPointer(capsule, name);
    *versioned = name[8] == '_';
    const char* used = *versioned ? "used_dltensor_versioned" : "used_dltensor";
    if (managed == nullptr || PyCapsule_SetName(capsule, used) != 0) return nullptr;
    return managed;
  }
  PyErr_Format(PyExc_TypeError, "from_dlpack: __dlpack__() returned %s, not a DLPack capsule",
               Py_TYPE(capsule)->tp_name);
  return nullptr;
}

void DeleteManaged(void* managed, bool versioned) {
  if (versioned) {
    auto* m = static_cast<DLManagedTensorVersioned*>(managed);
    if (m->deleter != nullptr) m->deleter(m);
  } else {
    auto* m = static_cast<DLManagedTensor*>(managed);
    if (m->deleter != nullptr) m->deleter(m);
  }
}

}  // namespace

// from_dlpack(obj): a Tensor sharing obj's memory (DLPack 1.x first; producers that predate
// max_version reject the keyword and get asked again without it).
PyObject* FromDLPack(PyObject*, PyObject* obj) {
  if (PyObject_TypeCheck(obj, g_tensor_type)) return Py_NewRef(obj);
  PyObject* method = PyObject_GetAttrString(obj, "__dlpack__");
  if (method == nullptr) {
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "from_dlpack: a %s has no __dlpack__ method",
                 Py_TYPE(obj)->tp_name);
    return nullptr;
  }
  PyObject* kwargs = Py_BuildValue("{s:(ii)}", "max_version", 1, 0);
  PyObject* empty = PyTuple_New(0);
  PyObject* capsule =
      kwargs != nullptr && empty != nullptr ? PyObject_Call(method, empty, kwargs) : nullptr;
  Py_XDECREF(kwargs);
  Py_XDECREF(empty);
  if (capsule == nullptr && PyErr_ExceptionMatches(PyExc_TypeError)) {
    PyErr_Clear();
    capsule = PyObject_CallNoArgs(method);
  }
  Py_DECREF(method);
  if (capsule == nullptr) return nullptr;
  bool versioned = false;
  void* managed = TakeCapsule(capsule, &versioned);
  Py_DECREF(capsule);
  if (managed == nullptr) return nullptr;
  const DLTensor& dl = versioned ? static_cast<DLManagedTensorVersioned*>(managed)->dl_tensor
                                 : static_cast<DLManagedTensor*>(managed)->dl_tensor;
  ArgFrame frame;  // position 0: the message names from_dlpack, not an argument
  frame.name = "from_dlpack";
  if (CheckProducerTensor(&frame, obj, dl) != 0) {
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    DeleteManaged(managed, versioned);  // may run Python code: with no error pending
    PyErr_Restore(type, value, traceback);
    return nullptr;
  }
  TVMFFIObjectHandle handle = nullptr;
  const int rc =
      versioned ? TVMFFITensorFromDLPackVersioned(static_cast<DLManagedTensorVersioned*>(managed),
                                                  0, 0, &handle)
                : TVMFFITensorFromDLPack(static_cast<DLManagedTensor*>(managed), 0, 0, &handle);
  if (rc != 0) {
    DeleteManaged(managed, versioned);
    RaiseCallError(rc, "from_dlpack", nullptr);
    return nullptr;
  }
  return NewObjectWrapper(g_tensor_type, static_cast<TVMFFIObject*>(handle));
}

}  // namespace tvm_ffi_next
