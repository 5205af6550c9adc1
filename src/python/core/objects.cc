// Object wrappers: Object (any handle, with its type key), Tensor (a TensorObj, exported by
// DLPack) and Module (a loaded library: attributes and items are its functions).
#include <sys/stat.h>

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
  PyObject* key = TypeKey(self, nullptr);
  if (key == nullptr) return nullptr;
  PyObject* out = PyUnicode_FromFormat("<%s %S at %p>", Py_TYPE(self)->tp_name, key,
                                       reinterpret_cast<ObjectWrapper*>(self)->handle);
  Py_DECREF(key);
  return out;
}

PyMethodDef kObjectMethods[] = {
    {"__chandle__", ObjectChandle, METH_NOARGS, "The object's address."},
    {"same_as", SameAs, METH_O, "Whether both wrap the same object."},
    {nullptr, nullptr, 0, nullptr},
};
PyGetSetDef kObjectGetSet[] = {
    {"type_key", TypeKey, nullptr, "The registered type key ('ffi.Array', ...).", nullptr},
    {"type_index", TypeIndex, nullptr, "The runtime's type index.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};
PyType_Slot kObjectSlots[] = {
    {Py_tp_dealloc, reinterpret_cast<void*>(ObjectDealloc)},
    {Py_tp_repr, reinterpret_cast<void*>(ObjectRepr)},
    {Py_tp_methods, kObjectMethods},
    {Py_tp_getset, kObjectGetSet},
    {0, nullptr},
};
PyType_Spec kObjectSpec = {"tvm_ffi.Object", sizeof(ObjectWrapper), 0,
                           Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, kObjectSlots};

// ---- Tensor -------------------------------------------------------------------------------------

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

// __dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None): CPU memory needs no
// stream; a versioned capsule when the consumer accepts DLPack 1.x.
PyObject* TensorDLPack(PyObject* self, PyObject* args, PyObject* kwargs) {
  static const char* kKeywords[] = {"stream", "max_version", "dl_device", "copy", nullptr};
  PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO:__dlpack__", const_cast<char**>(kKeywords),
                                   &stream, &max_version, &dl_device, &copy)) {
    return nullptr;
  }
  TVMFFIObject* handle = reinterpret_cast<ObjectWrapper*>(self)->handle;
  long major = 0;
  if (max_version != Py_None) {
    PyObject* first = PySequence_GetItem(max_version, 0);
    if (first == nullptr) return nullptr;
    major = PyLong_AsLong(first);
    Py_DECREF(first);
    if (PyErr_Occurred()) return nullptr;
  }
  if (major >= 1) {
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
    {nullptr, nullptr, 0, nullptr},
};
PyGetSetDef kTensorGetSet[] = {
    {"shape", TensorShape, nullptr, "The shape, a tuple of ints.", nullptr},
    {"dtype", TensorDType, nullptr, "The element type as text ('float32').", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};
PyType_Slot kTensorSlots[] = {
    {Py_tp_methods, kTensorMethods},
    {Py_tp_getset, kTensorGetSet},
    {0, nullptr},
};
PyType_Spec kTensorSpec = {"tvm_ffi.Tensor", sizeof(ObjectWrapper), 0,
                           Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, kTensorSlots};

// ---- Module -------------------------------------------------------------------------------------

// The TensorView parameters of a function, from its metadata's type schema (bit i: param i).
// Libraries without metadata (apache's default) get 0: every tensor travels as a TensorObj.
uint64_t ViewParams(PyObject* metadata) {
  if (!PyUnicode_Check(metadata)) return 0;
  uint64_t bits = 0;
  PyObject* json = PyImport_ImportModule("json");
  PyObject* outer = json != nullptr ? PyObject_CallMethod(json, "loads", "O", metadata) : nullptr;
  PyObject* text = outer != nullptr && PyDict_Check(outer)
                       ? PyDict_GetItemString(outer, "type_schema")
                       : nullptr;  // borrowed
  PyObject* schema = text != nullptr && PyUnicode_Check(text)
                         ? PyObject_CallMethod(json, "loads", "O", text)
                         : nullptr;
  PyObject* named = schema != nullptr && PyDict_Check(schema)
                        ? PyDict_GetItemString(schema, "named_args")
                        : nullptr;
  PyObject* params =
      named != nullptr && PyDict_Check(named) ? PyDict_GetItemString(named, "params") : nullptr;
  if (params != nullptr && PyList_Check(params)) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(params) && i < 64; ++i) {
      PyObject* param = PyList_GET_ITEM(params, i);
      PyObject* type = PyDict_Check(param) ? PyDict_GetItemString(param, "type") : nullptr;
      const char* key = type != nullptr ? PyUnicode_AsUTF8(type) : nullptr;
      if (key != nullptr && std::strcmp(key, "DLTensor*") == 0) bits |= uint64_t{1} << i;
    }
  }
  Py_XDECREF(schema);
  Py_XDECREF(outer);
  Py_XDECREF(json);
  PyErr_Clear();  // metadata that cannot be read only costs the shortcut
  return bits;
}

// Calls a runtime global with (module, name, true): "ffi.ModuleGetFunction" and friends.
int ModuleQuery(PyObject* self, const char* global, PyObject* name, TVMFFIAny* out) {
  TVMFFIObject* fn = GetGlobal(global);
  if (fn == nullptr) {
    PyErr_Format(PyExc_RuntimeError, "the runtime has no global function '%s'", global);
    return -1;
  }
  ArgFrame frame;
  frame.name = global;
  TVMFFIAny args[3];
  args[0].type_index = kTVMFFIModule;
  args[0].zero_padding = 0;
  args[0].v_obj = reinterpret_cast<ObjectWrapper*>(self)->handle;
  args[2].type_index = kTVMFFIBool;
  args[2].zero_padding = 0;
  args[2].v_int64 = 1;  // query the imports too
  frame.position = 2;
  int rc = ConvertArg(&frame, name, &args[1], nullptr, 0);
  if (rc == 0) rc = CallHandle(fn, global, args, 3, out);
  DecRef(fn);
  return rc;
}

PyObject* GetFunction(PyObject* self, PyObject* name) {
  if (!PyUnicode_Check(name)) {
    PyErr_Format(PyExc_TypeError, "a function name must be a str, got %s", Py_TYPE(name)->tp_name);
    return nullptr;
  }
  // Looked up once per module: `m.f(...)` in a loop must not query the runtime each time.
  auto* wrapper = reinterpret_cast<ObjectWrapper*>(self);
  if (wrapper->functions != nullptr) {
    PyObject* cached = PyDict_GetItemWithError(wrapper->functions, name);
    if (cached != nullptr) return Py_NewRef(cached);
    if (PyErr_Occurred()) return nullptr;
  }
  PyObject* library = wrapper->extra;
  TVMFFIAny out;
  if (ModuleQuery(self, "ffi.ModuleGetFunction", name, &out) != 0) return nullptr;
  if (out.type_index != kTVMFFIFunction) {
    if (IsObjectIndex(out.type_index)) DecRef(out.v_obj);
    if (library != nullptr) {
      PyErr_Format(PyExc_AttributeError, "library '%U' has no function '%U'", library, name);
    } else {
      PyErr_Format(PyExc_AttributeError, "the module has no function '%U'", name);
    }
    return nullptr;
  }
  PyObject* func = NewFunction(out.v_obj, name, library);
  if (func == nullptr) return nullptr;
  TVMFFIAny meta;
  if (ModuleQuery(self, "ffi.ModuleGetFunctionMetadata", name, &meta) == 0) {
    PyObject* text = ToPython(&meta, nullptr);
    if (text != nullptr) reinterpret_cast<FunctionObject*>(func)->view_params = ViewParams(text);
    Py_XDECREF(text);
  }
  PyErr_Clear();  // no metadata: no shortcut
  if (wrapper->functions == nullptr) wrapper->functions = PyDict_New();
  if (wrapper->functions == nullptr || PyDict_SetItem(wrapper->functions, name, func) != 0) {
    Py_DECREF(func);
    return nullptr;
  }
  return func;
}

PyObject* ModuleGetAttr(PyObject* self, PyObject* name) {
  PyObject* found = PyObject_GenericGetAttr(self, name);
  if (found != nullptr || !PyErr_ExceptionMatches(PyExc_AttributeError)) return found;
  const char* text = PyUnicode_AsUTF8(name);
  if (text == nullptr || std::strncmp(text, "__", 2) == 0) return nullptr;  // keep the error
  PyErr_Clear();
  return GetFunction(self, name);
}

PyObject* ModulePath(PyObject* self, void*) {
  PyObject* path = reinterpret_cast<ObjectWrapper*>(self)->extra;
  return Py_NewRef(path != nullptr ? path : Py_None);
}

PyMethodDef kModuleMethods[] = {
    {"get_function", GetFunction, METH_O, "The exported function `name` (AttributeError if none)."},
    {nullptr, nullptr, 0, nullptr},
};
PyGetSetDef kModuleGetSet[] = {
    {"path", ModulePath, nullptr, "The file the module was loaded from.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};
PyType_Slot kModuleSlots[] = {
    {Py_tp_getattro, reinterpret_cast<void*>(ModuleGetAttr)},
    {Py_mp_subscript, reinterpret_cast<void*>(GetFunction)},
    {Py_tp_methods, kModuleMethods},
    {Py_tp_getset, kModuleGetSet},
    {0, nullptr},
};
PyType_Spec kModuleSpec = {"tvm_ffi.Module", sizeof(ObjectWrapper), 0,
                           Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, kModuleSlots};

PyTypeObject* MakeType(PyObject* module, PyType_Spec* spec, PyTypeObject* base, const char* name) {
  PyObject* bases = base != nullptr ? PyTuple_Pack(1, base) : nullptr;
  auto* type = reinterpret_cast<PyTypeObject*>(PyType_FromSpecWithBases(spec, bases));
  Py_XDECREF(bases);
  if (type == nullptr) return nullptr;
  type->tp_new = nullptr;  // wrappers come only from the runtime
  PyType_Modified(type);
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
  auto* self = PyObject_New(ObjectWrapper, type);
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

// load_module(path): the runtime's loader ("ffi.ModuleLoadFromFile").
PyObject* LoadModule(PyObject*, PyObject* path) {
  PyObject* text = PyOS_FSPath(path);
  if (text == nullptr) return nullptr;
  PyObject* str =
      PyUnicode_Check(text) ? Py_NewRef(text) : PyUnicode_FromEncodedObject(text, nullptr, nullptr);
  Py_DECREF(text);
  if (str == nullptr) return nullptr;
  const char* file = PyUnicode_AsUTF8(str);
  struct stat st;
  if (file != nullptr && stat(file, &st) != 0) {
    PyErr_Format(PyExc_FileNotFoundError, "load_module(): no library at '%U'", str);
    file = nullptr;
  }
  TVMFFIObject* loader = file != nullptr ? GetGlobal("ffi.ModuleLoadFromFile") : nullptr;
  if (file != nullptr && loader == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "the runtime has no global 'ffi.ModuleLoadFromFile'");
  }
  PyObject* module = nullptr;
  if (loader != nullptr) {
    ArgFrame frame;
    frame.name = "load_module";
    frame.position = 1;
    TVMFFIAny arg, out;
    out.type_index = kTVMFFINone;
    out.zero_padding = 0;
    out.v_int64 = 0;
    if (ConvertArg(&frame, str, &arg, nullptr, 0) == 0) {
      const int rc = CellOf<TVMFFIFunctionCell>(loader)->safe_call(loader, &arg, 1, &out);
      if (rc == 0) {
        module = out.type_index == kTVMFFIModule ? NewObjectWrapper(g_module_type, out.v_obj)
                                                 : ToPython(&out, nullptr);
      } else {
        // The loader's own words (dlopen's reason) after the file it could not load.
        RaiseCallError(rc, nullptr, nullptr);
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        PyErr_NormalizeException(&type, &value, &traceback);
        if (value != nullptr) {
          PyErr_Format(type, "load_module(): cannot load '%U': %S", str, value);
        }
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(traceback);
      }
    }
    DecRef(loader);
  }
  if (module != nullptr && PyObject_TypeCheck(module, g_module_type)) {
    reinterpret_cast<ObjectWrapper*>(module)->extra = Py_NewRef(str);
  }
  Py_DECREF(str);
  return module;
}

}  // namespace tvm_ffi_next
