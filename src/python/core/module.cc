// The module `_core_next`: the Python core on the tvm-ffi C ABI, built beside today's core
// until the switch. pybind11 creates the module; the types are CPython heap types.
#include <pybind11/pybind11.h>

#include "core.h"

namespace tvm_ffi_next {

PyObject* LoadModule(PyObject*, PyObject* path);

namespace {

PyObject* GetGlobalFunc(PyObject*, PyObject* name) {
  const char* text = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : nullptr;
  if (text == nullptr) {
    if (!PyErr_Occurred()) {
      PyErr_Format(PyExc_TypeError, "get_global_func() expects a str, got %s",
                   Py_TYPE(name)->tp_name);
    }
    return nullptr;
  }
  TVMFFIObject* handle = GetGlobal(text);
  if (handle == nullptr) Py_RETURN_NONE;
  return NewFunction(handle, name, nullptr);
}

PyObject* SetErrorTableMethod(PyObject*, PyObject* table) { return SetErrorTable(table); }

PyObject* RegisterErrorMethod(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2) {
    PyErr_Format(PyExc_TypeError, "_register_error() takes (kind, cls) (got %zd arguments)", nargs);
    return nullptr;
  }
  return RegisterError(args[0], args[1]);
}

PyObject* ErrorClassMethod(PyObject*, PyObject* kind) { return ErrorClass(kind); }

PyMethodDef kModuleFunctions[] = {
    {"load_module", LoadModule, METH_O, "load_module(path) -> Module, via ffi.ModuleLoadFromFile."},
    {"get_global_func", GetGlobalFunc, METH_O, "The runtime's global function, or None."},
    {"set_error_table", SetErrorTableMethod, METH_O,
     "set_error_table(dict | None): error kind -> exception class, consulted before builtins."},
    {"_register_error", reinterpret_cast<PyCFunction>(reinterpret_cast<void*>(RegisterErrorMethod)),
     METH_FASTCALL,
     "_register_error(kind, cls): raise `kind` as `cls`; send `cls` from callbacks as `kind`."},
    {"_error_class", ErrorClassMethod, METH_O, "The class an error of `kind` is raised as."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace
}  // namespace tvm_ffi_next

// tests/helpers/next_pycore.py builds the same sources as `_core_next` beside an installed core.
#ifndef TVM_FFI_PYCORE_NAME
#define TVM_FFI_PYCORE_NAME _core
#endif
PYBIND11_MODULE(TVM_FFI_PYCORE_NAME, m) {
  using namespace tvm_ffi_next;
  PyObject* module = m.ptr();
  // What the runtime calls back into Python with (TVMFFIEnvCheckSignals, GIL for callbacks
  // from foreign threads), as every frontend registers them.
  TVMFFIEnvRegisterCAPI("PyErr_CheckSignals", reinterpret_cast<void*>(PyErr_CheckSignals));
  TVMFFIEnvRegisterCAPI("PyGILState_Ensure", reinterpret_cast<void*>(PyGILState_Ensure));
  TVMFFIEnvRegisterCAPI("PyGILState_Release", reinterpret_cast<void*>(PyGILState_Release));
  InitLazyStream();
  PyObject* lazy = LazyStreamEnabled() ? Py_True : Py_False;
  if (PyModule_AddObject(module, "_lazy_stream", Py_NewRef(lazy)) != 0 ||
      InitFunctionType(module) != 0 || InitObjectTypes(module) != 0 ||
      PyModule_AddFunctions(module, kModuleFunctions) != 0) {
    throw pybind11::error_already_set();
  }
}
