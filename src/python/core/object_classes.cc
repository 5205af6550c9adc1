// Python classes for the runtime's object types (tvm_ffi.register_object): the class registered
// for a type key (or its nearest registered ancestor's) wraps results of that type;
// `__ffi_init__` constructs through the type's registered "__ffi_init__" method; unknown
// attributes are the type's registered methods (TVMFFITypeInfo.methods, ancestors included);
// registered fields read through their getter and assign through their setter.
#include <string>

#include "core.h"

namespace tvm_ffi_next {
namespace {

PyObject* g_classes = nullptr;          // dict: type key -> class
std::vector<PyTypeObject*> g_by_index;  // borrowed from g_classes; NULL: not resolved yet

PyObject* KeyOf(const TVMFFITypeInfo* info) {
  return PyUnicode_DecodeUTF8(info->type_key.data, static_cast<Py_ssize_t>(info->type_key.size),
                              "replace");
}

PyTypeObject* BuiltinClass(int32_t index) {
  if (index == kTVMFFITensor) return g_tensor_type;
  if (index == kTVMFFIModule) return g_module_type;
  return g_object_type;
}

// The class for a type index: its own key's, else the nearest ancestor's, else the builtin one.
PyTypeObject* ClassForIndex(int32_t index) {
  if (index >= 0 && static_cast<size_t>(index) < g_by_index.size() && g_by_index[index]) {
    return g_by_index[index];
  }
  PyTypeObject* found = nullptr;
  const TVMFFITypeInfo* info = g_classes != nullptr ? TVMFFIGetTypeInfo(index) : nullptr;
  for (int32_t depth = info != nullptr ? info->type_depth : -1; depth >= 0 && !found; --depth) {
    const TVMFFITypeInfo* at = depth == info->type_depth ? info : info->type_ancestors[depth];
    PyObject* key = at != nullptr ? KeyOf(at) : nullptr;
    PyObject* cls = key != nullptr ? PyDict_GetItemWithError(g_classes, key) : nullptr;
    Py_XDECREF(key);
    if (cls != nullptr) found = reinterpret_cast<PyTypeObject*>(cls);
  }
  PyErr_Clear();
  if (found == nullptr) found = BuiltinClass(index);
  if (index >= 0 && index < (1 << 20)) {
    if (static_cast<size_t>(index) >= g_by_index.size()) g_by_index.resize(index + 1, nullptr);
    g_by_index[index] = found;
  }
  return found;
}

// The first entry named `name` that `usable` accepts among `members(type)` of the type, then of
// its ancestors nearest first (the type alone with own_type_only); NULL when none.
template <typename Info, typename Members, typename Usable>
const Info* FindInTypeChain(int32_t index, const char* name, bool own_type_only, Members members,
                            Usable usable) {
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(index);
  const size_t size = std::strlen(name);
  for (int32_t depth = info != nullptr ? info->type_depth : -1; depth >= 0; --depth) {
    const TVMFFITypeInfo* at = depth == info->type_depth ? info : info->type_ancestors[depth];
    int32_t count = 0;
    const Info* entries = at != nullptr ? members(at, &count) : nullptr;
    for (int32_t i = 0; i < count; ++i) {
      const Info& e = entries[i];
      if (e.name.size == size && std::memcmp(e.name.data, name, size) == 0 && usable(e)) return &e;
    }
    if (own_type_only) break;
  }
  return nullptr;
}

// The registered member `name` of the object's type or an ancestor; NULL when none.
const TVMFFIMethodInfo* FindMethod(int32_t index, const char* name, bool own_type_only) {
  return FindInTypeChain<TVMFFIMethodInfo>(
      index, name, own_type_only,
      [](const TVMFFITypeInfo* t, int32_t* n) {
        *n = t->num_methods;
        return t->methods;
      },
      [](const TVMFFIMethodInfo& m) { return m.method.type_index == kTVMFFIFunction; });
}

// The field `name` of the type or an ancestor (def_ro/def_rw), or NULL.
const TVMFFIFieldInfo* FindField(int32_t index, const char* name) {
  return FindInTypeChain<TVMFFIFieldInfo>(
      index, name, false,
      [](const TVMFFITypeInfo* t, int32_t* n) {
        *n = t->num_fields;
        return t->fields;
      },
      [](const TVMFFIFieldInfo& f) { return f.getter != nullptr; });
}

}  // namespace

PyObject* ObjectNew(PyTypeObject* type, PyObject*, PyObject*) {
  // Any arguments: they are __init__'s (sglang's lazy __new__ forwards them here).
  if (PyType_IsSubtype(type, g_tensor_type) || PyType_IsSubtype(type, g_module_type)) {
    PyErr_Format(PyExc_TypeError,
                 "%s objects come from the runtime (load_module, from_dlpack, results), not "
                 "from a constructor",
                 type->tp_name);
    return nullptr;
  }
  auto* self = reinterpret_cast<ObjectWrapper*>(type->tp_alloc(type, 0));
  if (self == nullptr) return nullptr;
  self->handle = nullptr;
  self->extra = nullptr;
  self->functions = nullptr;
  return reinterpret_cast<PyObject*>(self);
}

PyObject* FfiInit(PyObject* self_obj, PyObject* const* args, Py_ssize_t nargs) {
  PyTypeObject* type = Py_TYPE(self_obj);
  PyObject* key = PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), "__tvm_ffi_type_key__");
  if (key == nullptr || !PyUnicode_Check(key)) {
    Py_XDECREF(key);
    PyErr_Format(PyExc_TypeError,
                 "__ffi_init__: class %s has no C++ type; decorate it with "
                 "@tvm_ffi.register_object(\"<type key>\")",
                 type->tp_name);
    return nullptr;
  }
  Py_ssize_t size = 0;
  const char* text = PyUnicode_AsUTF8AndSize(key, &size);
  TVMFFIByteArray array{text, static_cast<size_t>(size)};
  int32_t index = -1;
  const TVMFFIMethodInfo* init = nullptr;
  if (text != nullptr && TVMFFITypeKeyToIndex(&array, &index) == 0) {
    init = FindMethod(index, "__ffi_init__", true);
  } else {
    TVMFFIObjectHandle error = nullptr;  // an unknown key: said below
    TVMFFIErrorMoveFromRaised(&error);
    DecRef(static_cast<TVMFFIObject*>(error));
  }
  if (init == nullptr) {
    PyErr_Format(PyExc_TypeError,
                 "__ffi_init__: type '%U' has no registered constructor (no loaded library "
                 "registered it, or it has no __ffi_init__)",
                 key);
    Py_DECREF(key);
    return nullptr;
  }
  Py_DECREF(key);
  TVMFFIObjectIncRef(init->method.v_obj);
  PyObject* name = PyUnicode_FromString("__ffi_init__");
  PyObject* ctor = NewFunction(init->method.v_obj, name, nullptr);
  Py_XDECREF(name);
  PyObject* made = ctor != nullptr ? PyObject_Vectorcall(ctor, args, nargs, nullptr) : nullptr;
  Py_XDECREF(ctor);
  if (made == nullptr) return nullptr;
  TVMFFIObject* handle = WrapperHandle(made);
  if (handle == nullptr) {
    PyErr_Format(PyExc_TypeError, "__ffi_init__ of %s returned %s, not an object", type->tp_name,
                 Py_TYPE(made)->tp_name);
    Py_DECREF(made);
    return nullptr;
  }
  TVMFFIObjectIncRef(handle);
  Py_DECREF(made);
  auto* self = reinterpret_cast<ObjectWrapper*>(self_obj);
  TVMFFIObject* old = self->handle;
  self->handle = handle;
  DecRef(old);
  Py_RETURN_NONE;
}

PyObject* ObjectGetAttr(PyObject* self, PyObject* name) {
  PyObject* found = PyObject_GenericGetAttr(self, name);
  TVMFFIObject* handle = reinterpret_cast<ObjectWrapper*>(self)->handle;
  if (found != nullptr || handle == nullptr || !PyErr_ExceptionMatches(PyExc_AttributeError)) {
    return found;
  }
  Py_ssize_t size = 0;
  const char* text = PyUnicode_AsUTF8AndSize(name, &size);
  if (text == nullptr) return nullptr;
  if (static_cast<size_t>(size) != std::strlen(text)) {
    PyErr_Clear();
    PyErr_Format(PyExc_AttributeError,
                 "'%s' object has no attribute %R (the name holds a NUL byte)",
                 Py_TYPE(self)->tp_name, name);
    return nullptr;
  }
  const TVMFFIMethodInfo* method = FindMethod(handle->type_index, text, false);
  if (method == nullptr) {
    // A registered field (as apache-tvm-ffi's classes expose def_ro/def_rw): its getter's value.
    const TVMFFIFieldInfo* field = FindField(handle->type_index, text);
    if (field == nullptr) return nullptr;  // keep the AttributeError
    PyErr_Clear();
    TVMFFIAny value{};
    value.type_index = kTVMFFINone;
    void* address = reinterpret_cast<char*>(handle) + field->offset;
    const int rc = field->getter(address, &value);
    if (rc != 0) {
      RaiseCallError(rc, text, nullptr);
      return nullptr;
    }
    return ToPython(&value, nullptr);
  }
  PyErr_Clear();
  TVMFFIObjectIncRef(method->method.v_obj);
  PyObject* func = NewFunction(method->method.v_obj, name, nullptr);
  if (func == nullptr || (method->flags & kTVMFFIFieldFlagBitMaskIsStaticMethod) != 0) return func;
  PyObject* bound = PyMethod_New(func, self);
  Py_DECREF(func);
  return bound;
}

namespace {

// "<type key>.<field>": the subject of a field's messages.
std::string FieldSubject(const TVMFFIObject* handle, const char* name) {
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(handle->type_index);
  std::string subject =
      info != nullptr ? std::string(info->type_key.data, info->type_key.size) : "object";
  return subject + "." + name;
}

// The setter's error, worded for the field: the headers' setter names itself ("field setter()
// argument 1 must be int, not str"), which becomes "<type key>.<field> must be int, not str";
// another setter's message follows the subject after a colon.
void RewordSetterError(const std::string& subject) {
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  PyObject* text = value != nullptr ? PyObject_Str(value) : nullptr;
  const char* message = text != nullptr ? PyUnicode_AsUTF8(text) : nullptr;
  PyObject* reworded = nullptr;
  if (message != nullptr) {
    static constexpr char kOwnSubject[] = "field setter() argument 1";
    const size_t own = sizeof(kOwnSubject) - 1;
    const bool ours = std::strncmp(message, kOwnSubject, own) == 0;
    const std::string full =
        ours ? subject + (message + own) : subject + ": " + std::string(message);
    PyObject* arg = PyUnicode_FromStringAndSize(full.data(), static_cast<Py_ssize_t>(full.size()));
    reworded = arg != nullptr ? PyObject_CallOneArg(type, arg) : nullptr;
    Py_XDECREF(arg);
  }
  Py_XDECREF(text);
  if (reworded == nullptr) {  // a class that cannot be made from a message: the original
    PyErr_Clear();
    PyErr_Restore(type, value, traceback);
    return;
  }
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(reworded)), reworded);
  Py_DECREF(reworded);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(traceback);
}

// Assigns a registered field through its setter: the value converted as an argument is, then the
// setter converts it to the field's type. 0, or -1 with a Python error set.
int SetField(TVMFFIObject* handle, const TVMFFIFieldInfo* field, const char* name,
             PyObject* value) {
  const std::string subject = FieldSubject(handle, name);
  if (value == nullptr) {
    PyErr_Format(PyExc_AttributeError, "%s is a registered field and cannot be deleted",
                 subject.c_str());
    return -1;
  }
  if ((field->flags & kTVMFFIFieldFlagBitMaskWritable) == 0 || field->setter == nullptr) {
    PyErr_Format(PyExc_AttributeError, "%s is read-only (registered with def_ro)", subject.c_str());
    return -1;
  }
  ArgFrame frame;
  frame.name = subject.c_str();  // position 0: conversion errors name the field alone
  TVMFFIAny any{};
  DLTensor view{};
  if (ConvertArg(&frame, value, &any, &view, 0) != 0) return -1;
  void* address = reinterpret_cast<char*>(handle) + field->offset;
  int rc;
  if ((field->flags & kTVMFFIFieldFlagBitSetterIsFunctionObj) != 0) {
    // A Function setter takes (the field's address, the value).
    TVMFFIAny args[2]{};
    args[0].type_index = kTVMFFIOpaquePtr;
    args[0].v_ptr = address;
    args[1] = any;
    TVMFFIAny ignored{};
    ignored.type_index = kTVMFFINone;
    rc = TVMFFIFunctionCall(field->setter, args, 2, &ignored);
    if (rc == 0 && IsObjectIndex(ignored.type_index)) DecRef(ignored.v_obj);
  } else {
    rc = reinterpret_cast<TVMFFIFieldSetter>(field->setter)(address, &any);
  }
  if (rc == 0) return 0;
  RaiseCallError(rc, nullptr, nullptr);
  RewordSetterError(subject);
  return -1;
}

}  // namespace

int ObjectSetAttr(PyObject* self, PyObject* name, PyObject* value) {
  TVMFFIObject* handle = reinterpret_cast<ObjectWrapper*>(self)->handle;
  if (handle == nullptr || !PyUnicode_Check(name)) {
    return PyObject_GenericSetAttr(self, name, value);
  }
  // A data descriptor of the Python class (a property, a slot) comes first, as for any class.
  PyObject* descr = _PyType_Lookup(Py_TYPE(self), name);
  if (descr != nullptr && Py_TYPE(descr)->tp_descr_set != nullptr) {
    return PyObject_GenericSetAttr(self, name, value);
  }
  Py_ssize_t size = 0;
  const char* text = PyUnicode_AsUTF8AndSize(name, &size);
  if (text == nullptr) return -1;
  const TVMFFIFieldInfo* field = static_cast<size_t>(size) == std::strlen(text)
                                     ? FindField(handle->type_index, text)
                                     : nullptr;
  if (field == nullptr) return PyObject_GenericSetAttr(self, name, value);
  return SetField(handle, field, text, value);
}

PyObject* RegisterObjectClass(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2 || !PyUnicode_Check(args[0]) || !PyType_Check(args[1]) ||
      !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(args[1]), g_object_type)) {
    PyErr_SetString(PyExc_TypeError,
                    "_register_object_class(type_key, cls) takes a str and a subclass of "
                    "tvm_ffi.Object");
    return nullptr;
  }
  if (g_classes == nullptr && (g_classes = PyDict_New()) == nullptr) return nullptr;
  if (PyDict_SetItem(g_classes, args[0], args[1]) != 0) return nullptr;
  g_by_index.clear();  // a new class may be the nearest one of types resolved before
  Py_RETURN_NONE;
}

PyTypeObject* ModuleClass() {
#ifndef TVM_FFI_PYCORE_NAME
  // The package's own core: modules are tvm_ffi.module.Module (it registers itself on import),
  // also those a function returns before anything imported tvm_ffi.module.
  static bool imported = false;
  if (!imported) {
    imported = true;
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyObject* module = PyImport_ImportModule("tvm_ffi.module");
    Py_XDECREF(module);
    PyErr_Clear();  // without it modules stay tvm_ffi._core.Module: usable, unlisted
    PyErr_Restore(type, value, traceback);
  }
#endif
  return ClassForIndex(kTVMFFIModule);
}

PyObject* WrapObject(TVMFFIObject* handle) {
  PyTypeObject* type = ClassForIndex(handle->type_index);
  return NewObjectWrapper(type, handle);
}

}  // namespace tvm_ffi_next
