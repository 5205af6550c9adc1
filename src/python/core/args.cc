// Python arguments -> TVMFFIAny views. Exact builtin types are tested by pointer first; every
// other type is classified once and cached (a tensor type, a dtype, an object protocol, ...).
#include "arg_types.h"

namespace tvm_ffi_next {
namespace {

constexpr int kMaxDepth = 32;

int IntArg(ArgFrame* frame, PyObject* obj, TVMFFIAny* out) {
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
  if (overflow > 0 && frame->position > 0 && frame->position <= 64 &&
      (frame->pointer_params >> (frame->position - 1) & 1) != 0) {
    // A void* parameter takes every 64-bit address; the int64 payload cannot hold the upper half.
    const unsigned long long address = PyLong_AsUnsignedLongLong(obj);
    if (address == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
      PyErr_Clear();
      PyErr_Format(PyExc_OverflowError, "%s: int %R is not a 64-bit address", ArgLabel(frame), obj);
      return -1;
    }
    out->type_index = kTVMFFIOpaquePtr;
    out->zero_padding = 0;
    out->v_uint64 = address;
    return 0;
  }
  if (overflow != 0) {
    PyErr_Format(PyExc_OverflowError, "%s: int %R does not fit in int64", ArgLabel(frame), obj);
    return -1;
  }
  if (v == -1 && PyErr_Occurred()) return -1;
  SetPod(out, kTVMFFIInt, v);
  return 0;
}

// Text and bytes of up to 7 bytes travel inline; longer ones as objects the runtime makes.
int BytesLikeArg(ArgFrame* frame, const char* data, Py_ssize_t size, bool text, TVMFFIAny* out) {
  if (size <= 7) {
    out->type_index = text ? kTVMFFISmallStr : kTVMFFISmallBytes;
    out->small_str_len = static_cast<uint32_t>(size);
    out->v_int64 = 0;
    std::memcpy(out->v_bytes, data, static_cast<size_t>(size));
    return 0;
  }
  TVMFFIByteArray array{data, static_cast<size_t>(size)};
  const int rc =
      text ? TVMFFIStringFromByteArray(&array, out) : TVMFFIBytesFromByteArray(&array, out);
  if (rc != 0) {
    RaiseCallError(rc, text ? "TVMFFIStringFromByteArray" : "TVMFFIBytesFromByteArray", nullptr);
    return -1;
  }
  if (IsObjectIndex(out->type_index)) frame->owned.push_back(out->v_obj);
  return 0;
}

// A str without a UTF-8 form (a lone surrogate) is refused by argument, with the codec's error as
// the cause.
int StrArg(ArgFrame* frame, PyObject* obj, TVMFFIAny* out) {
  Py_ssize_t size = 0;
  const char* s = PyUnicode_AsUTF8AndSize(obj, &size);
  if (s == nullptr) {
    if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) return -1;
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    PyErr_Format(PyExc_ValueError, "%s: the str has no UTF-8 form (%S)", ArgLabel(frame), value);
    PyObject *new_type, *new_value, *new_traceback;
    PyErr_Fetch(&new_type, &new_value, &new_traceback);
    PyErr_NormalizeException(&new_type, &new_value, &new_traceback);
    PyException_SetContext(new_value, Py_NewRef(value));
    PyException_SetCause(new_value, value);  // steals value
    Py_XDECREF(type);
    Py_XDECREF(traceback);
    PyErr_Restore(new_type, new_value, new_traceback);
    return -1;
  }
  return BytesLikeArg(frame, s, size, true, out);
}

bool IsContainer(PyObject* obj) {
  return PyList_Check(obj) || PyTuple_Check(obj) || PyDict_Check(obj);
}

// A container through the runtime's constructor global ("ffi.Array", "ffi.Map"). `source` is
// the caller's container: one holding containers is remembered for the call (see
// ArgFrame::converted); lists of scalars are cheap to convert again and are not.
int ContainerArg(ArgFrame* frame, PyObject* source, const char* global, PyObject* items, bool pairs,
                 TVMFFIAny* out, int depth) {
  if (depth >= kMaxDepth) {
    PyErr_Format(PyExc_ValueError, "%s: containers nested deeper than %d levels", ArgLabel(frame),
                 kMaxDepth);
    return -1;
  }
  TVMFFIObject* ctor = GetGlobal(global);
  if (ctor == nullptr) {
    PyErr_Format(PyExc_TypeError, "%s: the runtime has no global function '%s' to build it",
                 ArgLabel(frame), global);
    return -1;
  }
  frame->owned.push_back(ctor);
  const Py_ssize_t n = PyList_GET_SIZE(items);
  std::vector<TVMFFIAny> views(static_cast<size_t>(pairs ? 2 * n : n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = PyList_GET_ITEM(items, i);
    if (pairs) {
      if (ConvertArg(frame, PyTuple_GET_ITEM(item, 0), &views[2 * i], nullptr, depth + 1) != 0 ||
          ConvertArg(frame, PyTuple_GET_ITEM(item, 1), &views[2 * i + 1], nullptr, depth + 1) !=
              0) {
        return -1;
      }
    } else if (ConvertArg(frame, item, &views[i], nullptr, depth + 1) != 0) {
      return -1;
    }
  }
  if (CallHandle(ctor, global, views.data(), static_cast<int32_t>(views.size()), out) != 0) {
    return -1;
  }
  frame->owned.push_back(out->v_obj);
  bool nested = false;
  for (Py_ssize_t i = 0; i < n && !nested; ++i) {
    PyObject* item = PyList_GET_ITEM(items, i);
    nested = pairs ? IsContainer(PyTuple_GET_ITEM(item, 1)) : IsContainer(item);
  }
  if (nested) {
    if (frame->converted == nullptr) {
      frame->converted = new std::unordered_map<PyObject*, TVMFFIObject*>();
    }
    (*frame->converted)[source] = out->v_obj;  // the caller's structure keeps source alive
  }
  return 0;
}

// The array or map this call already made for `obj`: 1 (out set), else 0.
int FindConverted(ArgFrame* frame, PyObject* obj, TVMFFIAny* out) {
  if (frame->converted == nullptr) return 0;
  auto it = frame->converted->find(obj);
  if (it == frame->converted->end()) return 0;
  out->type_index = it->second->type_index;
  out->zero_padding = 0;
  out->v_obj = it->second;
  return 1;
}

int DeviceArg(int32_t type, int32_t id, TVMFFIAny* out) {
  SetPod(out, kTVMFFIDevice, 0);
  out->v_device.device_type = static_cast<DLDeviceType>(type);
  out->v_device.device_id = id;
  return 0;
}

int DTypeFromText(ArgFrame* frame, PyObject* obj, TVMFFIAny* out) {
  PyObject* text = PyObject_Str(obj);
  if (text == nullptr) return -1;
  Py_ssize_t size = 0;
  const char* s = PyUnicode_AsUTF8AndSize(text, &size);
  if (s != nullptr && size > 6 && std::strncmp(s, "torch.", 6) == 0) {
    s += 6;
    size -= 6;
  }
  SetPod(out, kTVMFFIDataType, 0);
  TVMFFIByteArray array{s, static_cast<size_t>(size)};
  int rc = s == nullptr ? -1 : TVMFFIDataTypeFromString(&array, &out->v_dtype);
  if (rc != 0 && s != nullptr) {
    TVMFFIObjectHandle error = nullptr;
    TVMFFIErrorMoveFromRaised(&error);
    DecRef(static_cast<TVMFFIObject*>(error));
    PyErr_Format(PyExc_ValueError, "%s: %R is not a dtype the runtime knows", ArgLabel(frame),
                 text);
  }
  Py_DECREF(text);
  return rc == 0 ? 0 : -1;
}

int IntAttr(PyObject* obj, const char* name, long long* out) {
  PyObject* v = PyObject_GetAttrString(obj, name);
  if (v == nullptr) return -1;
  *out = PyLong_AsLongLong(v);
  Py_DECREF(v);
  return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

int SlowArg(ArgFrame* frame, PyObject* obj, const TypeEntry* entry, TVMFFIAny* out, DLTensor* view,
            int depth);

// A CUDA tensor argument: the first one's device is current for the call, and the stream comes
// from the first producer that can say its current one (`api`; NULL for a __dlpack__ tensor).
void NoteTensorDevice(ArgFrame* frame, const DLDevice& device, const ExchangeApi* api) {
  if (device.device_type != kDLCUDA) return;
  if (frame->cuda_device < 0) frame->cuda_device = device.device_id;
  if (frame->stream_api == nullptr && api != nullptr && api->current_work_stream != nullptr) {
    frame->stream_api = api;
  }
}

// A tensor of a producer with the DLPack exchange API (torch): a stack DLTensor for a
// TensorView parameter, else a TensorObj of the pool.
inline int ExchangeApiArg(ArgFrame* frame, PyObject* obj, const TypeEntry* entry, TVMFFIAny* out,
                          DLTensor* view, int depth) {
  const ExchangeApi* api = entry->api;
  if (frame->tensor_api == nullptr && api->managed_tensor_to_py_object_no_sync != nullptr) {
    frame->tensor_api = api;
  }
  int rc;
  const bool as_view = depth == 0 && view != nullptr && frame->position > 0 &&
                       frame->position <= 64 &&
                       (frame->view_params >> (frame->position - 1) & 1) != 0 &&
                       api->dltensor_from_py_object_no_sync != nullptr;
  DLTensor* dl;
  if (as_view) {
    rc = api->dltensor_from_py_object_no_sync(obj, view);
    if (rc == 0 && !entry->torch_exact) rc = CheckProducerTensor(frame, obj, *view);
    out->type_index = kTVMFFIDLTensorPtr;
    out->zero_padding = 0;
    out->v_ptr = view;
    dl = view;
  } else {
    rc = TensorObjectArg(frame, api, obj, out);
    dl = rc == 0 ? CellOf<DLTensor>(out->v_obj) : nullptr;
  }
  if (rc != 0) return -1;
  if (entry->torch_tensor && CheckTorchBits(frame, obj, dl) != 0) return -1;
  NoteTensorDevice(frame, dl->device, api);
  return 0;
}

}  // namespace

const char* ArgLabel(const ArgFrame* frame) {
  thread_local char text[160];
  const char* name = frame->name_obj != nullptr ? PyUnicode_AsUTF8(frame->name_obj) : nullptr;
  if (name == nullptr) name = frame->name;
  if (frame->position <= 0) return name;
  PyOS_snprintf(text, sizeof(text), "%s() argument %d", name, frame->position);
  return text;
}

int ConvertArg(ArgFrame* frame, PyObject* obj, TVMFFIAny* out, DLTensor* view, int depth) {
  PyTypeObject* type = Py_TYPE(obj);
  if (g_last_type->type == type && g_last_type->kind == Kind::kExchangeApi) {
    return ExchangeApiArg(frame, obj, g_last_type, out, view, depth);
  }
  if (type == &PyLong_Type) return IntArg(frame, obj, out);
  if (type == &PyFloat_Type) {
    SetFloat(out, PyFloat_AS_DOUBLE(obj));
    return 0;
  }
  if (type == &PyBool_Type) {
    SetPod(out, kTVMFFIBool, obj == Py_True);
    return 0;
  }
  if (obj == Py_None) {
    SetPod(out, kTVMFFINone, 0);
    return 0;
  }
  if (type == &PyUnicode_Type) return StrArg(frame, obj, out);
  if (type == &PyBytes_Type) {
    return BytesLikeArg(frame, PyBytes_AS_STRING(obj), PyBytes_GET_SIZE(obj), false, out);
  }
  if (type == g_function_type) {
    auto* f = reinterpret_cast<FunctionObject*>(obj);
    if (f->handle == nullptr) {
      PyErr_Format(PyExc_ValueError, "%s: the Function is empty (no handle)", ArgLabel(frame));
      return -1;
    }
    out->type_index = kTVMFFIFunction;
    out->zero_padding = 0;
    out->v_obj = f->handle;
    return 0;
  }
  const TypeEntry* entry = LookupType(type);
  if (entry->kind == Kind::kExchangeApi) return ExchangeApiArg(frame, obj, entry, out, view, depth);
  return SlowArg(frame, obj, entry, out, view, depth);
}

namespace {

int SlowArg(ArgFrame* frame, PyObject* obj, const TypeEntry* entry, TVMFFIAny* out, DLTensor* view,
            int depth) {
  switch (entry->kind) {
    case Kind::kHandle: {
      TVMFFIObject* handle = WrapperHandle(obj);
      if (handle == nullptr && PyObject_TypeCheck(obj, g_object_type)) {
        PyErr_Format(PyExc_ValueError,
                     "%s: the %s object was never constructed (its __init__ did not call "
                     "__ffi_init__)",
                     ArgLabel(frame), _PyType_Name(Py_TYPE(obj)));
        return -1;
      }
      if (handle == nullptr) {
        PyErr_Format(PyExc_ValueError, "%s: the %s is empty (no handle)", ArgLabel(frame),
                     Py_TYPE(obj)->tp_name);
        return -1;
      }
      out->type_index = handle->type_index;
      out->zero_padding = 0;
      out->v_obj = handle;
      return 0;
    }
    case Kind::kInt: {
      PyObject* index = PyNumber_Index(obj);
      if (index == nullptr) return -1;
      const int rc = IntArg(frame, index, out);
      Py_DECREF(index);
      return rc;
    }
    case Kind::kFloat: {
      const double v = PyFloat_AsDouble(obj);
      if (v == -1.0 && PyErr_Occurred()) return -1;
      SetFloat(out, v);
      return 0;
    }
    case Kind::kStr:
      return StrArg(frame, obj, out);
    case Kind::kDTypeStr: {
      long long code, bits, lanes;
      if (IntAttr(obj, "type_code", &code) != 0 || IntAttr(obj, "bits", &bits) != 0 ||
          IntAttr(obj, "lanes", &lanes) != 0) {
        return -1;
      }
      SetDataType(out, code, bits, lanes);
      return 0;
    }
    case Kind::kBytes:
      return BytesLikeArg(frame, PyBytes_AS_STRING(obj), PyBytes_GET_SIZE(obj), false, out);
    case Kind::kByteArray:
      return BytesLikeArg(frame, PyByteArray_AS_STRING(obj), PyByteArray_GET_SIZE(obj), false, out);
    case Kind::kSequence: {
      if (FindConverted(frame, obj, out)) return 0;
      PyObject* items = PySequence_List(obj);  // a snapshot: conversion may run Python code
      if (items == nullptr) return -1;
      frame->keep.push_back(items);
      return ContainerArg(frame, obj, "ffi.Array", items, false, out, depth);
    }
    case Kind::kMapping: {
      if (FindConverted(frame, obj, out)) return 0;
      PyObject* items = PyDict_Items(obj);
      if (items == nullptr) return -1;
      frame->keep.push_back(items);
      return ContainerArg(frame, obj, "ffi.Map", items, true, out, depth);
    }
    case Kind::kExchangeApi:  // handled by the caller
    case Kind::kDLPack: {
      if (entry->torch_tensor && CheckTorchBitsBeforeExport(frame, obj) != 0) return -1;
      if (TensorObjectArg(frame, nullptr, obj, out) != 0) return -1;
      NoteTensorDevice(frame, CellOf<DLTensor>(out->v_obj)->device, nullptr);  // CuPy, JAX
      return 0;
    }
    case Kind::kObjectProtocol: {
      PyObject* inner = PyObject_CallMethod(obj, "__tvm_ffi_object__", nullptr);
      if (inner == nullptr) return -1;
      frame->keep.push_back(inner);
      if (WrapperHandle(inner) == nullptr) {
        PyErr_Format(PyExc_TypeError,
                     "%s: %s.__tvm_ffi_object__() returned %s, not a tvm-ffi object",
                     ArgLabel(frame), Py_TYPE(obj)->tp_name, Py_TYPE(inner)->tp_name);
        return -1;
      }
      return ConvertArg(frame, inner, out, view, depth);
    }
    case Kind::kFrameworkDType:
      return DTypeFromText(frame, obj, out);
    case Kind::kTorchDevice: {
      PyObject* kind = PyObject_GetAttrString(obj, "type");
      PyObject* index = kind != nullptr ? PyObject_GetAttrString(obj, "index") : nullptr;
      if (index == nullptr) {
        Py_XDECREF(kind);
        return -1;
      }
      const char* name = PyUnicode_AsUTF8(kind);
      int32_t type = -1;
      if (name != nullptr && std::strcmp(name, "cpu") == 0) type = kDLCPU;
      if (name != nullptr && std::strcmp(name, "cuda") == 0) type = kDLCUDA;
      const long id = index == Py_None ? 0 : PyLong_AsLong(index);
      Py_DECREF(kind);
      Py_DECREF(index);
      if (PyErr_Occurred()) return -1;
      if (type < 0) {
        PyErr_Format(PyExc_ValueError, "%s: torch device %R has no DLPack type", ArgLabel(frame),
                     obj);
        return -1;
      }
      return DeviceArg(type, static_cast<int32_t>(id), out);
    }
    case Kind::kDLDevice: {
      PyObject* pair = PyObject_CallMethod(obj, "__dlpack_device__", nullptr);
      if (pair == nullptr) return -1;
      int type = 0, id = 0;
      const int ok = PyArg_ParseTuple(pair, "ii", &type, &id);
      Py_DECREF(pair);
      if (!ok) return -1;
      return DeviceArg(type, id, out);
    }
    case Kind::kOpaquePtr: {
      PyObject* value = PyObject_GetAttrString(obj, "value");
      if (value == nullptr) return -1;
      void* ptr = value == Py_None ? nullptr : PyLong_AsVoidPtr(value);
      Py_DECREF(value);
      if (PyErr_Occurred()) return -1;
      SetPointer(out, ptr);
      return 0;
    }
    case Kind::kCudaStream:
    case Kind::kOpaquePtrProtocol:
    case Kind::kDLPackDataType:
    case Kind::kIntProtocol:
    case Kind::kFloatProtocol:
    case Kind::kValueProtocol:
      return ProtocolArg(frame, entry->kind, obj, out, view, depth);
    case Kind::kCallable: {
      TVMFFIObject* func = FunctionFromCallable(obj);
      if (func == nullptr) return -1;
      frame->owned.push_back(func);
      out->type_index = kTVMFFIFunction;
      out->zero_padding = 0;
      out->v_obj = func;
      return 0;
    }
    case Kind::kOpaque: {
      // Any other object travels as itself (ffi.OpaquePyObject, as apache's Python passes it):
      // an Any parameter can keep it and give it back; a typed one refuses it by name.
      TVMFFIObject* opaque = OpaqueFromPython(obj);
      if (opaque == nullptr) return -1;
      frame->owned.push_back(opaque);
      out->type_index = kTVMFFIOpaquePyObject;
      out->zero_padding = 0;
      out->v_obj = opaque;
      return 0;
    }
  }
  return 0;
}

}  // namespace

void ArgFrame::Release() {
  delete converted;  // borrowed entries: `owned` holds the arrays
  converted = nullptr;
  if (owned.size() == 0 && tensors.size() == 0 && keep.size() == 0) return;
  // Deleters may run Python code, which must not start with an error pending.
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  const bool pending = PyErr_Occurred() != nullptr;
  if (pending) PyErr_Fetch(&type, &value, &traceback);
  // Containers first: an array made for this call holds its tensors until it goes.
  for (int i = 0; i < owned.size(); ++i) TVMFFIObjectDecRef(owned[i]);
  for (int i = 0; i < tensors.size(); ++i) {
    FinishPooledTensor(tensors[i], tensor_sources[i], tensor_producers[i]);
  }
  for (int i = 0; i < keep.size(); ++i) Py_DECREF(keep[i]);
  tensors.clear();
  tensor_sources.clear();
  dlpack_tensors.clear();
  dlpack_sources.clear();
  tensor_producers.clear();
  owned.clear();
  keep.clear();
  if (pending) PyErr_Restore(type, value, traceback);
}

}  // namespace tvm_ffi_next
