// tvm_ffi.Function on the C ABI: a FunctionObj handle called through its safe_call by
// vectorcall; subclassable (the CuTe DSL derives from it), constructible empty; and the two
// ways to wrap foreign code: a safe-call address and the MLIR packed form.
#include <Python.h>  // before structmember.h, which needs it
#include <structmember.h>

#include "core.h"
#include "cuda_guard.h"

namespace tvm_ffi_next {

PyTypeObject* g_function_type = nullptr;

namespace {

constexpr Py_ssize_t kInlineArgs = 8;

const char* NameOf(const FunctionObject* f) {
  const char* name = f->name != nullptr ? PyUnicode_AsUTF8(f->name) : nullptr;
  return name != nullptr ? name : "function";
}

// A callee that refuses an argument names the type of the value it got: the C ABI's type
// ("Array", "Map", or "ffi.OpaquePyObject" for any Python object without a C ABI form). The
// caller knows the object, so "f() argument 2 must be int, not <type>" names its Python type, as
// CPython's messages do. Error path only; any other message stays the callee's.
void NamePythonType(PyObject* const* args, Py_ssize_t nargs) {
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  PyObject* exc_args = value != nullptr && PyErr_GivenExceptionMatches(type, PyExc_TypeError)
                           ? PyObject_GetAttrString(value, "args")
                           : nullptr;
  PyErr_Clear();
  const char* text = exc_args != nullptr && PyTuple_Check(exc_args) &&
                             PyTuple_GET_SIZE(exc_args) == 1 &&
                             PyUnicode_Check(PyTuple_GET_ITEM(exc_args, 0))
                         ? PyUnicode_AsUTF8(PyTuple_GET_ITEM(exc_args, 0))
                         : nullptr;
  const char* at = text != nullptr ? std::strstr(text, "() argument ") : nullptr;
  char* end = nullptr;
  const long position = at != nullptr ? std::strtol(at + 12, &end, 10) : 0;
  const char* tail = nullptr;  // the last ", not "
  for (const char* p = text != nullptr ? std::strstr(text, ", not ") : nullptr; p != nullptr;
       p = std::strstr(p + 1, ", not ")) {
    tail = p;
  }
  if (end != nullptr && std::strncmp(end, " must be ", 9) == 0 && position >= 1 &&
      position <= nargs && tail != nullptr && std::strchr(tail, '\n') == nullptr) {
    PyObject* head = PyUnicode_DecodeUTF8(text, static_cast<Py_ssize_t>(tail - text), "replace");
    PyObject* message =
        head != nullptr
            ? PyUnicode_FromFormat("%U, not %s", head, _PyType_Name(Py_TYPE(args[position - 1])))
            : nullptr;
    PyObject* new_args = message != nullptr ? PyTuple_Pack(1, message) : nullptr;
    if (new_args != nullptr) PyObject_SetAttrString(value, "args", new_args);
    Py_XDECREF(new_args);
    Py_XDECREF(message);
    Py_XDECREF(head);
    PyErr_Clear();
  }
  Py_XDECREF(exc_args);
  PyErr_Restore(type, value, traceback);
}

PyObject* FunctionVectorcall(PyObject* self_obj, PyObject* const* args, size_t nargsf,
                             PyObject* kwnames) {
  auto* self = reinterpret_cast<FunctionObject*>(self_obj);
  if (kwnames != nullptr && PyTuple_GET_SIZE(kwnames) != 0) {
    PyErr_Format(PyExc_TypeError, "%s() takes no keyword arguments", NameOf(self));
    return nullptr;
  }
  if (self->handle == nullptr) {
    PyErr_SetString(PyExc_ValueError, "cannot call an empty Function (it has no handle)");
    return nullptr;
  }
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  TVMFFIAny inline_args[kInlineArgs];
  DLTensor inline_views[kInlineArgs];
  std::vector<TVMFFIAny> heap_args;
  std::vector<DLTensor> heap_views;
  TVMFFIAny* packed = inline_args;
  DLTensor* views = inline_views;
  if (nargs > kInlineArgs) {
    heap_args.resize(static_cast<size_t>(nargs));
    heap_views.resize(static_cast<size_t>(nargs));
    packed = heap_args.data();
    views = heap_views.data();
  }
  ArgFrame frame;
  frame.name_obj = self->name;
  frame.view_params = self->view_params;
  frame.pointer_params = self->pointer_params;
  for (Py_ssize_t i = 0; i < nargs; ++i) {
    frame.position = static_cast<int>(i + 1);
    if (ConvertArg(&frame, args[i], &packed[i], &views[i], 0) != 0) return nullptr;
  }
  // A CUDA tensor's device is current for the call, as in torch ops (no driver: no real CUDA
  // tensor either, so nothing to switch).
  CudaDeviceGuard guard;
  if (frame.cuda_device >= 0 && !guard.Enter(frame.cuda_device, false)) return nullptr;
  // Framework tensors set the allocator and CUDA ones the stream, in one thread-local state.
  CallThreadState* state =
      frame.tensor_api != nullptr || frame.cuda_device >= 0 ? CallState() : nullptr;
  StreamScope stream;
  if (stream.Enter(frame, state, &guard) != 0) return nullptr;
  TVMFFIAny result;
  result.type_index = kTVMFFINone;
  result.zero_padding = 0;
  result.v_int64 = 0;
  TVMFFIObject* handle = self->handle;
  AllocScope alloc(state, frame.tensor_api);
  const int rc = CellOf<TVMFFIFunctionCell>(handle)->safe_call(
      handle, packed, static_cast<int32_t>(nargs), &result);
  if (stream.Leave() != 0) {  // the producer could not say its stream: that error wins
    if (rc == 0 && IsObjectIndex(result.type_index)) DecRef(result.v_obj);
    if (rc != 0) {
      TVMFFIObjectHandle error = nullptr;
      TVMFFIErrorMoveFromRaised(&error);
      DecRef(static_cast<TVMFFIObject*>(error));
    }
    frame.Release();
    return nullptr;
  }
  if (rc != 0) {
    frame.Release();
    // Unnamed functions (callbacks, foreign addresses) add no "in function" context.
    RaiseCallError(rc, self->name != nullptr ? NameOf(self) : nullptr, self->library);
    NamePythonType(args, nargs);
    return nullptr;
  }
  PyObject* out = ToPython(&result, &frame);
  frame.Release();
  return out;
}

// An assigned __doc__ may be any object, also one that refers back to the function.
int FunctionTraverse(PyObject* self_obj, visitproc visit, void* arg) {
  Py_VISIT(reinterpret_cast<FunctionObject*>(self_obj)->doc);
  Py_VISIT(Py_TYPE(self_obj));
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
  Py_CLEAR(self->doc);
  DecRef(self->handle);
  Py_XDECREF(self->name);
  Py_XDECREF(self->library);
  Py_XDECREF(self->signature);
  type->tp_free(self_obj);
  Py_DECREF(type);  // instances of a heap type own a reference to it
}

// Function() is an empty function; subclasses may pass their own arguments to their __init__.
PyObject* FunctionNew(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  if (type == g_function_type &&
      (PyTuple_GET_SIZE(args) != 0 || (kwargs != nullptr && PyDict_GET_SIZE(kwargs) != 0))) {
    PyErr_SetString(PyExc_TypeError, "Function() takes no arguments");
    return nullptr;
  }
  auto* self = reinterpret_cast<FunctionObject*>(type->tp_alloc(type, 0));
  if (self == nullptr) return nullptr;
  self->vectorcall = FunctionVectorcall;
  self->handle = nullptr;
  self->view_params = 0;
  self->pointer_params = 0;
  self->name = nullptr;
  self->library = nullptr;
  self->signature = nullptr;
  self->num_args = -1;
  self->doc = nullptr;
  return reinterpret_cast<PyObject*>(self);
}

PyObject* FunctionRepr(PyObject* self_obj) {
  auto* self = reinterpret_cast<FunctionObject*>(self_obj);
  if (self->handle == nullptr) return PyUnicode_FromString("<tvm_ffi.Function (empty)>");
  if (self->name == nullptr) {  // a function object: its type key, as for any object
    const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(self->handle->type_index);
    PyObject* key = PyUnicode_FromStringAndSize(info->type_key.data,
                                                static_cast<Py_ssize_t>(info->type_key.size));
    PyObject* out = key != nullptr ? PyUnicode_FromFormat("<tvm_ffi.Function %U>", key) : nullptr;
    Py_XDECREF(key);
    return out;
  }
  PyObject* signature = FunctionSignatureText(self_obj);
  if (signature == nullptr) return nullptr;
  PyObject* out = PyUnicode_FromFormat("<tvm_ffi.Function %U>", signature);
  Py_DECREF(signature);
  return out;
}

PyObject* ChandleMethod(PyObject* self, PyObject*) {
  return PyLong_FromVoidPtr(reinterpret_cast<FunctionObject*>(self)->handle);
}

PyObject* MoveHandleFrom(PyObject* self_obj, PyObject* other_obj) {
  if (!PyObject_TypeCheck(other_obj, g_function_type)) {
    PyErr_Format(PyExc_TypeError, "__move_handle_from__() expects a Function, got %s",
                 Py_TYPE(other_obj)->tp_name);
    return nullptr;
  }
  auto* self = reinterpret_cast<FunctionObject*>(self_obj);
  auto* other = reinterpret_cast<FunctionObject*>(other_obj);
  if (self == other) Py_RETURN_NONE;
  TVMFFIObject* old = self->handle;
  self->handle = other->handle;
  self->view_params = other->view_params;
  self->pointer_params = other->pointer_params;
  other->handle = nullptr;
  Py_XSETREF(self->name, other->name);
  Py_XSETREF(self->library, other->library);
  Py_XSETREF(self->signature, other->signature);
  self->num_args = other->num_args;
  other->name = nullptr;
  other->library = nullptr;
  other->signature = nullptr;
  DecRef(old);
  Py_RETURN_NONE;
}

// ---- foreign code -------------------------------------------------------------------------------

// Drops a keep-alive object from whatever thread releases the function.
void DropPyObject(void* obj) {
  if (obj == nullptr || !Py_IsInitialized()) return;
  PyGILState_STATE gil = PyGILState_Ensure();
  Py_DECREF(static_cast<PyObject*>(obj));
  PyGILState_Release(gil);
}

int ParseAddress(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, const char* method,
                 void** address, PyObject** keep_alive) {
  *keep_alive = Py_None;
  const Py_ssize_t nkw = kwnames != nullptr ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t i = 0; i < nkw; ++i) {
    const char* key = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, i));
    if (key == nullptr || std::strcmp(key, "keep_alive_object") != 0) {
      PyErr_Format(PyExc_TypeError, "Function.%s() got an unexpected keyword argument %R", method,
                   PyTuple_GET_ITEM(kwnames, i));
      return -1;
    }
    *keep_alive = args[nargs + i];
  }
  if (nargs != 1) {
    PyErr_Format(PyExc_TypeError, "Function.%s() takes one address (got %zd arguments)", method,
                 nargs);
    return -1;
  }
  if (!PyLong_Check(args[0])) {
    PyErr_Format(PyExc_TypeError, "Function.%s() address must be an int, got %s", method,
                 Py_TYPE(args[0])->tp_name);
    return -1;
  }
  *address = PyLong_AsVoidPtr(args[0]);
  if (*address == nullptr) {
    if (!PyErr_Occurred()) {
      PyErr_Format(PyExc_ValueError, "Function.%s() address is NULL", method);
    }
    return -1;
  }
  return 0;
}

PyObject* WrapCreated(int rc, TVMFFIObject* handle, const char* what) {
  if (rc != 0) {
    RaiseCallError(rc, what, nullptr);
    return nullptr;
  }
  return NewFunction(handle, nullptr, nullptr);
}

// A safe-call address (it must ignore its handle argument, which is the keep-alive object).
PyObject* FromExternC(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  void* address = nullptr;
  PyObject* keep_alive = nullptr;
  if (ParseAddress(args, nargs, kwnames, "__from_extern_c__", &address, &keep_alive) != 0) {
    return nullptr;
  }
  TVMFFIObjectHandle handle = nullptr;
  int rc;
  if (keep_alive == Py_None) {
    rc = TVMFFIFunctionCreate(nullptr, reinterpret_cast<TVMFFISafeCallType>(address), nullptr,
                              &handle);
  } else {
    Py_INCREF(keep_alive);
    rc = TVMFFIFunctionCreate(keep_alive, reinterpret_cast<TVMFFISafeCallType>(address),
                              DropPyObject, &handle);
    if (rc != 0) Py_DECREF(keep_alive);
  }
  return WrapCreated(rc, static_cast<TVMFFIObject*>(handle), "Function.__from_extern_c__");
}

// The MLIR packed form: void f(void** slots), slots = {&handle, &args, &num_args, &result,
// &ret_code}; the safe call returns ret_code.
struct MlirPacked {
  void (*entry)(void**);
  PyObject* keep_alive;  // owned, or NULL
};

int MlirPackedSafeCall(void* self, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
  auto* packed = static_cast<MlirPacked*>(self);
  void* handle = nullptr;
  int32_t ret_code = 0;
  void* slots[5] = {&handle, &args, &num_args, &result, &ret_code};
  packed->entry(slots);
  return ret_code;
}

void MlirPackedDelete(void* self) {
  auto* packed = static_cast<MlirPacked*>(self);
  DropPyObject(packed->keep_alive);
  delete packed;
}

PyObject* FromMlirPacked(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  void* address = nullptr;
  PyObject* keep_alive = nullptr;
  if (ParseAddress(args, nargs, kwnames, "__from_mlir_packed_safe_call__", &address, &keep_alive) !=
      0) {
    return nullptr;
  }
  auto* packed = new MlirPacked{reinterpret_cast<void (*)(void**)>(address), nullptr};
  if (keep_alive != Py_None) {
    Py_INCREF(keep_alive);
    packed->keep_alive = keep_alive;
  }
  TVMFFIObjectHandle handle = nullptr;
  const int rc = TVMFFIFunctionCreate(packed, MlirPackedSafeCall, MlirPackedDelete, &handle);
  if (rc != 0) MlirPackedDelete(packed);
  return WrapCreated(rc, static_cast<TVMFFIObject*>(handle),
                     "Function.__from_mlir_packed_safe_call__");
}

// ---- Python callables as functions -------------------------------------------------------------

int CallableSafeCall(void* self, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
  PyGILState_STATE gil = PyGILState_Ensure();
  int rc = 0;
  PyObject* py_args = PyTuple_New(num_args);
  for (int32_t i = 0; py_args != nullptr && i < num_args; ++i) {
    PyObject* item = ViewToPython(&args[i]);
    if (item == nullptr) {
      Py_CLEAR(py_args);
      break;
    }
    PyTuple_SET_ITEM(py_args, i, item);
  }
  PyObject* out =
      py_args != nullptr ? PyObject_Call(static_cast<PyObject*>(self), py_args, nullptr) : nullptr;
  Py_XDECREF(py_args);
  if (out == nullptr) {
    rc = SetRaisedFromPython();
  } else {
    ArgFrame frame;  // position 0: messages name the result, not an argument
    frame.name = "the Python callback's result";
    TVMFFIAny view;
    if (ConvertArg(&frame, out, &view, nullptr, 1) != 0 ||
        TVMFFIAnyViewToOwnedAny(&view, result) != 0) {
      rc = PyErr_Occurred() ? SetRaisedFromPython() : -1;
    }
    Py_DECREF(out);
  }
  PyGILState_Release(gil);
  return rc;
}

PyMethodDef kFunctionMethods[] = {
    {"__chandle__", ChandleMethod, METH_NOARGS, "The FunctionObj address (0 when empty)."},
    {"__move_handle_from__", MoveHandleFrom, METH_O, "Takes other's handle; other becomes empty."},
    {"__from_extern_c__", reinterpret_cast<PyCFunction>(reinterpret_cast<void*>(FromExternC)),
     METH_FASTCALL | METH_KEYWORDS | METH_STATIC,
     "__from_extern_c__(address, *, keep_alive_object=None): a Function over a safe-call "
     "address."},
    {"__from_mlir_packed_safe_call__",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void*>(FromMlirPacked)),
     METH_FASTCALL | METH_KEYWORDS | METH_STATIC,
     "__from_mlir_packed_safe_call__(address, *, keep_alive_object=None)."},
    {nullptr, nullptr, 0, nullptr},
};

PyMemberDef kFunctionMembers[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(FunctionObject, vectorcall), READONLY, nullptr},
    {"library", T_OBJECT, offsetof(FunctionObject, library), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr},
};

PyType_Slot kFunctionSlots[] = {
    {Py_tp_new, reinterpret_cast<void*>(FunctionNew)},
    {Py_tp_dealloc, reinterpret_cast<void*>(FunctionDealloc)},
    {Py_tp_traverse, reinterpret_cast<void*>(FunctionTraverse)},
    {Py_tp_clear, reinterpret_cast<void*>(FunctionClear)},
    {Py_tp_repr, reinterpret_cast<void*>(FunctionRepr)},
    {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
    {Py_tp_methods, kFunctionMethods},
    {Py_tp_members, kFunctionMembers},
    {Py_tp_getset, kFunctionInfoGetSet},
    {0, nullptr},
};

PyType_Spec kFunctionSpec = {
    "tvm_ffi.Function",
    sizeof(FunctionObject),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_HAVE_GC,
    kFunctionSlots,
};

}  // namespace

int InitFunctionType(PyObject* module) {
  g_function_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&kFunctionSpec));
  if (g_function_type == nullptr) return -1;
  Py_INCREF(g_function_type);
  return PyModule_AddObject(module, "Function", reinterpret_cast<PyObject*>(g_function_type));
}

PyObject* NewFunction(TVMFFIObject* handle, PyObject* name, PyObject* library) {
  PyObject* args = PyTuple_New(0);
  PyObject* func = args != nullptr ? FunctionNew(g_function_type, args, nullptr) : nullptr;
  Py_XDECREF(args);
  if (func == nullptr) {
    DecRef(handle);
    return nullptr;
  }
  auto* self = reinterpret_cast<FunctionObject*>(func);
  self->handle = handle;
  Py_XINCREF(name);
  self->name = name;
  Py_XINCREF(library);
  self->library = library;
  return func;
}

TVMFFIObject* FunctionFromCallable(PyObject* callable) {
  TVMFFIObjectHandle handle = nullptr;
  Py_INCREF(callable);
  const int rc = TVMFFIFunctionCreate(callable, CallableSafeCall, DropPyObject, &handle);
  if (rc != 0) {
    Py_DECREF(callable);
    RaiseCallError(rc, "TVMFFIFunctionCreate", nullptr);
    return nullptr;
  }
  return static_cast<TVMFFIObject*>(handle);
}

TVMFFIObject* OpaqueFromPython(PyObject* obj) {
  TVMFFIObjectHandle handle = nullptr;
  Py_INCREF(obj);
  const int rc = TVMFFIObjectCreateOpaque(obj, kTVMFFIOpaquePyObject, DropPyObject, &handle);
  if (rc != 0) {
    Py_DECREF(obj);
    RaiseCallError(rc, "TVMFFIObjectCreateOpaque", nullptr);
    return nullptr;
  }
  return static_cast<TVMFFIObject*>(handle);
}

TVMFFIObject* GetGlobal(const char* name) {
  TVMFFIByteArray array{name, std::strlen(name)};
  TVMFFIObjectHandle out = nullptr;
  if (TVMFFIFunctionGetGlobal(&array, &out) != 0) {
    TVMFFIObjectHandle error = nullptr;
    TVMFFIErrorMoveFromRaised(&error);
    DecRef(static_cast<TVMFFIObject*>(error));
    return nullptr;
  }
  return static_cast<TVMFFIObject*>(out);
}

int CallHandle(TVMFFIObject* func, const char* name, const TVMFFIAny* args, int32_t n,
               TVMFFIAny* result) {
  result->type_index = kTVMFFINone;
  result->zero_padding = 0;
  result->v_int64 = 0;
  const int rc = CellOf<TVMFFIFunctionCell>(func)->safe_call(func, args, n, result);
  if (rc != 0) RaiseCallError(rc, name, nullptr);
  return rc == 0 ? 0 : -1;
}

}  // namespace tvm_ffi_next
