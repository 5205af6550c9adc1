// Tensors that travel from a callee to Python: allocation through the caller's framework
// (TVMFFIEnvTensorAlloc), the conversion of returned managed tensors, and tvm_ffi.Tensor,
// the holder used when no framework tensor was among the arguments.
#include "tensor_result.h"

#include <tvm/ffi/detail/append.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "call_frame.h"
#include "dltensor_check.h"
#include "function.h"
#include "type_cache.h"

namespace tvm_ffi_py {
namespace {

// ---- allocation --------------------------------------------------------------------------

// DLPackManagedTensorAllocator's error callback: the producer's reason becomes the exception.
void SetAllocError(void* error_ctx, const char* kind, const char* message) {
  auto* frame = static_cast<CallFrame*>(error_ctx);
  PyErr_SetString(ExceptionForKind(kind), message != nullptr ? message : "allocation failed");
  frame->alloc_error = true;
}

// A CPU tensor from malloc, for calls with no framework tensor among the arguments. Shape
// and strides live in the same block as the header; the data is 256-byte aligned (DLPack's
// recommendation, and enough for any vector load).
struct HostTensor {
  DLManagedTensorVersioned managed;
  void* data;
  int64_t dims[1];  // 2 * ndim entries: shape then strides

  static void Delete(DLManagedTensorVersioned* self) {
    auto* host = static_cast<HostTensor*>(self->manager_ctx);
    std::free(host->data);
    host->~HostTensor();
    std::free(host);
  }
};

int AllocHostTensor(CallFrame* frame, DLTensor* prototype, DLManagedTensorVersioned** out) {
  const int32_t ndim = prototype->ndim;
  if (ndim < 0 || (ndim > 0 && prototype->shape == nullptr)) {
    PyErr_Format(PyExc_ValueError, "%s(): TVMFFIEnvTensorAlloc got an invalid shape (ndim %d)",
                 frame->func->name, static_cast<int>(ndim));
    frame->alloc_error = true;
    return -1;
  }
  // The byte size and every row-major stride must fit in int64 (extents of 0 count as 1 for
  // the strides): a wrapped product would allocate a small buffer under a huge shape.
  int64_t span = 1;
  bool overflow = false;
  for (int32_t d = 0; d < ndim; ++d) {
    if (prototype->shape[d] < 0) {
      PyErr_Format(PyExc_ValueError,
                   "%s(): TVMFFIEnvTensorAlloc got a negative size (%lld) in dimension %d",
                   frame->func->name, static_cast<long long>(prototype->shape[d]),
                   static_cast<int>(d));
      frame->alloc_error = true;
      return -1;
    }
    const int64_t extent = prototype->shape[d] > 0 ? prototype->shape[d] : 1;
    overflow = overflow || __builtin_mul_overflow(span, extent, &span);
  }
  int64_t numel = 1;
  for (int32_t d = 0; d < ndim && !overflow; ++d) numel *= prototype->shape[d];
  int64_t bits = 0;
  overflow = overflow ||
             __builtin_mul_overflow(span, int64_t{prototype->dtype.bits} * prototype->dtype.lanes,
                                    &bits) ||
             bits > INT64_MAX - 255 * 8;  // room to round the byte count up to 256
  if (overflow) {
    std::string shape_text;
    for (int32_t d = 0; d < ndim && d < 8; ++d) {
      shape_text += (d ? ", " : "") + std::to_string(prototype->shape[d]);
    }
    shape_text += ndim > 8 ? ", ..." : (ndim == 1 ? "," : "");
    PyErr_Format(PyExc_ValueError,
                 "%s(): TVMFFIEnvTensorAlloc: a CPU tensor of shape (%s) is too large: its size "
                 "in bytes does not fit in int64",
                 frame->func->name, shape_text.c_str());
    frame->alloc_error = true;
    return -1;
  }
  const size_t bytes =
      static_cast<size_t>((numel * prototype->dtype.bits * prototype->dtype.lanes + 7) / 8);
  const size_t header =
      sizeof(HostTensor) + sizeof(int64_t) * (ndim > 0 ? 2 * static_cast<size_t>(ndim) - 1 : 0);
  auto* host = static_cast<HostTensor*>(std::malloc(header));
  void* data = std::aligned_alloc(256, ((bytes + 255) / 256) * 256 + (bytes == 0 ? 256 : 0));
  if (host == nullptr || data == nullptr) {
    std::free(host);
    std::free(data);
    PyErr_Format(PyExc_MemoryError, "%s(): cannot allocate a %zu-byte CPU tensor",
                 frame->func->name, bytes);
    frame->alloc_error = true;
    return -1;
  }
  new (host) HostTensor{};
  host->data = data;
  int64_t* shape = host->dims;
  int64_t* strides = host->dims + ndim;
  int64_t stride = 1;
  for (int32_t d = ndim; d-- > 0;) {
    shape[d] = prototype->shape[d];
    strides[d] = stride;
    stride *= shape[d];
  }
  DLManagedTensorVersioned& m = host->managed;
  m.version = {DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
  m.manager_ctx = host;
  m.deleter = HostTensor::Delete;
  m.flags = 0;
  m.dl_tensor.data = data;
  m.dl_tensor.device = {kDLCPU, 0};
  m.dl_tensor.ndim = ndim;
  m.dl_tensor.dtype = prototype->dtype;
  m.dl_tensor.shape = shape;
  m.dl_tensor.strides = strides;
  m.dl_tensor.byte_offset = 0;
  *out = &m;
  return 0;
}

// ---- tvm_ffi.Tensor ----------------------------------------------------------------------

struct TensorObject {
  PyObject_HEAD DLManagedTensorVersioned* managed;  // owned
};

PyTypeObject* g_tensor_type = nullptr;

// A consumer's view of a TensorObject: shares the memory, keeps the object alive.
struct ExportedView {
  DLManagedTensorVersioned versioned;
  DLManagedTensor legacy;
  PyObject* owner;

  static void Drop(PyObject* owner) {
    // Consumers may release from any thread (torch does, from its allocator).
    PyGILState_STATE gil = PyGILState_Ensure();
    Py_DECREF(owner);
    PyGILState_Release(gil);
  }
  static void DeleteVersioned(DLManagedTensorVersioned* self) {
    auto* view = static_cast<ExportedView*>(self->manager_ctx);
    Drop(view->owner);
    delete view;
  }
  static void DeleteLegacy(DLManagedTensor* self) {
    auto* view = static_cast<ExportedView*>(self->manager_ctx);
    Drop(view->owner);
    delete view;
  }
};

void CapsuleDestructor(PyObject* capsule) {
  // A consumer that refused the tensor (numpy: bfloat16) drops the capsule with its error
  // pending: that error is the consumer's to raise, so it is kept, not cleared.
  PendingErrorStash stash;
  // Unconsumed capsules still own their tensor; consumed ones were renamed "used_...".
  if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
    auto* m = static_cast<DLManagedTensorVersioned*>(
        PyCapsule_GetPointer(capsule, "dltensor_versioned"));
    if (m->deleter != nullptr) m->deleter(m);
  } else if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
    if (m->deleter != nullptr) m->deleter(m);
  }
  if (PyErr_Occurred()) PyErr_WriteUnraisable(capsule);  // the deleter's own, like __del__'s
}

PyObject* TensorDLPack(PyObject* self, PyObject* args, PyObject* kwargs) {
  static const char* kwlist[] = {"stream", "max_version", "dl_device", "copy", nullptr};
  PyObject* stream = Py_None;
  PyObject* max_version = Py_None;
  PyObject* dl_device = Py_None;
  PyObject* copy = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO", const_cast<char**>(kwlist), &stream,
                                   &max_version, &dl_device, &copy)) {
    return nullptr;
  }
  if (copy == Py_True) {
    PyErr_SetString(PyExc_BufferError, "tvm_ffi.Tensor.__dlpack__: copy=True is not supported");
    return nullptr;
  }
  auto* t = reinterpret_cast<TensorObject*>(self);
  long major = 0;
  if (max_version != Py_None) {
    // The array API's (major, minor); a major beyond a C long is still "1 or later".
    if (!PyTuple_Check(max_version) || PyTuple_GET_SIZE(max_version) != 2 ||
        !PyLong_Check(PyTuple_GET_ITEM(max_version, 0)) ||
        !PyLong_Check(PyTuple_GET_ITEM(max_version, 1))) {
      PyErr_Format(PyExc_TypeError,
                   "tvm_ffi.Tensor.__dlpack__: max_version must be None or a tuple of two "
                   "ints (major, minor), not %R",
                   max_version);
      return nullptr;
    }
    int overflow = 0;
    major = PyLong_AsLongAndOverflow(PyTuple_GET_ITEM(max_version, 0), &overflow);
    if (overflow != 0) major = overflow > 0 ? 1 : -1;
  }
  if (dl_device != Py_None) {
    // No copies: only the tensor's own device can be served (the array API's BufferError).
    const DLDevice& own = t->managed->dl_tensor.device;
    long type = -1;
    long id = -1;
    if (PyTuple_Check(dl_device) && PyTuple_GET_SIZE(dl_device) == 2 &&
        PyLong_Check(PyTuple_GET_ITEM(dl_device, 0)) &&
        PyLong_Check(PyTuple_GET_ITEM(dl_device, 1))) {
      int overflow = 0;
      type = PyLong_AsLongAndOverflow(PyTuple_GET_ITEM(dl_device, 0), &overflow);
      id = overflow ? -1 : PyLong_AsLongAndOverflow(PyTuple_GET_ITEM(dl_device, 1), &overflow);
      if (overflow) type = id = -1;
    } else {
      PyErr_Format(PyExc_TypeError,
                   "tvm_ffi.Tensor.__dlpack__: dl_device must be None or a tuple of two ints "
                   "(device_type, device_id), not %R",
                   dl_device);
      return nullptr;
    }
    if (type != static_cast<long>(own.device_type) || id != static_cast<long>(own.device_id)) {
      PyErr_Format(PyExc_BufferError,
                   "tvm_ffi.Tensor.__dlpack__: the tensor is on device (%d, %d) and cannot be "
                   "exported to dl_device=%R without a copy (not supported)",
                   static_cast<int>(own.device_type), static_cast<int>(own.device_id), dl_device);
      return nullptr;
    }
  }
  auto* view = new (std::nothrow) ExportedView{};
  if (view == nullptr) return PyErr_NoMemory();
  view->owner = self;
  Py_INCREF(self);
  PyObject* capsule = nullptr;
  if (major >= 1) {
    view->versioned = *t->managed;
    view->versioned.manager_ctx = view;
    view->versioned.deleter = ExportedView::DeleteVersioned;
    capsule = PyCapsule_New(&view->versioned, "dltensor_versioned", CapsuleDestructor);
  } else {
    view->legacy.dl_tensor = t->managed->dl_tensor;
    view->legacy.manager_ctx = view;
    view->legacy.deleter = ExportedView::DeleteLegacy;
    capsule = PyCapsule_New(&view->legacy, "dltensor", CapsuleDestructor);
  }
  if (capsule == nullptr) {
    Py_DECREF(self);
    delete view;
  }
  return capsule;
}

PyObject* TensorDLPackDevice(PyObject* self, PyObject*) {
  const DLDevice& d = reinterpret_cast<TensorObject*>(self)->managed->dl_tensor.device;
  return Py_BuildValue("(ii)", static_cast<int>(d.device_type), static_cast<int>(d.device_id));
}

PyObject* TensorShape(PyObject* self, void*) {
  const DLTensor& t = reinterpret_cast<TensorObject*>(self)->managed->dl_tensor;
  PyObject* shape = PyTuple_New(t.ndim);
  if (shape == nullptr) return nullptr;
  for (int32_t d = 0; d < t.ndim; ++d) {
    PyObject* v = PyLong_FromLongLong(t.shape[d]);
    if (v == nullptr) {
      Py_DECREF(shape);
      return nullptr;
    }
    PyTuple_SET_ITEM(shape, d, v);
  }
  return shape;
}

PyObject* TensorDType(PyObject* self, void*) {
  const DLTensor& t = reinterpret_cast<TensorObject*>(self)->managed->dl_tensor;
  std::string text;  // the names the C++ side prints: "float32", "bfloat16", "float16x2"
  tvm::ffi::detail::AppendDType(text, t.dtype);
  return PyUnicode_FromStringAndSize(text.data(), static_cast<Py_ssize_t>(text.size()));
}

PyObject* TensorDevice(PyObject* self, void*) {
  const DLTensor& t = reinterpret_cast<TensorObject*>(self)->managed->dl_tensor;
  std::string text;  // "cpu:0", "cuda:1", ...
  tvm::ffi::detail::AppendDevice(text, t.device);
  return PyUnicode_FromStringAndSize(text.data(), static_cast<Py_ssize_t>(text.size()));
}

PyObject* TensorDataPtr(PyObject* self, void*) {
  const DLTensor& t = reinterpret_cast<TensorObject*>(self)->managed->dl_tensor;
  return PyLong_FromVoidPtr(static_cast<char*>(t.data) + t.byte_offset);
}

PyObject* TensorRepr(PyObject* self) {
  PyObject* shape = TensorShape(self, nullptr);
  PyObject* dtype = TensorDType(self, nullptr);
  PyObject* device = TensorDevice(self, nullptr);
  PyObject* out = nullptr;
  if (shape && dtype && device) {
    out = PyUnicode_FromFormat("<tvm_ffi.Tensor shape=%R dtype=%U device=%U>", shape, dtype,
                               device);
  }
  Py_XDECREF(shape);
  Py_XDECREF(dtype);
  Py_XDECREF(device);
  return out;
}

void TensorDealloc(PyObject* self) {
  auto* t = reinterpret_cast<TensorObject*>(self);
  PyTypeObject* type = Py_TYPE(self);
  if (t->managed != nullptr && t->managed->deleter != nullptr) t->managed->deleter(t->managed);
  type->tp_free(self);
  Py_DECREF(type);
}

PyMethodDef kTensorMethods[] = {
    {"__dlpack__", reinterpret_cast<PyCFunction>(reinterpret_cast<void*>(TensorDLPack)),
     METH_VARARGS | METH_KEYWORDS,
     "DLPack export: torch.from_dlpack(t), numpy.from_dlpack(t). Shares the memory."},
    {"__dlpack_device__", TensorDLPackDevice, METH_NOARGS, "(device_type, device_id)"},
    {nullptr, nullptr, 0, nullptr},
};

PyGetSetDef kTensorGetSet[] = {
    {"shape", TensorShape, nullptr, "The shape, a tuple of ints.", nullptr},
    {"dtype", TensorDType, nullptr, "The element type, e.g. 'float32'.", nullptr},
    {"device", TensorDevice, nullptr, "The device, e.g. 'cpu:0'.", nullptr},
    {"data_ptr", TensorDataPtr, nullptr, "Address of the first element.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyType_Slot kTensorSlots[] = {
    {Py_tp_dealloc, reinterpret_cast<void*>(TensorDealloc)},
    {Py_tp_repr, reinterpret_cast<void*>(TensorRepr)},
    {Py_tp_methods, kTensorMethods},
    {Py_tp_getset, kTensorGetSet},
    {Py_tp_doc,
     const_cast<char*>("A tensor returned by an exported function when no framework tensor was "
                       "among its arguments. Convert with torch.from_dlpack / numpy.from_dlpack.")},
    {0, nullptr},
};

PyType_Spec kTensorSpec = {"tvm_ffi.Tensor", sizeof(TensorObject), 0, Py_TPFLAGS_DEFAULT,
                           kTensorSlots};

}  // namespace

PyTypeObject* InitTensorType() {
  if (g_tensor_type == nullptr) {
    auto* type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&kTensorSpec));
    if (type == nullptr) return nullptr;
    type->tp_new = nullptr;  // made only by calls
    PyType_Modified(type);
    g_tensor_type = type;
  }
  return g_tensor_type;
}

int AllocTensorForCall(void* handle, DLTensor* prototype, DLManagedTensorVersioned** out) {
  auto* frame = static_cast<CallFrame*>(handle);
  if (frame->alloc_error || frame->stream_error) return -1;  // an error is already pending
  const ExchangeApi* api = frame->tensor_api;
  if (api != nullptr && api->managed_tensor_allocator != nullptr) {
    if (api->managed_tensor_allocator(prototype, out, frame, SetAllocError) != 0) {
      frame->alloc_error = true;
      if (!PyErr_Occurred()) {
        PyErr_Format(PyExc_RuntimeError, "%s(): the framework's allocator failed",
                     frame->func->name);
      }
      return -1;
    }
    return 0;
  }
  if (prototype->device.device_type == kDLCPU) return AllocHostTensor(frame, prototype, out);
  PyErr_Format(PyExc_RuntimeError,
               "%s(): Tensor::FromEnvAlloc needs a framework to allocate on device type %d: "
               "pass a tensor of that framework (e.g. a torch tensor) among the arguments",
               frame->func->name, static_cast<int>(prototype->device.device_type));
  frame->alloc_error = true;
  return -1;
}

PyObject* ManagedTensorToPython(const CallFrame& frame, DLManagedTensorVersioned* managed) {
  if (managed == nullptr) Py_RETURN_NONE;
  const ExchangeApi* api = frame.tensor_api;
  if (api != nullptr && api->managed_tensor_to_py_object_no_sync != nullptr) {
    void* obj = nullptr;
    if (api->managed_tensor_to_py_object_no_sync(managed, &obj) != 0) {
      if (managed->deleter != nullptr) managed->deleter(managed);
      return nullptr;
    }
    return static_cast<PyObject*>(obj);
  }
  PyTypeObject* type = InitTensorType();
  TensorObject* t = type != nullptr ? PyObject_New(TensorObject, type) : nullptr;
  if (t == nullptr) {
    if (managed->deleter != nullptr) managed->deleter(managed);
    return nullptr;
  }
  t->managed = managed;
  return reinterpret_cast<PyObject*>(t);
}

namespace {

// A producer's legacy (pre-1.0) DLManagedTensor seen as a versioned one: the versioned
// deleter releases the legacy tensor.
struct LegacyAdapter {
  DLManagedTensorVersioned versioned;
  DLManagedTensor* legacy;

  static void Delete(DLManagedTensorVersioned* self) {
    auto* adapter = static_cast<LegacyAdapter*>(self->manager_ctx);
    if (adapter->legacy->deleter != nullptr) adapter->legacy->deleter(adapter->legacy);
    delete adapter;
  }
};

// The managed tensor inside a capsule from __dlpack__, which we then own (the capsule is
// renamed "used_*" as the protocol asks); NULL with an error set.
DLManagedTensorVersioned* TakeCapsule(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
    auto* managed =
        static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(capsule, "dltensor_versioned"));
    if (managed == nullptr || PyCapsule_SetName(capsule, "used_dltensor_versioned") != 0) {
      return nullptr;
    }
    return managed;
  }
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto* legacy = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
    auto* adapter = new (std::nothrow) LegacyAdapter{};
    if (legacy == nullptr || adapter == nullptr) {
      delete adapter;
      if (!PyErr_Occurred()) PyErr_NoMemory();
      return nullptr;
    }
    if (PyCapsule_SetName(capsule, "used_dltensor") != 0) {
      delete adapter;
      return nullptr;
    }
    adapter->legacy = legacy;
    adapter->versioned.version = {1, 0};
    adapter->versioned.manager_ctx = adapter;
    adapter->versioned.deleter = LegacyAdapter::Delete;
    adapter->versioned.dl_tensor = legacy->dl_tensor;
    return &adapter->versioned;
  }
  PyErr_Format(PyExc_TypeError, "from_dlpack: __dlpack__() returned %s, not a DLPack capsule",
               Py_TYPE(capsule)->tp_name);
  return nullptr;
}

}  // namespace

PyObject* TensorFromDLPack(PyObject* obj) {
  if (PyObject_TypeCheck(obj, InitTensorType())) {
    Py_INCREF(obj);
    return obj;
  }
  PyObject* method = PyObject_GetAttrString(obj, "__dlpack__");
  if (method == nullptr) {
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "from_dlpack: a %s has no __dlpack__ method",
                 Py_TYPE(obj)->tp_name);
    return nullptr;
  }
  // DLPack 1.x first; producers that predate max_version reject the keyword.
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
  DLManagedTensorVersioned* managed = TakeCapsule(capsule);
  Py_DECREF(capsule);
  if (managed == nullptr) return nullptr;
  // Kept and handed on (shape, __dlpack__, calls): a bad field is refused here, once.
  const DLTensorFault fault = CheckDLTensor(managed->dl_tensor);
  if (fault.kind != DLTensorFault::kNone) {
    const std::string what = DescribeDLTensorFault(managed->dl_tensor, fault);
    if (managed->deleter != nullptr) managed->deleter(managed);  // may run Python code: first
    PyErr_Format(PyExc_ValueError, "from_dlpack: %s.__dlpack__() gave a DLTensor with %s",
                 Py_TYPE(obj)->tp_name, what.c_str());
    return nullptr;
  }
  auto* t = PyObject_New(TensorObject, g_tensor_type);
  if (t == nullptr) {
    if (managed->deleter != nullptr) managed->deleter(managed);
    return nullptr;
  }
  t->managed = managed;
  return reinterpret_cast<PyObject*>(t);
}

void ReleaseManagedTensors(const TVMFFIAny& v) {
  if (v.type_code == kTVMFFIDLManagedTensor) {
    auto* managed = static_cast<DLManagedTensorVersioned*>(v.v_ptr);
    if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
  } else if (v.type_code == kTVMFFIRefObject) {
    auto* ref = static_cast<TVMFFIRefObject*>(v.v_ptr);
    if (ref != nullptr) ref->type->dec_ref(ref);
  } else if (v.type_code == kTVMFFIArray || v.type_code == kTVMFFIMap) {
    const int64_t n = v.type_code == kTVMFFIMap ? 2 * v.size : v.size;
    for (int64_t i = 0; i < n; ++i) ReleaseManagedTensors(v.v_array[i]);
  }
}

}  // namespace tvm_ffi_py
