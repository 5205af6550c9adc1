// Classification of argument types, cached per type (see arg_types.h).
#include "arg_types.h"

namespace tvm_ffi_next {
namespace {

constexpr int kCacheSize = 16;
TypeEntry g_cache[kCacheSize];
int g_cache_next = 0;

bool HasAttr(PyTypeObject* type, const char* name) {
  PyObject* attr = PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), name);
  if (attr == nullptr) {
    PyErr_Clear();
    return false;
  }
  Py_DECREF(attr);
  return true;
}

bool DerivesFromName(PyTypeObject* type, const char* name) {
  for (PyTypeObject* t = type; t != nullptr; t = t->tp_base) {
    if (std::strcmp(t->tp_name, name) == 0) return true;
  }
  return false;
}

bool IsCtypesVoidP(PyTypeObject* type) {
  PyObject* name = PyUnicode_FromString("ctypes");
  PyObject* ctypes = name != nullptr ? PyImport_GetModule(name) : nullptr;  // never import it
  Py_XDECREF(name);
  bool match = false;
  if (ctypes != nullptr) {
    PyObject* void_p = PyObject_GetAttrString(ctypes, "c_void_p");
    match = void_p != nullptr && PyType_Check(void_p) &&
            PyType_IsSubtype(type, reinterpret_cast<PyTypeObject*>(void_p));
    Py_XDECREF(void_p);
    Py_DECREF(ctypes);
  }
  PyErr_Clear();
  return match;
}

const ExchangeApi* FindExchangeApi(PyTypeObject* type) {
  PyObject* capsule =
      PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), "__dlpack_c_exchange_api__");
  if (capsule == nullptr) {
    PyErr_Clear();
    return nullptr;
  }
  const ExchangeApiHeader* header = nullptr;
  if (PyCapsule_IsValid(capsule, "dlpack_exchange_api")) {
    header = static_cast<ExchangeApiHeader*>(PyCapsule_GetPointer(capsule, "dlpack_exchange_api"));
    while (header != nullptr && header->version.major != 1) header = header->prev_api;
  }
  Py_DECREF(capsule);  // the table is static for the process, by the protocol
  return reinterpret_cast<const ExchangeApi*>(header);
}

Kind Classify(PyTypeObject* type, const ExchangeApi** api) {
  *api = nullptr;
  if (PyType_IsSubtype(type, g_function_type) || PyType_IsSubtype(type, g_object_type)) {
    return Kind::kHandle;
  }
  if (PyType_IsSubtype(type, &PyLong_Type)) return Kind::kInt;
  if (PyType_IsSubtype(type, &PyFloat_Type)) return Kind::kFloat;
  if (PyType_IsSubtype(type, &PyUnicode_Type)) {
    const bool dtype =
        HasAttr(type, "type_code") && HasAttr(type, "bits") && HasAttr(type, "lanes");
    return dtype ? Kind::kDTypeStr : Kind::kStr;
  }
  if (PyType_IsSubtype(type, &PyBytes_Type)) return Kind::kBytes;
  if (PyType_IsSubtype(type, &PyByteArray_Type)) return Kind::kByteArray;
  // Before sequences: tvm_ffi.Device is a tuple subclass (device_type, index), yet a device.
  if (type != &PyTuple_Type && PyType_IsSubtype(type, &PyTuple_Type) &&
      HasAttr(type, "__dlpack_device__")) {
    return Kind::kDLDevice;
  }
  if (PyType_IsSubtype(type, &PyList_Type) || PyType_IsSubtype(type, &PyTuple_Type)) {
    return Kind::kSequence;
  }
  if (PyType_IsSubtype(type, &PyDict_Type)) return Kind::kMapping;
  if ((*api = FindExchangeApi(type)) != nullptr) return Kind::kExchangeApi;
  // Before __dlpack__, as apache-tvm-ffi's order has it.
  if (HasAttr(type, "__cuda_stream__") || DerivesFromName(type, "cuda.bindings.driver.CUstream")) {
    return Kind::kCudaStream;
  }
  if (HasAttr(type, "__dlpack__")) return Kind::kDLPack;
  if (HasAttr(type, "__tvm_ffi_object__")) return Kind::kObjectProtocol;
  if (DerivesFromName(type, "torch.dtype") || DerivesFromName(type, "numpy.dtype")) {
    return Kind::kFrameworkDType;
  }
  if (DerivesFromName(type, "torch.device")) return Kind::kTorchDevice;
  if (HasAttr(type, "__dlpack_data_type__")) return Kind::kDLPackDataType;
  if (HasAttr(type, "__dlpack_device__")) return Kind::kDLDevice;
  if (IsCtypesVoidP(type)) return Kind::kOpaquePtr;
  if (HasAttr(type, "__tvm_ffi_opaque_ptr__")) return Kind::kOpaquePtrProtocol;
  if (HasAttr(type, "__tvm_ffi_int__")) return Kind::kIntProtocol;
  if (HasAttr(type, "__tvm_ffi_float__")) return Kind::kFloatProtocol;
  if (HasAttr(type, "__tvm_ffi_value__")) return Kind::kValueProtocol;
  if (type->tp_as_number != nullptr && type->tp_as_number->nb_index != nullptr) return Kind::kInt;
  if (type->tp_as_number != nullptr && type->tp_as_number->nb_float != nullptr) {
    return Kind::kFloat;
  }
  if (type->tp_call != nullptr) return Kind::kCallable;
  return Kind::kOpaque;
}

// torch.Tensor.is_conj / is_neg, unbound (called with the tensor alone), cached on the first
// torch tensor type seen.
PyObject* g_torch_is_conj = nullptr;
PyObject* g_torch_is_neg = nullptr;

// Whether `type` is torch.Tensor or a subclass (torch imported already: never imports it);
// *exact: torch.Tensor itself.
bool IsTorchTensorType(PyTypeObject* type, bool* exact) {
  PyObject* name = PyUnicode_FromString("torch");
  PyObject* torch = name != nullptr ? PyImport_GetModule(name) : nullptr;  // never import it
  Py_XDECREF(name);
  PyObject* tensor = torch != nullptr ? PyObject_GetAttrString(torch, "Tensor") : nullptr;
  Py_XDECREF(torch);
  bool match = tensor != nullptr && PyType_Check(tensor) &&
               PyType_IsSubtype(type, reinterpret_cast<PyTypeObject*>(tensor));
  if (match && g_torch_is_neg == nullptr) {
    g_torch_is_conj = PyObject_GetAttrString(tensor, "is_conj");
    g_torch_is_neg = PyObject_GetAttrString(tensor, "is_neg");
    if (g_torch_is_conj == nullptr || g_torch_is_neg == nullptr) {
      Py_CLEAR(g_torch_is_conj);
      Py_CLEAR(g_torch_is_neg);
      match = false;
    }
  }
  *exact = match && tensor == reinterpret_cast<PyObject*>(type);
  Py_XDECREF(tensor);
  PyErr_Clear();
  return match;
}

// 1 if torch's query answers True, 0 if False, -1 with an error set.
int TorchQuery(PyObject* method, PyObject* obj) {
  PyObject* answer = PyObject_Vectorcall(method, &obj, 1, nullptr);
  if (answer == nullptr) return -1;
  const int truth = PyObject_IsTrue(answer);
  Py_DECREF(answer);
  return truth;
}

// Whether a real tensor can be torch's lazy `.imag` of a conjugate (the negative bit): that view
// steps over complex numbers, so each stride of a dimension longer than 1 is even. Most tensors
// (any contiguous one) are answered here without asking torch, which costs more than a call.
bool MayBeNegativeView(const DLTensor& t) {
  int64_t numel = 1;
  for (int32_t d = 0; d < t.ndim; ++d) numel *= t.shape[d];
  if (numel <= 1) return numel == 1;
  if (t.strides == nullptr) return false;
  for (int32_t d = 0; d < t.ndim; ++d) {
    if (t.shape[d] > 1 && t.strides[d] % 2 != 0) return false;
  }
  return true;
}

}  // namespace

int CheckTorchBits(const ArgFrame* frame, PyObject* obj, const DLTensor* exported) {
  const bool complex = exported->dtype.code == kDLComplex;
  if (!complex && !MayBeNegativeView(*exported)) return 0;
  if (complex) {
    const int conj = TorchQuery(g_torch_is_conj, obj);
    if (conj > 0) {
      PyErr_Format(PyExc_BufferError,
                   "%s: can't pass a torch tensor with the conjugate bit set; pass "
                   "tensor.resolve_conj()",
                   ArgLabel(frame));
    }
    if (conj != 0) return -1;
  }
  const int neg = TorchQuery(g_torch_is_neg, obj);
  if (neg > 0) {
    PyErr_Format(PyExc_BufferError,
                 "%s: can't pass a torch tensor with the negative bit set; pass "
                 "tensor.resolve_neg()",
                 ArgLabel(frame));
  }
  return neg != 0 ? -1 : 0;
}

int CheckTorchBitsBeforeExport(const ArgFrame* frame, PyObject* obj) {
  DLTensor complex_any{};
  complex_any.dtype.code = kDLComplex;  // asks both bits
  return CheckTorchBits(frame, obj, &complex_any);
}

const TypeEntry* g_last_type = &g_cache[0];

const TypeEntry* LookupType(PyTypeObject* type) {
  if (g_last_type->type == type) return g_last_type;
  for (int i = 0; i < kCacheSize; ++i) {
    if (g_cache[i].type == type) {
      g_last_type = &g_cache[i];
      return g_last_type;
    }
  }
  TypeEntry entry{type, Kind::kOpaque, nullptr, false, false};
  entry.kind = Classify(type, &entry.api);
  entry.torch_tensor = (entry.kind == Kind::kExchangeApi || entry.kind == Kind::kDLPack) &&
                       IsTorchTensorType(type, &entry.torch_exact);
  const int slot = g_cache_next;
  g_cache_next = (g_cache_next + 1) % kCacheSize;
  PyTypeObject* evicted = g_cache[slot].type;
  Py_INCREF(type);
  g_cache[slot] = entry;
  g_last_type = &g_cache[slot];
  Py_XDECREF(evicted);
  return g_last_type;
}

}  // namespace tvm_ffi_next
