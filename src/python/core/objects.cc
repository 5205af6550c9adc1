// The Object wrapper (any handle, with its type key) and what every wrapper shares; Tensor is in
// tensor_type.cc, Module in module_type.cc, registered classes in object_classes.cc.
#include "core.h"

namespace tvm_ffi_next {

PyTypeObject* g_object_type = nullptr;
PyTypeObject* g_tensor_type = nullptr;
PyTypeObject* g_module_type = nullptr;

namespace {

void ObjectDealloc(PyObject* self_obj) {
  auto* self = reinterpret_cast<ObjectWrapper*>(self_obj);
  PyTypeObject* type = Py_TYPE(self_obj);
  DecRef(self->handle);
  Py_XDECREF(self->extra);
  Py_XDECREF(self->functions);
  type->tp_free(self_obj);
  Py_DECREF(type);
}

PyObject* TypeKey(PyObject* self, void*) {
  TVMFFIObject* h = reinterpret_cast<ObjectWrapper*>(self)->handle;
  if (h == nullptr) Py_RETURN_NONE;
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(h->type_index);
  return PyUnicode_FromStringAndSize(info->type_key.data,
                                     static_cast<Py_ssize_t>(info->type_key.size));
}

PyObject* TypeIndex(PyObject* self, void*) {
  TVMFFIObject* h = reinterpret_cast<ObjectWrapper*>(self)->handle;
  return PyLong_FromLong(h != nullptr ? h->type_index : -1);
}

PyObject* ObjectChandle(PyObject* self, PyObject*) {
  return PyLong_FromVoidPtr(reinterpret_cast<ObjectWrapper*>(self)->handle);
}

PyObject* SameAs(PyObject* self, PyObject* other) {
  return PyBool_FromLong(WrapperHandle(other) == reinterpret_cast<ObjectWrapper*>(self)->handle);
}

PyObject* ObjectRepr(PyObject* self) {
  if (reinterpret_cast<ObjectWrapper*>(self)->handle == nullptr) {
    return PyUnicode_FromFormat("<%s (not constructed)>", _PyType_Name(Py_TYPE(self)));
  }
  PyObject* key = TypeKey(self, nullptr);
  if (key == nullptr) return nullptr;
  PyObject* out = PyUnicode_FromFormat("<%s %R at %p>", Py_TYPE(self)->tp_name, key,
                                       reinterpret_cast<ObjectWrapper*>(self)->handle);
  Py_DECREF(key);
  return out;
}

// Two wrappers of one C++ object are equal and hash alike (a callback gets a new wrapper).
PyObject* ObjectCompare(PyObject* self, PyObject* other, int op) {
  if ((op != Py_EQ && op != Py_NE) || !PyObject_TypeCheck(other, g_object_type)) {
    Py_RETURN_NOTIMPLEMENTED;
  }
  const bool same = reinterpret_cast<ObjectWrapper*>(self)->handle ==
                    reinterpret_cast<ObjectWrapper*>(other)->handle;
  return PyBool_FromLong(op == Py_EQ ? same : !same);
}

Py_hash_t ObjectHash(PyObject* self) {
  const auto bits = reinterpret_cast<uintptr_t>(reinterpret_cast<ObjectWrapper*>(self)->handle);
  const auto hash = static_cast<Py_hash_t>(bits >> 4);  // objects are 8-byte aligned at least
  return hash == -1 ? -2 : hash;
}

PyMethodDef kObjectMethods[] = {
    {"__chandle__", ObjectChandle, METH_NOARGS, "The object's address."},
    {"same_as", SameAs, METH_O, "Whether both wrap the same object."},
    {"__ffi_init__", reinterpret_cast<PyCFunction>(reinterpret_cast<void*>(FfiInit)), METH_FASTCALL,
     "Constructs the C++ object through its type's registered __ffi_init__."},
    {nullptr, nullptr, 0, nullptr},
};
PyGetSetDef kObjectGetSet[] = {
    {"type_key", TypeKey, nullptr, "The registered type key ('ffi.Array', ...).", nullptr},
    {"type_index", TypeIndex, nullptr, "The runtime's type index.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};
PyType_Slot kObjectSlots[] = {
    {Py_tp_dealloc, reinterpret_cast<void*>(ObjectDealloc)},
    {Py_tp_new, reinterpret_cast<void*>(ObjectNew)},
    {Py_tp_getattro, reinterpret_cast<void*>(ObjectGetAttr)},
    {Py_tp_setattro, reinterpret_cast<void*>(ObjectSetAttr)},
    {Py_tp_repr, reinterpret_cast<void*>(ObjectRepr)},
    {Py_tp_richcompare, reinterpret_cast<void*>(ObjectCompare)},
    {Py_tp_hash, reinterpret_cast<void*>(ObjectHash)},
    {Py_tp_methods, kObjectMethods},
    {Py_tp_getset, kObjectGetSet},
    {0, nullptr},
};
PyType_Spec kObjectSpec = {"tvm_ffi.Object", sizeof(ObjectWrapper), 0,
                           Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, kObjectSlots};

PyTypeObject* MakeType(PyObject* module, PyType_Spec* spec, PyTypeObject* base, const char* name) {
  PyObject* bases = base != nullptr ? PyTuple_Pack(1, base) : nullptr;
  auto* type = reinterpret_cast<PyTypeObject*>(PyType_FromSpecWithBases(spec, bases));
  Py_XDECREF(bases);
  if (type == nullptr) return nullptr;
  if (base != nullptr) {
    type->tp_new = nullptr;  // Tensor(), Module(): wrappers come only from the runtime
    PyType_Modified(type);
  }
  Py_INCREF(type);
  if (PyModule_AddObject(module, name, reinterpret_cast<PyObject*>(type)) != 0) return nullptr;
  return type;
}

}  // namespace

int InitObjectTypes(PyObject* module) {
  g_object_type = MakeType(module, &kObjectSpec, nullptr, "Object");
  if (g_object_type == nullptr) return -1;
  g_tensor_type = MakeType(module, &kTensorSpec, g_object_type, "Tensor");
  g_module_type = MakeType(module, &kModuleSpec, g_object_type, "Module");
  return g_tensor_type != nullptr && g_module_type != nullptr ? 0 : -1;
}

PyObject* NewObjectWrapper(PyTypeObject* type, TVMFFIObject* handle) {
  // tp_alloc: a registered Python subclass may have a __dict__ and take part in GC.
  auto* self = reinterpret_cast<ObjectWrapper*>(type->tp_alloc(type, 0));
  if (self == nullptr) {
    DecRef(handle);
    return nullptr;
  }
  self->handle = handle;
  self->extra = nullptr;
  self->functions = nullptr;
  return reinterpret_cast<PyObject*>(self);
}

TVMFFIObject* WrapperHandle(PyObject* obj) {
  if (PyObject_TypeCheck(obj, g_function_type)) {
    return reinterpret_cast<FunctionObject*>(obj)->handle;
  }
  if (PyObject_TypeCheck(obj, g_object_type)) return reinterpret_cast<ObjectWrapper*>(obj)->handle;
  return nullptr;
}

}  // namespace tvm_ffi_next
