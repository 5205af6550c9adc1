// Objects of ABI version 3 on the Python side: the registry in libtvm_ffi.so, tvm_ffi.Object,
// and Python callables as function objects that C++ can call.
#include "object.h"

#include <dlfcn.h>

#include <atomic>
#include <cstring>
#include <new>
#include <string>

#include "c_names.h"
#include "call_frame.h"
#include "function.h"

namespace tvm_ffi_py {
namespace {

// ---- the registry --------------------------------------------------------------------------

RegistryApi g_registry;
bool g_registry_loaded = false;  // guarded by the GIL

template <typename T>
bool FindSymbol(void* handle, const char* name, T* out, const char* path) {
  *out = reinterpret_cast<T>(dlsym(handle, name));
  if (*out == nullptr) {
    PyErr_Format(PyExc_RuntimeError, "libtvm_ffi.so at '%s' does not define %s", path, name);
    return false;
  }
  return true;
}

// ---- tvm_ffi.Object --------------------------------------------------------------------------

struct ObjectObject {
  PyObject_HEAD TVMFFIRefObject* ref;  // owned; NULL until __ffi_init__ or a result sets it
};

PyTypeObject* g_object_type = nullptr;
PyObject* g_object_classes = nullptr;  // dict: type key -> registered Object subclass

const char* TypeKeyOf(PyObject* self) {
  const TVMFFIRefObject* ref = reinterpret_cast<ObjectObject*>(self)->ref;
  return ref != nullptr && ref->type->type_key != nullptr ? ref->type->type_key : "";
}

// The type key register_object gave the class (a new reference to a str), or NULL with
// TypeError set naming `what`.
PyObject* ClassTypeKey(PyTypeObject* cls, const char* what) {
  PyObject* key = PyObject_GetAttrString(reinterpret_cast<PyObject*>(cls), "__tvm_ffi_type_key__");
  if (key != nullptr && PyUnicode_Check(key)) return key;
  Py_XDECREF(key);
  PyErr_Format(PyExc_TypeError,
               "%s: class %s has no C++ type; decorate it with "
               "@tvm_ffi.register_object(\"<type key>\")",
               what, cls->tp_name);
  return nullptr;
}

void Attach(PyObject* self, TVMFFIRefObject* ref) {
  auto* obj = reinterpret_cast<ObjectObject*>(self);
  TVMFFIRefObject* old = obj->ref;
  obj->ref = ref;
  if (old != nullptr) old->type->dec_ref(old);
}

// Any arguments are accepted and ignored: __init__ (or __ffi_init__) gives them meaning, and a
// subclass's __new__ may pass them on.
PyObject* ObjectNew(PyTypeObject* type, PyObject*, PyObject*) {
  PyObject* self = type->tp_alloc(type, 0);
  if (self != nullptr) reinterpret_cast<ObjectObject*>(self)->ref = nullptr;
  return self;
}

void ObjectDealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  Attach(self, nullptr);
  type->tp_free(self);
  Py_DECREF(type);  // instances of a heap type own a reference to it
}

PyObject* ObjectRepr(PyObject* self) {
  const TVMFFIRefObject* ref = reinterpret_cast<ObjectObject*>(self)->ref;
  if (ref == nullptr) return PyUnicode_FromFormat("<%s (not constructed)>", Py_TYPE(self)->tp_name);
  return PyUnicode_FromFormat("<%s '%s' at %p>", Py_TYPE(self)->tp_name, TypeKeyOf(self),
                              static_cast<const void*>(ref));
}

bool IsModule(PyObject* self) {
  const TVMFFIRefObject* ref = reinterpret_cast<ObjectObject*>(self)->ref;
  return ref != nullptr && (ref->type->flags & TVM_FFI_OBJECT_IS_MODULE) != 0 &&
         ref->type->get_function != nullptr;
}

// A module object's function `name` (a new reference), or NULL: with an error set, or without
// one when the module has none.
PyObject* ModuleFunction(PyObject* self, const char* name) {
  TVMFFIRefObject* ref = reinterpret_cast<ObjectObject*>(self)->ref;
  TVMFFIResult result;
  std::memset(&result, 0, sizeof(result));
  const int rc = ref->type->get_function(ref, name, &result);
  PyObject* out = nullptr;
  if (rc != 0) {
    const auto* info = result.value.type_code == kTVMFFIError
                           ? static_cast<const TVMFFIErrorInfo*>(result.value.v_ptr)
                           : nullptr;
    PyErr_Format(info ? ExceptionForKind(info->kind) : PyExc_RuntimeError,
                 "module '%s': looking up function '%s' failed: %s", TypeKeyOf(self), name,
                 info && info->message ? info->message : "no error reported");
  } else if (result.value.type_code == kTVMFFIRefObject && result.value.v_ptr != nullptr) {
    out = WrapRef(static_cast<TVMFFIRefObject*>(result.value.v_ptr), name);
  } else if (result.value.type_code != kTVMFFINone) {
    PyErr_Format(PyExc_RuntimeError,
                 "module '%s': get_function('%s') answered type code %d, not a function",
                 TypeKeyOf(self), name, static_cast<int>(result.value.type_code));
  }
  if (result.owner != nullptr) result.owner->deleter(result.owner);
  return out;
}

// Attributes the class does not define: a module object's functions, else the registry's
// members of the object's type (methods, bound to the object).
PyObject* ObjectGetAttr(PyObject* self, PyObject* name) {
  PyObject* found = PyObject_GenericGetAttr(self, name);
  if (found != nullptr || !PyErr_ExceptionMatches(PyExc_AttributeError)) return found;
  Py_ssize_t size = 0;
  const char* text = PyUnicode_AsUTF8AndSize(name, &size);
  const size_t len = text != nullptr ? static_cast<size_t>(size) : 0;
  // Dunder lookups (copy, pickle, numpy probing ...) never reach the registry.
  if (text == nullptr || (len > 4 && std::strncmp(text, "__", 2) == 0 &&
                          std::strcmp(text + len - 2, "__") == 0)) {
    return nullptr;
  }
  PyErr_Clear();  // the lookups below may run Python code
  if (std::strlen(text) != len) {  // cut at the NUL, it would find another name
    if (IsModule(self)) {
      PyErr_Format(PyExc_AttributeError, "module '%s' has no function %R%s", TypeKeyOf(self),
                   name, kNulNameNote);
    } else {
      PyErr_Format(PyExc_AttributeError, "'%s' object has no attribute %R%s",
                   Py_TYPE(self)->tp_name, name, kNulNameNote);
    }
    return nullptr;
  }
  if (IsModule(self)) {
    PyObject* func = ModuleFunction(self, text);
    if (func == nullptr && !PyErr_Occurred()) {
      PyErr_Format(PyExc_AttributeError, "module '%s' has no function '%s'", TypeKeyOf(self),
                   text);
    }
    return func;
  }
  // The object's own type key; before __ffi_init__, the one its class was registered under.
  const TVMFFIRefObject* ref = reinterpret_cast<ObjectObject*>(self)->ref;
  PyObject* class_key = nullptr;
  const char* type_key = nullptr;
  if (ref != nullptr) {
    type_key = ref->type->type_key;
  } else {
    class_key = PyObject_GetAttrString(reinterpret_cast<PyObject*>(Py_TYPE(self)),
                                       "__tvm_ffi_type_key__");
    if (class_key != nullptr && PyUnicode_Check(class_key)) type_key = PyUnicode_AsUTF8(class_key);
  }
  TVMFFIRefObject* member = nullptr;
  TVMFFIRefObject* field = nullptr;
  const RegistryApi* api = type_key != nullptr ? EnsureRegistry() : nullptr;
  if (api != nullptr) member = api->get_member(type_key, text);
  if (api != nullptr && member == nullptr && ref != nullptr) {
    // A field (ObjectDef::def_ro): its getter, read now. See reflection/registry.h.
    const std::string getter = std::string("__ffi_field__") + text;
    field = api->get_member(type_key, getter.c_str());
  }
  Py_XDECREF(class_key);
  if (field != nullptr) {
    PyObject* func = NewRefFunction(field, text);
    if (func == nullptr) return nullptr;
    PyObject* value = PyObject_CallOneArg(func, self);
    Py_DECREF(func);
    return value;
  }
  if (member == nullptr) {
    if (type_key != nullptr && api == nullptr) return nullptr;  // the registry failed to load
    PyErr_Clear();
    PyErr_Format(PyExc_AttributeError, "'%s' object has no attribute '%s'",
                 Py_TYPE(self)->tp_name, text);
    return nullptr;
  }
  PyObject* func = NewRefFunction(member, text);
  if (func == nullptr) return nullptr;
  PyObject* bound = PyMethod_New(func, self);
  Py_DECREF(func);
  return bound;
}

PyObject* ObjectGetItem(PyObject* self, PyObject* key) {
  if (!IsModule(self)) {
    PyErr_Format(PyExc_TypeError, "'%s' object is not subscriptable", Py_TYPE(self)->tp_name);
    return nullptr;
  }
  if (!PyUnicode_Check(key)) {
    PyErr_Format(PyExc_TypeError, "module function names are str, not %s",
                 Py_TYPE(key)->tp_name);
    return nullptr;
  }
  const char* name = CNameOf(key);
  if (name == nullptr) {
    if (!PyErr_Occurred()) {
      PyErr_Format(PyExc_KeyError, "module '%s' has no function %R%s", TypeKeyOf(self), key,
                   kNulNameNote);
    }
    return nullptr;
  }
  PyObject* func = ModuleFunction(self, name);
  if (func == nullptr && !PyErr_Occurred()) {
    PyErr_Format(PyExc_KeyError, "module '%s' has no function '%s'", TypeKeyOf(self), name);
  }
  return func;
}

// self.__ffi_init__(*args): constructs the C++ object through the registry member
// "__ffi_init__" of the class's type key and attaches it to self.
PyObject* ObjectFfiInit(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  PyObject* key = ClassTypeKey(Py_TYPE(self), "__ffi_init__");
  if (key == nullptr) return nullptr;
  const RegistryApi* api = EnsureRegistry();
  const char* type_key = PyUnicode_AsUTF8(key);
  TVMFFIRefObject* ctor =
      api != nullptr && type_key != nullptr ? api->get_member(type_key, "__ffi_init__") : nullptr;
  if (ctor == nullptr) {
    if (!PyErr_Occurred()) {
      PyErr_Format(PyExc_TypeError,
                   "__ffi_init__: type '%s' has no registered constructor (the registry member "
                   "'__ffi_init__'); was the library that defines it loaded and its "
                   "registration run?",
                   type_key);
    }
    Py_DECREF(key);
    return nullptr;
  }
  std::string label = std::string(type_key) + ".__ffi_init__";
  Py_DECREF(key);
  PyObject* func = NewRefFunction(ctor, label.c_str());
  if (func == nullptr) return nullptr;
  PyObject* made = PyObject_Vectorcall(func, args, static_cast<size_t>(nargs), nullptr);
  Py_DECREF(func);
  if (made == nullptr) return nullptr;
  if (!PyObject_TypeCheck(made, g_object_type) ||
      reinterpret_cast<ObjectObject*>(made)->ref == nullptr) {
    PyErr_Format(PyExc_TypeError, "%s returned %s, not an object", label.c_str(),
                 Py_TYPE(made)->tp_name);
    Py_DECREF(made);
    return nullptr;
  }
  TVMFFIRefObject* ref = reinterpret_cast<ObjectObject*>(made)->ref;
  ref->type->inc_ref(ref);
  Py_DECREF(made);
  Attach(self, ref);
  Py_RETURN_NONE;
}

PyObject* ObjectGetTypeKey(PyObject* self, void*) {
  if (reinterpret_cast<ObjectObject*>(self)->ref == nullptr) Py_RETURN_NONE;
  return PyUnicode_FromString(TypeKeyOf(self));
}

PyObject* ObjectSame(PyObject* self, PyObject* other) {
  const bool same = PyObject_TypeCheck(other, g_object_type) &&
                    reinterpret_cast<ObjectObject*>(self)->ref != nullptr &&
                    reinterpret_cast<ObjectObject*>(self)->ref ==
                        reinterpret_cast<ObjectObject*>(other)->ref;
  return PyBool_FromLong(same);
}

// Wrappers of the same C++ object are equal (a result is a new wrapper each time).
PyObject* ObjectRichCompare(PyObject* self, PyObject* other, int op) {
  const TVMFFIRefObject* ref = reinterpret_cast<ObjectObject*>(self)->ref;
  if ((op != Py_EQ && op != Py_NE) || ref == nullptr ||
      !PyObject_TypeCheck(other, g_object_type)) {
    Py_RETURN_NOTIMPLEMENTED;
  }
  const bool same = ref == reinterpret_cast<ObjectObject*>(other)->ref;
  return PyBool_FromLong(op == Py_EQ ? same : !same);
}

Py_hash_t ObjectHash(PyObject* self) {
  const TVMFFIRefObject* ref = reinterpret_cast<ObjectObject*>(self)->ref;
  const void* key = ref != nullptr ? static_cast<const void*>(ref) : self;
  Py_hash_t h = static_cast<Py_hash_t>(reinterpret_cast<uintptr_t>(key) >> 4);
  return h == -1 ? -2 : h;
}

PyMethodDef kObjectMethods[] = {
    {"__ffi_init__", reinterpret_cast<PyCFunction>(reinterpret_cast<void*>(ObjectFfiInit)),
     METH_FASTCALL,
     "Construct the C++ object through the constructor registered for the class's type key "
     "and attach it to self."},
    {"same_as", ObjectSame, METH_O, "Whether both wrap the same C++ object."},
    {nullptr, nullptr, 0, nullptr},
};

PyGetSetDef kObjectGetSet[] = {
    {"type_key", ObjectGetTypeKey, nullptr,
     "The C++ type key of the wrapped object (None before __ffi_init__).", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyType_Slot kObjectSlots[] = {
    {Py_tp_new, reinterpret_cast<void*>(ObjectNew)},
    {Py_tp_dealloc, reinterpret_cast<void*>(ObjectDealloc)},
    {Py_tp_repr, reinterpret_cast<void*>(ObjectRepr)},
    {Py_tp_getattro, reinterpret_cast<void*>(ObjectGetAttr)},
    {Py_mp_subscript, reinterpret_cast<void*>(ObjectGetItem)},
    {Py_tp_richcompare, reinterpret_cast<void*>(ObjectRichCompare)},
    {Py_tp_hash, reinterpret_cast<void*>(ObjectHash)},
    {Py_tp_methods, kObjectMethods},
    {Py_tp_getset, kObjectGetSet},
    {Py_tp_doc, const_cast<char*>(
                    "A C++ object (ABI version 3). Subclass it and decorate the subclass with "
                    "@tvm_ffi.register_object(type_key); unknown attributes are the methods "
                    "registered for the type key, called with the object first.")},
    {0, nullptr},
};

// No __dict__: a subclass that wants one says so (`__slots__ = ("__dict__",)`), as with
// apache-tvm-ffi.
PyType_Spec kObjectSpec = {"tvm_ffi.Object", sizeof(ObjectObject), 0,
                           Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, kObjectSlots};

// ---- Python callables as function objects -------------------------------------------------

// Heap blocks that keep a result's strings alive until the receiver releases result->owner.
struct OwnedText : TVMFFIObject {
  std::string text;
  static void Delete(TVMFFIObject* self) { delete static_cast<OwnedText*>(self); }
};

struct OwnedError : TVMFFIObject {
  std::string kind;
  std::string message;
  TVMFFIErrorInfo info;
  static void Delete(TVMFFIObject* self) { delete static_cast<OwnedError*>(self); }
};

void SetErrorResult(TVMFFIResult* result, const char* kind, std::string message) {
  auto* err = new OwnedError();
  err->deleter = OwnedError::Delete;
  err->kind = kind;
  err->message = std::move(message);
  err->info = TVMFFIErrorInfo{err->kind.c_str(), err->message.c_str(), "", 0};
  result->value.type_code = kTVMFFIError;
  result->value.flags = 0;
  result->value.v_ptr = &err->info;
  result->value.size = 0;
  result->owner = err;
}

// The pending Python exception as an error result (its class name and str()); clears it.
void SetErrorFromPython(TVMFFIResult* result) {
  PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  const std::string kind = KindForException(type);
  std::string message;
  // The message alone: args[0] when it is the one str argument (str(KeyError("k")) would
  // quote it, and the receiver builds the exception from the message again).
  PyObject* args = value != nullptr ? PyObject_GetAttrString(value, "args") : nullptr;
  PyObject* text = nullptr;
  if (args != nullptr && PyTuple_Check(args) && PyTuple_GET_SIZE(args) == 1 &&
      PyUnicode_Check(PyTuple_GET_ITEM(args, 0))) {
    text = PyTuple_GET_ITEM(args, 0);
    Py_INCREF(text);
  } else if (value != nullptr) {
    PyErr_Clear();
    text = PyObject_Str(value);
  }
  Py_XDECREF(args);
  const char* utf8 = text != nullptr ? PyUnicode_AsUTF8(text) : nullptr;
  message = utf8 != nullptr ? utf8 : "(the exception could not be printed)";
  PyErr_Clear();
  Py_XDECREF(text);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  SetErrorResult(result, kind.c_str(), std::move(message));
}

struct PyFunctionRef : TVMFFIRefObject {
  std::atomic<int64_t> refs{1};
  PyObject* callable;  // owned
};

struct EntryRef : TVMFFIRefObject {
  std::atomic<int64_t> refs{1};
  TVMFFIFunctionEntry entry;  // of a library that is never unloaded
};

void PyFunctionIncRef(TVMFFIRefObject* self) {
  static_cast<PyFunctionRef*>(self)->refs.fetch_add(1, std::memory_order_relaxed);
}

bool PythonIsAlive() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsInitialized() && !Py_IsFinalizing();
#else
  return Py_IsInitialized() && !_Py_IsFinalizing();
#endif
}

void PyFunctionDecRef(TVMFFIRefObject* self) {
  auto* f = static_cast<PyFunctionRef*>(self);
  if (f->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  // A C++ static released at process exit may come after Python is gone: then leak.
  if (!PythonIsAlive()) return;
  PyGILState_STATE gil = PyGILState_Ensure();
  Py_DECREF(f->callable);
  PyGILState_Release(gil);
  delete f;
}

PyObject* ArgToPython(const TVMFFIAny& v, int depth);

PyObject* ArrayToPython(const TVMFFIAny& v, int depth) {
  const bool is_map = v.type_code == kTVMFFIMap;
  const bool is_tuple = !is_map && (v.flags & TVM_FFI_ARRAY_IS_TUPLE) != 0;
  const Py_ssize_t n = static_cast<Py_ssize_t>(v.size);
  PyObject* out = is_map ? PyDict_New() : is_tuple ? PyTuple_New(n) : PyList_New(n);
  for (Py_ssize_t i = 0; out != nullptr && i < n; ++i) {
    if (is_map) {
      PyObject* key = ArgToPython(v.v_array[2 * i], depth + 1);
      PyObject* value = key ? ArgToPython(v.v_array[2 * i + 1], depth + 1) : nullptr;
      const int rc = value ? PyDict_SetItem(out, key, value) : -1;
      Py_XDECREF(key);
      Py_XDECREF(value);
      if (rc != 0) Py_CLEAR(out);
      continue;
    }
    PyObject* item = ArgToPython(v.v_array[i], depth + 1);
    if (item == nullptr) {
      Py_CLEAR(out);
    } else if (is_tuple) {
      PyTuple_SET_ITEM(out, i, item);
    } else {
      PyList_SET_ITEM(out, i, item);
    }
  }
  return out;
}

// An argument C++ passed to a Python callable (borrowed values: objects get a new reference).
PyObject* ArgToPython(const TVMFFIAny& v, int depth) {
  bool done;
  PyObject* scalar = ScalarToPython(v, &done);
  if (done) return scalar;
  switch (v.type_code) {
    case kTVMFFIStr:
      return PyUnicode_DecodeUTF8(v.v_str, static_cast<Py_ssize_t>(v.size), "replace");
    case kTVMFFIRefObject: {
      auto* ref = static_cast<TVMFFIRefObject*>(v.v_ptr);
      if (ref == nullptr) Py_RETURN_NONE;
      ref->type->inc_ref(ref);
      return WrapRef(ref, nullptr);
    }
    case kTVMFFIArray:
    case kTVMFFIMap:
      if (depth >= 64) {
        PyErr_SetString(PyExc_ValueError, "containers nested deeper than 64 levels");
        return nullptr;
      }
      return ArrayToPython(v, depth);
    case kTVMFFIDLTensorPtr:
      PyErr_SetString(PyExc_TypeError,
                      "a tensor argument cannot be passed to a Python function through the "
                      "registry (not supported yet)");
      return nullptr;
    default:
      break;
  }
  PyErr_Format(PyExc_TypeError,
               "an argument of type code %d cannot be passed to a Python function",
               static_cast<int>(v.type_code));
  return nullptr;
}

TVMFFIRefObject* NewPyFunctionRef(PyObject* callable);
TVMFFIRefObject* NewEntryRef(TVMFFIFunctionEntry entry);

// The reference an object-like Python value stands for (a new one), or NULL: with an error
// set, or without one when `obj` is not object-like.
TVMFFIRefObject* RefOf(PyObject* obj) {
  if (PyObject_TypeCheck(obj, g_object_type)) {
    TVMFFIRefObject* ref = reinterpret_cast<ObjectObject*>(obj)->ref;
    if (ref == nullptr) {
      PyErr_Format(PyExc_ValueError,
                   "the %s object was never constructed (its __init__ did not call "
                   "__ffi_init__)",
                   Py_TYPE(obj)->tp_name);
      return nullptr;
    }
    ref->type->inc_ref(ref);
    return ref;
  }
  if (IsFunction(obj)) {
    auto* f = reinterpret_cast<FunctionObject*>(obj);
    if (f->ref != nullptr) {
      f->ref->type->inc_ref(f->ref);
      return f->ref;
    }
    return NewEntryRef(f->entry);
  }
  if (PyCallable_Check(obj)) return NewPyFunctionRef(obj);
  return nullptr;
}

// The value a Python callable returned, as a result for C++.
int ReturnToResult(PyObject* obj, TVMFFIResult* result) {
  TVMFFIAny& v = result->value;
  v.flags = 0;
  v.size = 0;
  result->owner = nullptr;
  if (obj == Py_None) {
    v.type_code = kTVMFFINone;
    v.v_int64 = 0;
  } else if (PyBool_Check(obj)) {
    v.type_code = kTVMFFIBool;
    v.v_int64 = obj == Py_True ? 1 : 0;
  } else if (PyLong_Check(obj)) {
    int overflow = 0;
    const long long x = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (overflow != 0) {
      SetErrorResult(result, "OverflowError",
                     "a Python function returned an int that does not fit in 64 bits");
      return -1;
    }
    v.type_code = kTVMFFIInt;
    v.v_int64 = x;
  } else if (PyFloat_Check(obj)) {
    v.type_code = kTVMFFIFloat;
    v.v_float64 = PyFloat_AsDouble(obj);
  } else if (PyIndex_Check(obj) && !PyObject_TypeCheck(obj, g_object_type)) {
    // numpy integers and other __index__ types, as arguments accept them.
    PyObject* index = PyNumber_Index(obj);
    if (index == nullptr) {
      SetErrorFromPython(result);
      return -1;
    }
    const int rc = ReturnToResult(index, result);
    Py_DECREF(index);
    return rc;
  } else if (PyUnicode_Check(obj) || PyBytes_Check(obj)) {
    const bool is_str = PyUnicode_Check(obj);
    Py_ssize_t size = 0;
    char* data = nullptr;
    if (is_str) {
      data = const_cast<char*>(PyUnicode_AsUTF8AndSize(obj, &size));
    } else {
      PyBytes_AsStringAndSize(obj, &data, &size);
    }
    if (data == nullptr) {
      SetErrorFromPython(result);
      return -1;
    }
    auto* owned = new OwnedText();
    owned->deleter = OwnedText::Delete;
    owned->text.assign(data, static_cast<size_t>(size));
    v.type_code = is_str ? kTVMFFIStr : kTVMFFIBytes;
    v.v_str = owned->text.c_str();
    v.size = size;
    result->owner = owned;
  } else {
    TVMFFIRefObject* ref = RefOf(obj);
    if (ref == nullptr) {
      if (PyErr_Occurred()) {
        SetErrorFromPython(result);
      } else {
        SetErrorResult(result, "TypeError",
                       std::string("a Python function returned a ") + Py_TYPE(obj)->tp_name +
                           ", which has no C++ equivalent (None, bool, int, float, str, bytes "
                           "or an object)");
      }
      return -1;
    }
    v.type_code = kTVMFFIRefObject;
    v.v_ptr = ref;
  }
  return 0;
}

int PyFunctionCall(TVMFFIRefObject* self, const TVMFFICallContext*, const TVMFFIAny* args,
                   int32_t num_args, TVMFFIResult* result) {
  if (!PythonIsAlive()) {
    SetErrorResult(result, "RuntimeError", "a Python function was called after Python exited");
    return -1;
  }
  PyGILState_STATE gil = PyGILState_Ensure();
  int rc = -1;
  PyObject* tuple = PyTuple_New(num_args);
  for (int32_t i = 0; tuple != nullptr && i < num_args; ++i) {
    PyObject* item = ArgToPython(args[i], 0);
    if (item == nullptr) {
      Py_CLEAR(tuple);
      break;
    }
    PyTuple_SET_ITEM(tuple, i, item);
  }
  PyObject* out =
      tuple != nullptr ? PyObject_Call(static_cast<PyFunctionRef*>(self)->callable, tuple, nullptr)
                       : nullptr;
  Py_XDECREF(tuple);
  if (out == nullptr) {
    SetErrorFromPython(result);
  } else {
    rc = ReturnToResult(out, result);
    Py_DECREF(out);
  }
  PyGILState_Release(gil);
  return rc;
}

const TVMFFIObjectType kPyFunctionType = {
    TVM_FFI_ABI_VERSION, TVM_FFI_OBJECT_IS_FUNCTION, "ffi.Function", PyFunctionIncRef,
    PyFunctionDecRef,    PyFunctionCall,             nullptr,
};

TVMFFIRefObject* NewPyFunctionRef(PyObject* callable) {
  auto* f = new PyFunctionRef();
  f->type = &kPyFunctionType;
  Py_INCREF(callable);
  f->callable = callable;
  return f;
}

void EntryIncRef(TVMFFIRefObject* self) {
  static_cast<EntryRef*>(self)->refs.fetch_add(1, std::memory_order_relaxed);
}

void EntryDecRef(TVMFFIRefObject* self) {
  auto* e = static_cast<EntryRef*>(self);
  if (e->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete e;
}

int EntryCall(TVMFFIRefObject* self, const TVMFFICallContext* ctx, const TVMFFIAny* args,
              int32_t num_args, TVMFFIResult* result) {
  return static_cast<EntryRef*>(self)->entry(ctx, args, num_args, result);
}

const TVMFFIObjectType kEntryType = {
    TVM_FFI_ABI_VERSION, TVM_FFI_OBJECT_IS_FUNCTION, "ffi.Function", EntryIncRef, EntryDecRef,
    EntryCall,           nullptr,
};

TVMFFIRefObject* NewEntryRef(TVMFFIFunctionEntry entry) {
  auto* e = new EntryRef();
  e->type = &kEntryType;
  e->entry = entry;
  return e;
}

void ReleaseRef(void* ptr) {
  auto* ref = static_cast<TVMFFIRefObject*>(ptr);
  ref->type->dec_ref(ref);
}

// ---- _core functions ------------------------------------------------------------------------

PyObject* RegisterObjectClass(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2 || !PyUnicode_Check(args[0]) || !PyType_Check(args[1]) ||
      !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(args[1]), g_object_type)) {
    PyErr_SetString(PyExc_TypeError,
                    "_register_object_class(type_key: str, cls: type[tvm_ffi.Object])");
    return nullptr;
  }
  if (CNameOf(args[0]) == nullptr) {  // the registry is asked by this key as a C string
    if (!PyErr_Occurred()) {
      PyErr_Format(PyExc_ValueError, "register_object: the type key %R holds a NUL byte",
                   args[0]);
    }
    return nullptr;
  }
  if (PyDict_SetItem(g_object_classes, args[0], args[1]) != 0) return nullptr;
  Py_RETURN_NONE;
}

PyObject* GetGlobalFunc(PyObject*, PyObject* arg) {
  if (!PyUnicode_Check(arg)) {
    PyErr_Format(PyExc_TypeError, "get_global_func: function names are str, not %s",
                 Py_TYPE(arg)->tp_name);
    return nullptr;
  }
  const char* name = CNameOf(arg);
  if (name == nullptr) {
    if (!PyErr_Occurred()) {
      PyErr_Format(PyExc_ValueError, "get_global_func: the name %R holds a NUL byte", arg);
    }
    return nullptr;
  }
  const RegistryApi* api = EnsureRegistry();
  if (api == nullptr) return nullptr;
  return WrapRef(api->get_global(name), name);
}

PyObject* RegisterGlobalFunc(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 3 || !PyUnicode_Check(args[0])) {
    PyErr_SetString(PyExc_TypeError, "_register_global_func(name: str, f, override: bool)");
    return nullptr;
  }
  const char* name = CNameOf(args[0]);
  if (name == nullptr) {
    if (!PyErr_Occurred()) {
      PyErr_Format(PyExc_ValueError, "register_global_func: the name %R holds a NUL byte",
                   args[0]);
    }
    return nullptr;
  }
  const int allow_override = PyObject_IsTrue(args[2]);
  if (allow_override < 0) return nullptr;
  const RegistryApi* api = EnsureRegistry();
  if (api == nullptr) return nullptr;
  TVMFFIRefObject* ref = RefOf(args[1]);
  if (ref == nullptr) {
    if (!PyErr_Occurred()) {
      PyErr_Format(PyExc_TypeError,
                   "register_global_func('%s'): a %s is not callable, so it cannot be a function",
                   name, Py_TYPE(args[1])->tp_name);
    }
    return nullptr;
  }
  if ((ref->type->flags & TVM_FFI_OBJECT_IS_FUNCTION) == 0 || ref->type->call == nullptr) {
    PyErr_Format(PyExc_TypeError,
                 "register_global_func('%s'): a '%s' object is not a function", name,
                 ref->type->type_key != nullptr ? ref->type->type_key : "");
    ref->type->dec_ref(ref);
    return nullptr;
  }
  const int rc = api->set_global(name, ref, allow_override);
  ref->type->dec_ref(ref);  // the registry holds its own reference
  if (rc != 0) {
    PyErr_Format(PyExc_ValueError,
                 "register_global_func: a global function named '%s' is already registered "
                 "(pass override=True to replace it)",
                 name);
    return nullptr;
  }
  Py_RETURN_NONE;
}

void AppendName(const char* name, void* handle) {
  PyObject* list = static_cast<PyObject*>(handle);
  PyObject* str = PyUnicode_FromString(name);
  // A failure leaves the error set; the caller checks after the visit.
  if (str != nullptr && !PyErr_Occurred()) PyList_Append(list, str);
  Py_XDECREF(str);
}

PyObject* ListGlobalFuncNames(PyObject*, PyObject*) {
  const RegistryApi* api = EnsureRegistry();
  if (api == nullptr) return nullptr;
  PyObject* list = PyList_New(0);
  if (list == nullptr) return nullptr;
  api->list_globals(AppendName, list);
  if (PyErr_Occurred()) Py_CLEAR(list);
  return list;
}

PyMethodDef kCoreFunctions[] = {
    {"_register_object_class",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void*>(RegisterObjectClass)), METH_FASTCALL,
     "Results of this type key become instances of the class."},
    {"_get_global_func", GetGlobalFunc, METH_O,
     "The function registered under the name, or None."},
    {"_register_global_func",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void*>(RegisterGlobalFunc)), METH_FASTCALL,
     "Register a callable under a name in the process-wide registry."},
    {"_list_global_func_names", ListGlobalFuncNames, METH_NOARGS,
     "Names of the registered global functions, sorted."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

const RegistryApi* EnsureRegistry() {
  if (g_registry_loaded) return &g_registry;
  // tvm_ffi.config (what libinfo.find_libtvm_ffi answers with): a JIT cache hit has it loaded.
  PyObject* config = PyImport_ImportModule("tvm_ffi.config");
  PyObject* path_obj =
      config != nullptr ? PyObject_CallMethod(config, "get_libtvm_ffi_path", nullptr) : nullptr;
  Py_XDECREF(config);
  const char* path = path_obj != nullptr ? PyUnicode_AsUTF8(path_obj) : nullptr;
  if (path == nullptr) {
    Py_XDECREF(path_obj);
    return nullptr;
  }
  // RTLD_GLOBAL: libraries loaded later (RTLD_LOCAL themselves) resolve their weak references
  // to the registry against it; it also satisfies a DT_NEEDED libtvm_ffi.so by its soname.
  void* handle = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  RegistryApi api;
  bool ok = handle != nullptr;
  if (!ok) {
    const char* why = dlerror();
    PyErr_Format(PyExc_OSError, "cannot load '%s': %s", path, why ? why : "unknown dlopen error");
  }
  ok = ok && FindSymbol(handle, "TVMFFIFunctionSetGlobal", &api.set_global, path) &&
       FindSymbol(handle, "TVMFFIFunctionGetGlobal", &api.get_global, path) &&
       FindSymbol(handle, "TVMFFIFunctionListGlobalNames", &api.list_globals, path) &&
       FindSymbol(handle, "TVMFFITypeSetMember", &api.set_member, path) &&
       FindSymbol(handle, "TVMFFITypeGetMember", &api.get_member, path) &&
       FindSymbol(handle, "TVMFFIInitErrorsTake", &api.take_init_errors, path);
  Py_DECREF(path_obj);
  if (!ok) return nullptr;
  g_registry = api;
  g_registry_loaded = true;
  return &g_registry;
}

PyTypeObject* InitObjectType() {
  if (g_object_type == nullptr) {
    g_object_classes = PyDict_New();
    if (g_object_classes == nullptr) return nullptr;
    g_object_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&kObjectSpec));
  }
  return g_object_type;
}

PyObject* WrapRef(TVMFFIRefObject* ref, const char* name) {
  if (ref == nullptr) Py_RETURN_NONE;
  if (ref->type == &kPyFunctionType) {  // a Python callable comes home as itself
    PyObject* callable = static_cast<PyFunctionRef*>(ref)->callable;
    Py_INCREF(callable);
    ref->type->dec_ref(ref);
    return callable;
  }
  const char* type_key = ref->type->type_key != nullptr ? ref->type->type_key : "";
  if ((ref->type->flags & TVM_FFI_OBJECT_IS_FUNCTION) != 0 && ref->type->call != nullptr) {
    return NewRefFunction(ref, name != nullptr ? name : type_key);
  }
  PyTypeObject* cls = g_object_type;
  PyObject* registered = PyDict_GetItemString(g_object_classes, type_key);  // borrowed
  if (registered != nullptr) cls = reinterpret_cast<PyTypeObject*>(registered);
  // tp_alloc, not the class: a result is never passed through the class's __new__/__init__.
  PyObject* self = cls->tp_alloc(cls, 0);
  if (self == nullptr) {
    ref->type->dec_ref(ref);
    return nullptr;
  }
  reinterpret_cast<ObjectObject*>(self)->ref = ref;
  return self;
}

int ObjectArg(CallFrame* frame, PyObject* obj, TVMFFIAny* out) {
  if (g_object_type == nullptr) return 1;
  TVMFFIRefObject* ref = nullptr;
  if (PyObject_TypeCheck(obj, g_object_type)) {
    ref = reinterpret_cast<ObjectObject*>(obj)->ref;
    if (ref == nullptr) {
      PyErr_Format(PyExc_ValueError,
                   "%s() argument %d: the %s object was never constructed (its __init__ did "
                   "not call __ffi_init__)",
                   frame->func->name, frame->position, Py_TYPE(obj)->tp_name);
      return -1;
    }
  } else if (IsFunction(obj) && reinterpret_cast<FunctionObject*>(obj)->ref != nullptr) {
    ref = reinterpret_cast<FunctionObject*>(obj)->ref;
  } else if (IsFunction(obj) || PyCallable_Check(obj)) {
    // A function object made for this call; the callee takes its own reference to keep it.
    ref = RefOf(obj);
    if (ref == nullptr) return -1;
    frame->cleanups.push_back(Cleanup{ReleaseRef, ref, nullptr});
  } else {
    return 1;
  }
  out->type_code = kTVMFFIRefObject;
  out->flags = 0;
  out->v_ptr = ref;
  out->size = 0;
  return 0;
}

int AddObjectFunctions(PyObject* module) { return PyModule_AddFunctions(module, kCoreFunctions); }

}  // namespace tvm_ffi_py
