// The slow half of argument conversion, reached once per Python type (classification) or
// per call only for producers without the DLPack C exchange API; and the stream callback.
#include <cstring>
#include <atomic>
#include <vector>

#include "call_frame.h"
#include "function.h"
#include "type_cache.h"

namespace tvm_ffi_py {

TypeCache g_type_cache;
const ExchangeApi* g_last_exchange_api = nullptr;
PyTypeObject* g_dtype_class = nullptr;  // set by dtype.cc's _set_dtype_class

namespace {

// Interned names and constant arguments, created on first use (the GIL serialises this).
PyObject* Interned(const char* s, PyObject** slot) {
  if (*slot == nullptr) *slot = PyUnicode_InternFromString(s);
  return *slot;
}
PyObject* g_str_exchange_api = nullptr;
PyObject* g_str_dlpack = nullptr;
PyObject* g_str_value = nullptr;
PyObject* g_max_version_kwnames = nullptr;  // ("max_version",)
PyObject* g_max_version = nullptr;          // (1, 1): the newest DLPack we consume
// torch.Tensor.is_conj / is_neg, unbound: called with the tensor as the only argument,
// which skips building a bound method per call.
PyObject* g_torch_is_conj = nullptr;
PyObject* g_torch_is_neg = nullptr;

// The exchange table of `type` for major version 1, walking older tables if the producer
// is newer. Returns 0 (api may be NULL: none usable) or -1 with an error set.
int FindExchangeApi(PyTypeObject* type, const ExchangeApi** api) {
  *api = nullptr;
  PyObject* name = Interned("__dlpack_c_exchange_api__", &g_str_exchange_api);
  if (name == nullptr) return -1;
  PyObject* capsule = PyObject_GetAttr(reinterpret_cast<PyObject*>(type), name);
  if (capsule == nullptr) {
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
    PyErr_Clear();
    return 0;
  }
  if (PyCapsule_IsValid(capsule, kExchangeApiCapsuleName)) {
    auto* header =
        static_cast<ExchangeApiHeader*>(PyCapsule_GetPointer(capsule, kExchangeApiCapsuleName));
    while (header != nullptr && header->version.major != kExchangeApiMajor) {
      header = header->prev_api;
    }
    // The table is static for the life of the process (a requirement of the protocol);
    // we also keep the type alive in the cache.
    *api = reinterpret_cast<const ExchangeApi*>(header);
  }
  Py_DECREF(capsule);
  return 0;
}

bool HasAttr(PyTypeObject* type, PyObject* name) {
  PyObject* attr = PyObject_GetAttr(reinterpret_cast<PyObject*>(type), name);
  if (attr == nullptr) {
    PyErr_Clear();
    return false;
  }
  Py_DECREF(attr);
  return true;
}

// A module imported by the caller, or NULL (no error) when it is not imported yet.
PyObject* ImportedModule(const char* module_name) {
  PyObject* name = PyUnicode_FromString(module_name);
  if (name == nullptr) {
    PyErr_Clear();
    return nullptr;
  }
  PyObject* module = PyImport_GetModule(name);
  Py_DECREF(name);
  if (module == nullptr) PyErr_Clear();
  return module;
}

bool IsCtypesVoidP(PyTypeObject* type) {
  // Not imported means no c_void_p can exist yet; never import ctypes ourselves.
  PyObject* ctypes = ImportedModule("ctypes");
  if (ctypes == nullptr) return false;
  PyObject* void_p = PyObject_GetAttrString(ctypes, "c_void_p");
  Py_DECREF(ctypes);
  bool match = void_p != nullptr && PyType_Check(void_p) &&
               PyType_IsSubtype(type, reinterpret_cast<PyTypeObject*>(void_p));
  Py_XDECREF(void_p);
  PyErr_Clear();
  return match;
}

void ReleaseVersioned(void* p) {
  auto* mt = static_cast<DLManagedTensorVersioned*>(p);
  if (mt->deleter != nullptr) mt->deleter(mt);
}

void ReleaseLegacy(void* p) {
  auto* mt = static_cast<DLManagedTensor*>(p);
  if (mt->deleter != nullptr) mt->deleter(mt);
}

// Whether `type` is torch.Tensor or a subclass; caches torch's is_conj/is_neg on the first
// yes. Any trouble (no torch, no such methods) answers no.
// A type named `name` or derived from one: torch's dtype and device, numpy's dtype classes
// (numpy.dtypes.Float32DType derives from numpy.dtype), without importing either package.
bool IsOrDerivesFrom(PyTypeObject* type, const char* name) {
  for (PyTypeObject* t = type; t != nullptr; t = t->tp_base) {
    if (std::strcmp(t->tp_name, name) == 0) return true;
  }
  return false;
}

bool IsTorchTensorType(PyTypeObject* type) {
  PyObject* torch = ImportedModule("torch");  // an instance exists, so torch is imported
  if (torch == nullptr) return false;
  PyObject* tensor_type = PyObject_GetAttrString(torch, "Tensor");
  Py_DECREF(torch);
  bool match = tensor_type != nullptr && PyType_Check(tensor_type) &&
               PyType_IsSubtype(type, reinterpret_cast<PyTypeObject*>(tensor_type));
  if (match && g_torch_is_neg == nullptr) {
    g_torch_is_conj = PyObject_GetAttrString(tensor_type, "is_conj");
    g_torch_is_neg = PyObject_GetAttrString(tensor_type, "is_neg");
    if (g_torch_is_conj == nullptr || g_torch_is_neg == nullptr) {
      Py_CLEAR(g_torch_is_conj);
      Py_CLEAR(g_torch_is_neg);
      match = false;
    }
  }
  Py_XDECREF(tensor_type);
  PyErr_Clear();
  return match;
}

// 1 if torch's query `method` answers True for obj, 0 if False, -1 with an error set.
int TorchQuery(PyObject* method, PyObject* obj) {
  PyObject* answer = PyObject_Vectorcall(method, &obj, 1, nullptr);
  if (answer == nullptr) return -1;
  int truth = PyObject_IsTrue(answer);
  Py_DECREF(answer);
  return truth;
}

const ExchangeApi* DiscoverTorchApi() {
  PyObject* torch = ImportedModule("torch");  // only if the caller imported torch
  if (torch == nullptr) return nullptr;
  PyObject* tensor_type = PyObject_GetAttrString(torch, "Tensor");
  Py_DECREF(torch);
  const ExchangeApi* api = nullptr;
  if (tensor_type != nullptr && PyType_Check(tensor_type)) {
    const TypeInfo* info = LookupType(reinterpret_cast<PyTypeObject*>(tensor_type));
    if (info != nullptr && info->kind == ArgKind::kExchangeApi) api = info->api;
  }
  Py_XDECREF(tensor_type);
  PyErr_Clear();
  return api;
}

}  // namespace

const TypeInfo* ClassifyType(PyTypeObject* type) {
  TypeInfo info{type, ArgKind::kUnsupported, nullptr};
  PyObject* dlpack_name = Interned("__dlpack__", &g_str_dlpack);
  if (dlpack_name == nullptr) return nullptr;
  if (g_dtype_class != nullptr && PyType_IsSubtype(type, g_dtype_class)) {
    info.kind = ArgKind::kDType;  // before str, which it derives from
  } else if (PyType_IsSubtype(type, &PyLong_Type)) {
    info.kind = ArgKind::kInt;
  } else if (PyType_IsSubtype(type, &PyFloat_Type)) {
    info.kind = ArgKind::kFloat;
  } else if (PyType_IsSubtype(type, &PyUnicode_Type)) {
    info.kind = ArgKind::kStr;
  } else if (PyType_IsSubtype(type, &PyBytes_Type)) {
    info.kind = ArgKind::kBytes;
  } else if (PyType_IsSubtype(type, &PyByteArray_Type)) {
    info.kind = ArgKind::kByteArray;
  } else if (PyType_IsSubtype(type, &PyList_Type) || PyType_IsSubtype(type, &PyTuple_Type)) {
    info.kind = ArgKind::kSequence;
  } else if (PyType_IsSubtype(type, &PyDict_Type)) {
    info.kind = ArgKind::kMapping;
  } else {
    if (FindExchangeApi(type, &info.api) != 0) return nullptr;
    if (info.api != nullptr) {
      info.kind = ArgKind::kExchangeApi;
      g_last_exchange_api = info.api;
    } else if (HasAttr(type, dlpack_name)) {
      info.kind = ArgKind::kDLPack;
    }
    if (info.kind == ArgKind::kExchangeApi || info.kind == ArgKind::kDLPack) {
      info.torch_tensor = IsTorchTensorType(type);
    } else if (IsCtypesVoidP(type)) {
      info.kind = ArgKind::kOpaquePtr;
    } else if (IsOrDerivesFrom(type, "torch.dtype") || IsOrDerivesFrom(type, "numpy.dtype")) {
      info.kind = ArgKind::kDType;
    } else if (IsOrDerivesFrom(type, "torch.device")) {
      info.kind = ArgKind::kDevice;
    } else if (type->tp_as_number != nullptr && type->tp_as_number->nb_index != nullptr) {
      info.kind = ArgKind::kInt;  // numpy integer scalars
    } else if (type->tp_as_number != nullptr && type->tp_as_number->nb_float != nullptr) {
      info.kind = ArgKind::kFloat;  // numpy.float32 and friends
    }
  }
  TypeCache& c = g_type_cache;
  const int slot = c.next;
  c.next = (c.next + 1) % kTypeCacheSize;
  PyTypeObject* evicted = c.entries[slot].type;
  Py_INCREF(type);
  c.entries[slot] = info;
  c.last = slot;
  Py_XDECREF(evicted);
  return &c.entries[slot];
}

int TensorFromManagedExchange(CallFrame* frame, const ExchangeApi* api, PyObject* obj,
                              DLTensor** out, bool* read_only) {
  DLManagedTensorVersioned* mt = nullptr;
  if (api->managed_tensor_from_py_object_no_sync(obj, &mt) != 0) return -1;
  frame->cleanups.push_back(Cleanup{ReleaseVersioned, mt, nullptr});
  *out = &mt->dl_tensor;
  *read_only = (mt->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
  return 0;
}

int TensorFromDLPackProtocol(CallFrame* frame, PyObject* obj, DLTensor** out, bool* read_only) {
  if (g_max_version == nullptr) {
    g_max_version = Py_BuildValue("(ii)", 1, 1);
    g_max_version_kwnames = Py_BuildValue("(s)", "max_version");
    if (g_max_version == nullptr || g_max_version_kwnames == nullptr) return -1;
  }
  PyObject* name = Interned("__dlpack__", &g_str_dlpack);
  if (name == nullptr) return -1;
  PyObject* call_args[2] = {obj, g_max_version};
  PyObject* capsule = PyObject_VectorcallMethod(name, call_args, 1, g_max_version_kwnames);
  if (capsule == nullptr && PyErr_ExceptionMatches(PyExc_TypeError)) {
    // A pre-1.0 producer: no max_version keyword, answers with an unversioned capsule.
    PyErr_Clear();
    capsule = PyObject_VectorcallMethod(name, call_args, 1, nullptr);
  }
  if (capsule == nullptr) return -1;
  if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
    auto* mt =
        static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(capsule, "dltensor_versioned"));
    if (mt->version.major != 1) {
      // Still named "dltensor_versioned": the capsule's destructor calls the deleter.
      PyErr_Format(PyExc_BufferError,
                   "%s() argument %d: %s.__dlpack__ returned DLPack %u.%u; only 1.x is "
                   "supported",
                   frame->func->name, frame->position, Py_TYPE(obj)->tp_name, mt->version.major,
                   mt->version.minor);
      Py_DECREF(capsule);
      return -1;
    }
    PyCapsule_SetName(capsule, "used_dltensor_versioned");  // we own it now
    frame->cleanups.push_back(Cleanup{ReleaseVersioned, mt, capsule});
    *out = &mt->dl_tensor;
    *read_only = (mt->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
    return 0;
  }
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto* mt = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
    PyCapsule_SetName(capsule, "used_dltensor");
    frame->cleanups.push_back(Cleanup{ReleaseLegacy, mt, capsule});
    *out = &mt->dl_tensor;
    return 0;
  }
  PyErr_Format(
      PyExc_TypeError, "%s() argument %d: %s.__dlpack__() returned %s, not a DLPack capsule",
      frame->func->name, frame->position, Py_TYPE(obj)->tp_name, Py_TYPE(capsule)->tp_name);
  Py_DECREF(capsule);
  return -1;
}

namespace {

// Whether a real tensor can be torch's lazy `.imag` of a conjugate (the negative bit): that
// view steps over complex numbers, so each of its strides is even in its own elements
// (dimensions of size 1 say nothing). A tensor with an odd stride (a contiguous one, say) is
// answered here, without asking torch: is_neg() costs more than the rest of a call.
// Blind spot: the private torch._neg_view and as_strided on a negative view can make
// odd strides; no public operation does.
bool MayBeNegativeView(const DLTensor& t) {
  int64_t numel = 1;
  for (int32_t d = 0; d < t.ndim; ++d) numel *= t.shape[d];
  if (numel <= 1) return numel == 1;  // nothing to read in an empty tensor
  if (t.strides == nullptr) return false;  // compact: the innermost long dimension has stride 1
  for (int32_t d = 0; d < t.ndim; ++d) {
    if (t.shape[d] > 1 && t.strides[d] % 2 != 0) return false;
  }
  return true;
}

}  // namespace

int CheckTorchBits(CallFrame* frame, PyObject* obj, const DLTensor* exported) {
  const bool complex = exported == nullptr || exported->dtype.code == kDLComplex;
  if (!complex && !MayBeNegativeView(*exported)) return 0;
  // Only complex tensors can carry the conjugate bit (torch ignores conj() on real ones).
  if (complex) {
    int conj = TorchQuery(g_torch_is_conj, obj);
    if (conj != 0) {
      if (conj > 0) {
        PyErr_Format(PyExc_BufferError,
                     "%s() argument %d: can't pass a torch tensor with the conjugate bit set; "
                     "pass tensor.resolve_conj()",
                     frame->func->name, frame->position);
      }
      return -1;
    }
  }
  // Real dtypes too: z.conj().imag is a float tensor with the negative bit.
  int neg = TorchQuery(g_torch_is_neg, obj);
  if (neg != 0) {
    if (neg > 0) {
      PyErr_Format(PyExc_BufferError,
                   "%s() argument %d: can't pass a torch tensor with the negative bit set; "
                   "pass tensor.resolve_neg()",
                   frame->func->name, frame->position);
    }
    return -1;
  }
  return 0;
}

int ExportTensorArg(CallFrame* frame, const TypeInfo* info, PyObject* obj, DLTensor* slot,
                    DLTensor** out, bool* read_only) {
  if (info->kind != ArgKind::kExchangeApi) {
    // Asked before the export: __dlpack__ would refuse the conjugate bit less clearly.
    if (info->torch_tensor && CheckTorchBits(frame, obj, nullptr) != 0) return -1;
    return TensorFromDLPackProtocol(frame, obj, out, read_only);
  }
  const ExchangeApi* api = info->api;
  if (api->dltensor_from_py_object_no_sync != nullptr) {
    if (slot == nullptr) {
      frame->nested_tensors.emplace_back(new DLTensor);
      slot = frame->nested_tensors.back().get();
    }
    if (api->dltensor_from_py_object_no_sync(obj, slot) != 0) return -1;
    *out = slot;
  } else if (TensorFromManagedExchange(frame, api, obj, out, read_only) != 0) {
    return -1;
  }
  return info->torch_tensor ? CheckTorchBits(frame, obj, *out) : 0;
}

int OpaquePtrFromCtypes(PyObject* obj, void** out) {
  PyObject* name = Interned("value", &g_str_value);
  if (name == nullptr) return -1;
  PyObject* value = PyObject_GetAttr(obj, name);
  if (value == nullptr) return -1;
  *out = value == Py_None ? nullptr : PyLong_AsVoidPtr(value);
  Py_DECREF(value);
  return PyErr_Occurred() ? -1 : 0;
}

std::vector<RawStreamOverride>& RawStreamOverrides() {
  // Per thread, like torch's current stream; a handful of entries at most.
  static thread_local std::vector<RawStreamOverride> overrides;
  return overrides;
}

std::atomic<int> g_raw_stream_overrides{0};

const RawStreamOverride* FindRawStreamOverride(int32_t device_type, int32_t device_id) {
  // Every launch asks for its stream: without any use_raw_stream in the process, skip the
  // thread-local lookup.
  if (g_raw_stream_overrides.load(std::memory_order_relaxed) == 0) return nullptr;
  const std::vector<RawStreamOverride>& overrides = RawStreamOverrides();
  for (size_t i = overrides.size(); i-- > 0;) {
    if (overrides[i].device_type == device_type && overrides[i].device_id == device_id) {
      return &overrides[i];
    }
  }
  return nullptr;
}

int FrameworkStream(const ExchangeApi* api, int32_t device_type, int32_t device_id,
                    void** stream) {
  *stream = nullptr;
  if (api == nullptr) api = g_last_exchange_api;
  if (api == nullptr) api = DiscoverTorchApi();
  if (api == nullptr || api->current_work_stream == nullptr) return 0;
  return api->current_work_stream(static_cast<DLDeviceType>(device_type), device_id, stream);
}

void* GetStreamForCall(void* handle, int32_t device_type, int32_t device_id) {
  auto* frame = static_cast<CallFrame*>(handle);
  if (frame->stream_error) return nullptr;
  // A NULL (default) stream carries no device, and a launch on it goes to the current
  // context: asking for device d's stream makes d current for the rest of the call, so a
  // wrapper that handles tensors of several devices launches each on its own device.
  if (device_type == kDLCUDA && frame->guard != nullptr && !frame->guard->Enter(device_id, false)) {
    frame->stream_error = true;
    return nullptr;
  }
  if (const RawStreamOverride* o = FindRawStreamOverride(device_type, device_id)) {
    return o->stream;  // tvm_ffi.use_raw_stream
  }
  void* stream = nullptr;
  if (FrameworkStream(frame->stream_api, device_type, device_id, &stream) != 0) {
    frame->stream_error = true;  // raised by FinishCall once the callee returns
    return nullptr;
  }
  return stream;
}

}  // namespace tvm_ffi_py
