// tvm_ffi.Function and the hot path of a call: Python arguments -> TVMFFIAny on the stack
// -> entry -> result. No allocation, dict lookup or Python-level call for arguments that
// are builtin scalars, strings or tensors with the DLPack C exchange API.
#include "function.h"

#include <tvm/ffi/base.h>

#include <structmember.h>

#include <cstddef>
#include <cstring>
#include <memory>

#include "call_frame.h"
#include "cuda_guard.h"
#include "dltensor_check.h"
#include "object.h"
#include "type_cache.h"

namespace tvm_ffi_py {
namespace {

// Arguments converted into stack arrays; more go to the heap.
constexpr Py_ssize_t kInlineArgs = 16;
// Deeper list/tuple nesting is rejected (it also stops self-containing lists).
constexpr int kMaxDepth = 32;

// "numpy.ndarray" -> "ndarray": the short name, as CPython's own messages print it.
const char* ShortTypeName(PyTypeObject* type) {
  const char* name = type->tp_name;
  const char* dot = std::strrchr(name, '.');
  return dot ? dot + 1 : name;
}

inline void SetInt(TVMFFIAny* out, int32_t code, int64_t v) {
  out->type_code = code;
  out->flags = 0;
  out->v_int64 = v;
  out->size = 0;
}

int ConvertArg(CallFrame* frame, PyObject* obj, TVMFFIAny* out, DLTensor* slot, int depth);

int IntArg(CallFrame* frame, PyObject* obj, TVMFFIAny* out) {
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
  if (overflow > 0) {
    // 2**63 .. 2**64-1 travel as their uint64 bits, flagged, for uint64_t parameters.
    unsigned long long u = PyLong_AsUnsignedLongLong(obj);
    if (!(u == static_cast<unsigned long long>(-1) && PyErr_Occurred())) {
      SetInt(out, kTVMFFIInt, static_cast<int64_t>(u));
      out->flags = TVM_FFI_INT_IS_UNSIGNED;
      return 0;
    }
    PyErr_Clear();
  }
  if (overflow != 0) {
    PyErr_Format(PyExc_OverflowError, "%s() argument %d: int does not fit in 64 bits",
                 frame->func->name, frame->position);
    return -1;
  }
  if (v == -1 && PyErr_Occurred()) return -1;
  SetInt(out, kTVMFFIInt, v);
  return 0;
}

int StrArg(CallFrame* frame, PyObject* obj, TVMFFIAny* out) {
  Py_ssize_t size = 0;
  // Cached inside the str object: no allocation for ASCII, one-time for others.
  const char* s = PyUnicode_AsUTF8AndSize(obj, &size);
  if (s == nullptr) {
    if (PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
      char name[160];
      PyOS_snprintf(name, sizeof(name), "%s() argument %d", frame->func->name, frame->position);
      RaiseFromCause(PyExc_ValueError, "%s: the str has no UTF-8 form (%S)", name);
    }
    return -1;
  }
  out->type_code = kTVMFFIStr;
  out->flags = 0;
  out->v_str = s;
  out->size = size;
  return 0;
}

void BytesArg(const char* data, Py_ssize_t size, TVMFFIAny* out) {
  out->type_code = kTVMFFIBytes;
  out->flags = 0;
  out->v_str = data;
  out->size = size;
}

// A container converted earlier in this call: its converted value is reused.
bool ConvertedBefore(CallFrame* frame, PyObject* container, TVMFFIAny* out) {
  if (frame->converted == nullptr) return false;
  auto found = frame->converted->find(container);
  if (found == frame->converted->end()) return false;
  *out = found->second;
  return true;
}

// Remembers a converted container when it holds containers: only sharing those can make
// the conversion cost grow with the number of paths (2**depth for x = [x, x]).
void RememberIfNested(CallFrame* frame, PyObject* container, const TVMFFIAny& value,
                      int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    const int32_t code = value.v_array[i].type_code;
    if (code == kTVMFFIArray || code == kTVMFFIMap) {
      if (frame->converted == nullptr) {
        frame->converted = std::make_unique<std::unordered_map<PyObject*, TVMFFIAny>>();
      }
      frame->converted->emplace(container, value);
      return;
    }
  }
}

int SequenceArg(CallFrame* frame, PyObject* seq, TVMFFIAny* out, int depth) {
  if (ConvertedBefore(frame, seq, out)) return 0;
  if (depth >= kMaxDepth) {
    PyErr_Format(PyExc_ValueError, "%s() argument %d: lists nested deeper than %d levels",
                 frame->func->name, frame->position, kMaxDepth);
    return -1;
  }
  const bool is_tuple = PyTuple_Check(seq);
  // A tuple snapshot: converting an element may run Python code (__dlpack__) that could
  // mutate a list under us.
  PyObject* items = is_tuple ? (Py_INCREF(seq), seq) : PySequence_Tuple(seq);
  if (items == nullptr) return -1;
  frame->cleanups.push_back(Cleanup{nullptr, nullptr, items});
  const Py_ssize_t n = PyTuple_GET_SIZE(items);
  TVMFFIAny* storage = nullptr;
  if (n > 0) {
    frame->arrays.emplace_back(new TVMFFIAny[n]);
    storage = frame->arrays.back().get();
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (ConvertArg(frame, PyTuple_GET_ITEM(items, i), &storage[i], nullptr, depth + 1) != 0) {
      return -1;
    }
  }
  out->type_code = kTVMFFIArray;
  out->flags = is_tuple ? TVM_FFI_ARRAY_IS_TUPLE : 0;
  out->v_array = storage;
  out->size = n;
  RememberIfNested(frame, seq, *out, n);
  return 0;
}

int MapArg(CallFrame* frame, PyObject* dict, TVMFFIAny* out, int depth) {
  if (ConvertedBefore(frame, dict, out)) return 0;
  if (depth >= kMaxDepth) {
    PyErr_Format(PyExc_ValueError, "%s() argument %d: containers nested deeper than %d levels",
                 frame->func->name, frame->position, kMaxDepth);
    return -1;
  }
  // A snapshot of the items, for the same reason as SequenceArg's.
  PyObject* items = PyDict_Check(dict) ? PyDict_Items(dict) : PyMapping_Items(dict);
  if (items == nullptr) return -1;
  frame->cleanups.push_back(Cleanup{nullptr, nullptr, items});
  const Py_ssize_t n = PyList_GET_SIZE(items);
  TVMFFIAny* storage = nullptr;
  if (n > 0) {
    frame->arrays.emplace_back(new TVMFFIAny[2 * n]);
    storage = frame->arrays.back().get();
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* pair = PyList_GET_ITEM(items, i);
    if (ConvertArg(frame, PyTuple_GET_ITEM(pair, 0), &storage[2 * i], nullptr, depth + 1) != 0 ||
        ConvertArg(frame, PyTuple_GET_ITEM(pair, 1), &storage[2 * i + 1], nullptr, depth + 1) !=
            0) {
      return -1;
    }
  }
  out->type_code = kTVMFFIMap;
  out->flags = 0;
  out->v_array = storage;
  out->size = n;
  RememberIfNested(frame, dict, *out, 2 * n);
  return 0;
}

int TensorArg(CallFrame* frame, const TypeInfo* info, PyObject* obj, TVMFFIAny* out,
              DLTensor* slot) {
  DLTensor* tensor = nullptr;
  bool read_only = false;
  if (ExportTensorArg(frame, info, obj, slot, &tensor, &read_only) != 0) return -1;
  // Callees index shape[0..ndim): a producer's bad fields must stop here.
  const DLTensorFault fault = CheckDLTensorShape(*tensor);
  if (TVM_FFI_UNLIKELY(fault.kind != DLTensorFault::kNone)) {
    PyErr_Format(PyExc_ValueError, "%s() argument %d: %s gave a DLTensor with %s",
                 frame->func->name, frame->position, ShortTypeName(Py_TYPE(obj)),
                 DescribeDLTensorFault(*tensor, fault).c_str());
    return -1;
  }
  if (info->kind == ArgKind::kExchangeApi) {
    const ExchangeApi* api = info->api;
    if (frame->stream_api == nullptr) frame->stream_api = api;
    if (frame->tensor_api == nullptr && api->managed_tensor_to_py_object_no_sync != nullptr) {
      frame->tensor_api = api;
    }
  }
  if (slot == nullptr) {  // inside a container: remembered for a callee that returns it
    Py_INCREF(obj);
    frame->nested_owners.emplace_back(tensor, obj);
  }
  if (tensor->device.device_type == kDLCUDA && frame->cuda_device < 0) {
    frame->cuda_device = tensor->device.device_id;
  }
  // Callees see the first element at data (TensorView::data_ptr()), whatever the producer
  // chose; the view is ours or a producer's per-call export, so adjusting it is safe.
  if (TVM_FFI_UNLIKELY(tensor->byte_offset != 0)) {
    tensor->data = static_cast<char*>(tensor->data) + tensor->byte_offset;
    tensor->byte_offset = 0;
  }
  out->type_code = kTVMFFIDLTensorPtr;
  out->flags = read_only ? TVM_FFI_TENSOR_IS_READ_ONLY : 0;
  out->v_tensor = tensor;
  out->size = 0;
  return 0;
}

// torch.float32 -> "float32", numpy.dtype('float32') -> "float32": the string form a
// DLDataType parameter reads (the C++ side parses it, one grammar). A tvm_ffi.dtype is that
// string already, parsed when it was made.
int DTypeArg(CallFrame* frame, PyObject* obj, TVMFFIAny* out) {
  PyObject* text = obj;
  if (!PyUnicode_Check(obj)) {
    text = PyObject_Str(obj);
    if (text == nullptr) return -1;
    frame->cleanups.push_back(Cleanup{nullptr, nullptr, text});
  }
  Py_ssize_t size = 0;
  const char* chars = PyUnicode_AsUTF8AndSize(text, &size);
  if (chars == nullptr) return -1;
  if (size > 6 && std::strncmp(chars, "torch.", 6) == 0) {  // "torch.float32"
    chars += 6;
    size -= 6;
  }
  out->type_code = kTVMFFIStr;
  out->flags = 0;
  out->v_str = chars;  // inside `text`, alive until the call's cleanups run
  out->size = size;
  return 0;
}

// torch.device -> tvm_ffi.device(obj), a (device_type, index) pair: the one reading of a
// device in Python, which a DLDevice parameter takes.
int DeviceArg(CallFrame* frame, PyObject* obj, TVMFFIAny* out, int depth) {
  static PyObject* make_device = nullptr;
  if (make_device == nullptr) {
    PyObject* module = PyImport_ImportModule("tvm_ffi._stream");
    if (module == nullptr) return -1;
    make_device = PyObject_GetAttrString(module, "device");
    Py_DECREF(module);
    if (make_device == nullptr) return -1;
  }
  PyObject* pair = PyObject_CallOneArg(make_device, obj);
  if (pair == nullptr) return -1;
  frame->cleanups.push_back(Cleanup{nullptr, nullptr, pair});
  return SequenceArg(frame, pair, out, depth);
}

// Converts one argument. `slot` is where a tensor's DLTensor goes (NULL: allocate one).
int ConvertArg(CallFrame* frame, PyObject* obj, TVMFFIAny* out, DLTensor* slot, int depth) {
  PyTypeObject* type = Py_TYPE(obj);
  // Exact builtins first: pointer compares, no cache lookup. bool before int.
  if (type == &PyLong_Type) return IntArg(frame, obj, out);
  if (type == &PyFloat_Type) {
    out->type_code = kTVMFFIFloat;
    out->flags = 0;
    out->v_float64 = PyFloat_AS_DOUBLE(obj);
    out->size = 0;
    return 0;
  }
  if (type == &PyBool_Type) {
    SetInt(out, kTVMFFIBool, obj == Py_True ? 1 : 0);
    return 0;
  }
  if (obj == Py_None) {
    SetInt(out, kTVMFFINone, 0);
    return 0;
  }
  if (type == &PyUnicode_Type) return StrArg(frame, obj, out);
  if (type == &PyBytes_Type) {
    BytesArg(PyBytes_AS_STRING(obj), PyBytes_GET_SIZE(obj), out);
    return 0;
  }
  if (type == &PyList_Type || type == &PyTuple_Type) {
    return SequenceArg(frame, obj, out, depth);
  }
  if (type == &PyDict_Type) return MapArg(frame, obj, out, depth);

  const TypeInfo* info = LookupType(type);
  if (info == nullptr) return -1;
  switch (info->kind) {
    case ArgKind::kExchangeApi:
    case ArgKind::kDLPack:
      return TensorArg(frame, info, obj, out, slot);
    case ArgKind::kInt: {
      PyObject* index = PyNumber_Index(obj);
      if (index == nullptr) return -1;
      int rc = IntArg(frame, index, out);
      Py_DECREF(index);
      return rc;
    }
    case ArgKind::kFloat: {
      double v = PyFloat_AsDouble(obj);
      if (v == -1.0 && PyErr_Occurred()) return -1;
      out->type_code = kTVMFFIFloat;
      out->flags = 0;
      out->v_float64 = v;
      out->size = 0;
      return 0;
    }
    case ArgKind::kStr:
      return StrArg(frame, obj, out);
    case ArgKind::kBytes:
      BytesArg(PyBytes_AS_STRING(obj), PyBytes_GET_SIZE(obj), out);
      return 0;
    case ArgKind::kByteArray:
      BytesArg(PyByteArray_AS_STRING(obj), PyByteArray_GET_SIZE(obj), out);
      return 0;
    case ArgKind::kSequence:
      return SequenceArg(frame, obj, out, depth);
    case ArgKind::kMapping:
      return MapArg(frame, obj, out, depth);
    case ArgKind::kOpaquePtr: {
      void* ptr = nullptr;
      if (OpaquePtrFromCtypes(obj, &ptr) != 0) return -1;
      out->type_code = kTVMFFIOpaquePtr;
      out->flags = 0;
      out->v_ptr = ptr;
      out->size = 0;
      return 0;
    }
    case ArgKind::kDType:
      return DTypeArg(frame, obj, out);
    case ArgKind::kDevice:
      return DeviceArg(frame, obj, out, depth);
    case ArgKind::kUnsupported: {
      // Objects and callables (ABI version 3); only types nothing else claimed get here.
      const int rc = ObjectArg(frame, obj, out);
      if (rc <= 0) return rc;
      break;
    }
  }
  // The callee knows what it expected and raises the TypeError naming both.
  const char* name = ShortTypeName(type);
  out->type_code = kTVMFFIUnsupported;
  out->flags = 0;
  out->v_str = name;
  out->size = static_cast<int64_t>(std::strlen(name));
  return 0;
}

// The call of both kinds of Function; `invoke` runs the callee with the converted arguments.
template <typename Invoke>
inline PyObject* CallFunction(FunctionObject* self, PyObject* const* args, size_t nargsf,
                              PyObject* kwnames, Invoke invoke) {
  if (kwnames != nullptr && PyTuple_GET_SIZE(kwnames) != 0) {
    PyErr_Format(PyExc_TypeError, "%s() takes no keyword arguments", self->name);
    return nullptr;
  }
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  // Uninitialised on purpose: every used element is written by ConvertArg.
  TVMFFIAny inline_args[kInlineArgs];
  DLTensor inline_tensors[kInlineArgs];
  std::unique_ptr<TVMFFIAny[]> heap_args;
  std::unique_ptr<DLTensor[]> heap_tensors;
  TVMFFIAny* packed = inline_args;
  DLTensor* tensors = inline_tensors;
  if (nargs > kInlineArgs) {
    if (nargs > INT32_MAX) {
      PyErr_Format(PyExc_TypeError, "%s() got too many arguments", self->name);
      return nullptr;
    }
    heap_args.reset(new TVMFFIAny[nargs]);
    heap_tensors.reset(new DLTensor[nargs]);
    packed = heap_args.get();
    tensors = heap_tensors.get();
  }

  CallFrame frame(self);
  frame.py_args = args;
  frame.packed = packed;
  frame.nargs = nargs;
  for (Py_ssize_t i = 0; i < nargs; ++i) {
    frame.position = static_cast<int>(i + 1);
    if (ConvertArg(&frame, args[i], &packed[i], &tensors[i], 0) != 0) return nullptr;
  }

  TVMFFICallContext ctx;
  ctx.abi_version = TVM_FFI_ABI_VERSION;
  ctx.handle = &frame;
  ctx.get_stream = GetStreamForCall;
  ctx.alloc_tensor = AllocTensorForCall;
  TVMFFIResult result;
  result.value.type_code = kTVMFFINone;
  result.value.flags = 0;
  result.value.v_int64 = 0;
  result.value.size = 0;
  result.owner = nullptr;

  // Restores the caller's current device on return, whatever the call switched to.
  CudaDeviceGuard guard;
  frame.guard = &guard;
  if (frame.cuda_device >= 0 && !guard.Enter(frame.cuda_device)) return nullptr;
  int rc = invoke(&ctx, packed, static_cast<int32_t>(nargs), &result);
  // Producers' deleters run before we build the result or the exception.
  frame.RunCleanups();
  return FinishCall(frame, rc, &result);
}

PyObject* FunctionVectorcall(PyObject* self_obj, PyObject* const* args, size_t nargsf,
                             PyObject* kwnames) {
  auto* self = reinterpret_cast<FunctionObject*>(self_obj);
  return CallFunction(self, args, nargsf, kwnames,
                      [self](const TVMFFICallContext* ctx, const TVMFFIAny* packed,
                             int32_t nargs, TVMFFIResult* result) {
                        return self->entry(ctx, packed, nargs, result);
                      });
}

PyObject* RefFunctionVectorcall(PyObject* self_obj, PyObject* const* args, size_t nargsf,
                                PyObject* kwnames) {
  auto* self = reinterpret_cast<FunctionObject*>(self_obj);
  return CallFunction(self, args, nargsf, kwnames,
                      [self](const TVMFFICallContext* ctx, const TVMFFIAny* packed,
                             int32_t nargs, TVMFFIResult* result) {
                        return self->ref->type->call(self->ref, ctx, packed, nargs, result);
                      });
}

// Part of Python's garbage collection: __doc__ may be any object, also one that holds the
// function (a cycle). The C++ object behind `ref` is opaque to the collector (docs/guides/
// cpp_core.md says how to keep Python callables held by C++ out of cycles).
int FunctionTraverse(PyObject* self_obj, visitproc visit, void* arg) {
  auto* self = reinterpret_cast<FunctionObject*>(self_obj);
  Py_VISIT(self->doc);
  Py_VISIT(Py_TYPE(self_obj));  // instances of a heap type own a reference to it
  return 0;
}

int FunctionClear(PyObject* self_obj) {
  Py_CLEAR(reinterpret_cast<FunctionObject*>(self_obj)->doc);
  return 0;
}

void FunctionDealloc(PyObject* self_obj) {
  auto* self = reinterpret_cast<FunctionObject*>(self_obj);
  PyTypeObject* type = Py_TYPE(self_obj);
  PyObject_GC_UnTrack(self_obj);
  Py_XDECREF(self->name_obj);
  Py_XDECREF(self->signature);
  Py_XDECREF(self->doc);
  if (self->ref != nullptr) self->ref->type->dec_ref(self->ref);
  type->tp_free(self_obj);
  Py_DECREF(type);  // instances of a heap type own a reference to it
}

PyObject* FunctionRepr(PyObject* self_obj) {
  auto* self = reinterpret_cast<FunctionObject*>(self_obj);
  return PyUnicode_FromFormat("<tvm_ffi.Function %U>", self->signature);
}

PyObject* GetName(PyObject* self, void*) {
  PyObject* name = reinterpret_cast<FunctionObject*>(self)->name_obj;
  Py_INCREF(name);
  return name;
}

PyObject* GetSignature(PyObject* self, void*) {
  PyObject* sig = reinterpret_cast<FunctionObject*>(self)->signature;
  Py_INCREF(sig);
  return sig;
}

PyObject* GetNumArgs(PyObject* self, void*) {
  return PyLong_FromLong(reinterpret_cast<FunctionObject*>(self)->info->num_args);
}

PyObject* GetDoc(PyObject* self, void*) {
  auto* f = reinterpret_cast<FunctionObject*>(self);
  PyObject* doc = f->doc != nullptr ? f->doc : f->signature;
  Py_INCREF(doc);
  return doc;
}

// __signature__ / __text_signature__ for inspect and help(): built in Python
// (tvm_ffi/_signature.py) from the signature text, on request only.
PyObject* CallSignatureHelper(PyObject* self, const char* helper) {
  auto* f = reinterpret_cast<FunctionObject*>(self);
  PyObject* module = PyImport_ImportModule("tvm_ffi._signature");
  if (module == nullptr) return nullptr;
  PyObject* out = std::strcmp(helper, "from_text") == 0
                      ? PyObject_CallMethod(module, helper, "Oi", f->signature, f->info->num_args)
                      : PyObject_CallMethod(module, helper, "i", f->info->num_args);
  Py_DECREF(module);
  return out;
}

PyObject* GetPySignature(PyObject* self, void*) { return CallSignatureHelper(self, "from_text"); }

PyObject* GetTextSignature(PyObject* self, void*) {
  return CallSignatureHelper(self, "text_signature");
}

int SetDoc(PyObject* self, PyObject* value, void*) {
  auto* f = reinterpret_cast<FunctionObject*>(self);
  Py_XINCREF(value);  // NULL (del) or None falls back to the signature
  Py_XSETREF(f->doc, value == Py_None ? (Py_XDECREF(value), nullptr) : value);
  return 0;
}

PyGetSetDef kFunctionGetSet[] = {
    {"__name__", GetName, nullptr, "The exported name.", nullptr},
    {"__qualname__", GetName, nullptr, "The exported name.", nullptr},
    {"__doc__", GetDoc, SetDoc, nullptr, nullptr},
    {"signature", GetSignature, nullptr,
     "The C++ signature, e.g. 'add_one(Tensor, Tensor) -> None'.", nullptr},
    {"num_args", GetNumArgs, nullptr, "Number of arguments the function takes.", nullptr},
    {"__signature__", GetPySignature, nullptr,
     "inspect.Signature: positional-only arg0, arg1, ... annotated with the C++ types.",
     nullptr},
    {"__text_signature__", GetTextSignature, nullptr, "'(arg0, arg1, /)'.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyMemberDef kFunctionMembers[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(FunctionObject, vectorcall), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr},
};

PyType_Slot kFunctionSlots[] = {
    {Py_tp_dealloc, reinterpret_cast<void*>(FunctionDealloc)},
    {Py_tp_traverse, reinterpret_cast<void*>(FunctionTraverse)},
    {Py_tp_clear, reinterpret_cast<void*>(FunctionClear)},
    {Py_tp_repr, reinterpret_cast<void*>(FunctionRepr)},
    {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
    {Py_tp_getset, kFunctionGetSet},
    {Py_tp_members, kFunctionMembers},
    {0, nullptr},
};

// Not subclassable (no Py_TPFLAGS_BASETYPE) and not constructible from Python (no tp_new):
// Functions come only from Module lookups.
PyType_Spec kFunctionSpec = {
    "tvm_ffi.Function", sizeof(FunctionObject), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_HAVE_GC, kFunctionSlots,
};

PyTypeObject* g_function_type = nullptr;

}  // namespace

PyTypeObject* InitFunctionType() {
  if (g_function_type == nullptr) {
    auto* type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&kFunctionSpec));
    if (type == nullptr) return nullptr;
    type->tp_new = nullptr;  // FromSpec inherits object's tp_new; Function() must fail
    PyType_Modified(type);
    g_function_type = type;
  }
  return g_function_type;
}

PyObject* NewFunction(TVMFFIFunctionEntry entry, const TVMFFIFunctionInfo* info, const char* name) {
  PyTypeObject* type = InitFunctionType();
  if (type == nullptr) return nullptr;
  auto* self = PyObject_GC_New(FunctionObject, type);
  if (self == nullptr) return nullptr;
  self->vectorcall = FunctionVectorcall;
  self->entry = entry;
  self->info = info;
  self->signature = nullptr;
  self->doc = nullptr;
  self->ref = nullptr;
  self->name_obj = PyUnicode_FromString(name);
  const char* sig = info->signature != nullptr ? info->signature : name;
  if (self->name_obj != nullptr) self->signature = PyUnicode_FromString(sig);
  if (self->signature == nullptr) {
    Py_DECREF(self);
    return nullptr;
  }
  self->name = PyUnicode_AsUTF8(self->name_obj);
  PyObject_GC_Track(self);
  return reinterpret_cast<PyObject*>(self);
}

PyObject* NewRefFunction(TVMFFIRefObject* ref, const char* name) {
  // A function object states no arity nor signature: its calls are checked by the callee.
  static const TVMFFIFunctionInfo kInfo = {TVM_FFI_ABI_VERSION, -1, "", nullptr};
  PyObject* func = NewFunction(nullptr, &kInfo, name);
  if (func == nullptr) {
    ref->type->dec_ref(ref);
    return nullptr;
  }
  auto* self = reinterpret_cast<FunctionObject*>(func);
  self->ref = ref;
  self->vectorcall = RefFunctionVectorcall;
  return func;
}

bool IsFunction(PyObject* obj) {
  return g_function_type != nullptr && Py_TYPE(obj) == g_function_type;
}

}  // namespace tvm_ffi_py
