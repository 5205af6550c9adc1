// tvm_ffi.Module: a loaded library (or a module object); attributes and items are its functions,
// looked up through the runtime's module globals and kept per module. load_module itself.
#include <sys/stat.h>

#include "core.h"

namespace tvm_ffi_next {
namespace {

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

// "module '<path>'" (a loaded library) or "module '<type key>'" (a module object).
PyObject* ModuleLabel(PyObject* self) {
  PyObject* path = reinterpret_cast<ObjectWrapper*>(self)->extra;
  if (path != nullptr) return Py_NewRef(path);
  TVMFFIObject* h = reinterpret_cast<ObjectWrapper*>(self)->handle;
  const TVMFFITypeInfo* info = h != nullptr ? TVMFFIGetTypeInfo(h->type_index) : nullptr;
  if (info == nullptr) return PyUnicode_FromString("?");
  return PyUnicode_FromStringAndSize(info->type_key.data,
                                     static_cast<Py_ssize_t>(info->type_key.size));
}

// Raises `type` for a missing function; a Module class that lists its functions
// (tvm_ffi.Module.functions) gets them named, so a typo shows its neighbours.
void RaiseNoFunction(PyObject* self, PyObject* name, PyObject* type, const char* why) {
  PyObject* label = ModuleLabel(self);
  if (label == nullptr) return;
  PyObject* message = PyUnicode_FromFormat("module '%U' has no function %R%s", label, name, why);
  Py_DECREF(label);
  // Generic lookup only: this module's own getattr would look "functions" up as a function.
  PyObject* attr =
      why[0] == '\0' && message != nullptr ? PyUnicode_FromString("functions") : nullptr;
  PyObject* listed = attr != nullptr ? PyObject_GenericGetAttr(self, attr) : nullptr;
  Py_XDECREF(attr);
  if (listed != nullptr && PyList_Check(listed) && PyList_GET_SIZE(listed) > 0) {
    PyObject* sep = PyUnicode_FromString(", ");
    PyObject* joined = sep != nullptr ? PyUnicode_Join(sep, listed) : nullptr;
    if (joined != nullptr) {
      Py_SETREF(message, PyUnicode_FromFormat("%U; functions in this module: %U", message, joined));
    }
    Py_XDECREF(joined);
    Py_XDECREF(sep);
  }
  Py_XDECREF(listed);
  PyErr_Clear();
  if (message != nullptr) PyErr_SetObject(type, message);
  Py_XDECREF(message);
}

// Whether a Module class that lists its library's functions (tvm_ffi.Module.functions, read
// from .dynsym) leaves `name` out: the loader's dlsym would also find data and hidden-prefix
// symbols (`__tvm_ffi_data`), which are no functions to call.
bool Unlisted(PyObject* self, PyObject* name) {
  PyObject* attr = PyUnicode_FromString("functions");
  PyObject* listed = attr != nullptr ? PyObject_GenericGetAttr(self, attr) : nullptr;
  Py_XDECREF(attr);
  const int found = listed != nullptr && PyList_Check(listed) && PyList_GET_SIZE(listed) > 0
                        ? PySequence_Contains(listed, name)
                        : 1;
  Py_XDECREF(listed);
  PyErr_Clear();
  return found == 0;
}

// The function `name`, raising `missing` (AttributeError or KeyError) when there is none.
PyObject* LookUp(PyObject* self, PyObject* name, PyObject* missing) {
  if (!PyUnicode_Check(name)) {
    PyErr_Format(PyExc_TypeError, "module function names are str, not %s", Py_TYPE(name)->tp_name);
    return nullptr;
  }
  // Looked up once per module: `m.f(...)` in a loop must not query the runtime each time.
  auto* wrapper = reinterpret_cast<ObjectWrapper*>(self);
  if (wrapper->functions != nullptr) {
    PyObject* cached = PyDict_GetItemWithError(wrapper->functions, name);
    if (cached != nullptr) return Py_NewRef(cached);
    if (PyErr_Occurred()) return nullptr;
  }
  Py_ssize_t size = 0;
  const char* text = PyUnicode_AsUTF8AndSize(name, &size);
  if (text == nullptr) return nullptr;
  if (static_cast<size_t>(size) != std::strlen(text)) {  // the loader would cut it at the NUL
    RaiseNoFunction(self, name, missing, " (the name holds a NUL byte)");
    return nullptr;
  }
  if (Unlisted(self, name)) {
    RaiseNoFunction(self, name, missing, "");
    return nullptr;
  }
  TVMFFIAny out;
  if (ModuleQuery(self, "ffi.ModuleGetFunction", name, &out) != 0) {
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    PyObject* label = ModuleLabel(self);
    if (label != nullptr && value != nullptr) {
      PyErr_Format(type, "module '%U': looking up function %R failed: %S", label, name, value);
    }
    Py_XDECREF(label);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(traceback);
    return nullptr;
  }
  if (out.type_index != kTVMFFIFunction) {
    if (IsObjectIndex(out.type_index)) DecRef(out.v_obj);
    RaiseNoFunction(self, name, missing, "");
    return nullptr;
  }
  PyObject* func = NewFunction(out.v_obj, name, wrapper->extra);
  if (func == nullptr) return nullptr;
  TVMFFIAny meta;
  if (ModuleQuery(self, "ffi.ModuleGetFunctionMetadata", name, &meta) == 0) {
    PyObject* metadata = ToPython(&meta, nullptr);
    if (metadata != nullptr) ReadFunctionMetadata(func, metadata);
    Py_XDECREF(metadata);
  }
  PyErr_Clear();  // no metadata: no signature, no shortcut
  if (wrapper->functions == nullptr) wrapper->functions = PyDict_New();
  if (wrapper->functions == nullptr || PyDict_SetItem(wrapper->functions, name, func) != 0) {
    Py_DECREF(func);
    return nullptr;
  }
  return func;
}

PyObject* GetFunction(PyObject* self, PyObject* name) {
  return LookUp(self, name, PyExc_AttributeError);
}

PyObject* GetItem(PyObject* self, PyObject* name) { return LookUp(self, name, PyExc_KeyError); }

int Contains(PyObject* self, PyObject* name) {
  if (!PyUnicode_Check(name)) return 0;
  PyObject* func = LookUp(self, name, PyExc_KeyError);
  if (func != nullptr) {
    Py_DECREF(func);
    return 1;
  }
  if (!PyErr_ExceptionMatches(PyExc_KeyError)) return -1;
  PyErr_Clear();
  return 0;
}

PyObject* ModuleGetAttr(PyObject* self, PyObject* name) {
  PyObject* found = PyObject_GenericGetAttr(self, name);
  if (found != nullptr || !PyErr_ExceptionMatches(PyExc_AttributeError)) return found;
  const char* text = PyUnicode_AsUTF8(name);
  if (text == nullptr || std::strncmp(text, "__", 2) == 0) return nullptr;  // keep the error
  PyErr_Clear();
  return GetFunction(self, name);
}

PyObject* ModuleRepr(PyObject* self) {
  PyObject* label = ModuleLabel(self);
  if (label == nullptr) return nullptr;
  PyObject* out = PyUnicode_FromFormat("<tvm_ffi.Module '%U'>", label);
  Py_DECREF(label);
  return out;
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
    {Py_mp_subscript, reinterpret_cast<void*>(GetItem)},
    {Py_sq_contains, reinterpret_cast<void*>(Contains)},
    {Py_tp_repr, reinterpret_cast<void*>(ModuleRepr)},
    {Py_tp_methods, kModuleMethods},
    {Py_tp_getset, kModuleGetSet},
    {0, nullptr},
};
}  // namespace

PyType_Spec kModuleSpec = {"tvm_ffi.Module", sizeof(ObjectWrapper), 0,
                           Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, kModuleSlots};

// load_module(path, shown_path=None): the runtime's loader ("ffi.ModuleLoadFromFile"). The
// module's `path` is shown_path when given (tvm_ffi.load_module loads a rebuilt library from a
// private copy, and names the file the caller gave).
PyObject* LoadModule(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 1 && nargs != 2) {
    PyErr_Format(PyExc_TypeError, "load_module() takes (path, shown_path=None), got %zd arguments",
                 nargs);
    return nullptr;
  }
  PyObject* path = args[0];
  PyObject* shown = nargs == 2 && args[1] != Py_None ? args[1] : nullptr;
  if (shown != nullptr && !PyUnicode_Check(shown)) {
    PyErr_SetString(PyExc_TypeError, "load_module(): shown_path must be a str");
    return nullptr;
  }
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
        module = out.type_index == kTVMFFIModule ? NewObjectWrapper(ModuleClass(), out.v_obj)
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
    Py_XSETREF(reinterpret_cast<ObjectWrapper*>(module)->extra,
               Py_NewRef(shown != nullptr ? shown : str));
  }
  Py_DECREF(str);
  return module;
}

}  // namespace tvm_ffi_next
