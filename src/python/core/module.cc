// The module `tvm_ffi._core`: the Python core on the tvm-ffi C ABI (tests/abi builds the same
// sources as `_core_next`). pybind11 creates the module; the types are CPython heap types.
#include <dlfcn.h>
#include <pybind11/pybind11.h>

#include "core.h"

namespace tvm_ffi_next {

// Defined beside what they serve (module_type.cc, tensor_type.cc, globals.cc, env.cc,
// image_reader.cc); only this table names them.
PyObject* LoadModule(PyObject*, PyObject* const* args, Py_ssize_t nargs);
PyObject* FromDLPack(PyObject*, PyObject* obj);
PyObject* GetGlobalFunc(PyObject*, PyObject* name);
PyObject* RegisterGlobalFunc(PyObject*, PyObject* const* args, Py_ssize_t nargs);
PyObject* ListGlobalFuncNames(PyObject*, PyObject*);
PyObject* ParseDType(PyObject*, PyObject* text);
PyObject* FormatDType(PyObject*, PyObject* const* args, Py_ssize_t nargs);
PyObject* SetDTypeClass(PyObject*, PyObject* cls);
PyObject* PushRawStream(PyObject*, PyObject* const* args, Py_ssize_t nargs);
PyObject* PopRawStream(PyObject*, PyObject*);
PyObject* GetRawStream(PyObject*, PyObject* const* args, Py_ssize_t nargs);
void RegisterImageReader(pybind11::module_& m);
void RegisterCuda(pybind11::module_& m);  // src/python/cuda/cuda_module.cc

namespace {

template <typename F>
PyCFunction Fast(F f) {
  return reinterpret_cast<PyCFunction>(reinterpret_cast<void*>(f));
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
    {"load_module", Fast(LoadModule), METH_FASTCALL,
     "load_module(path, shown_path=None) -> Module, via ffi.ModuleLoadFromFile."},
    {"from_dlpack", FromDLPack, METH_O, "A Tensor sharing the memory of a DLPack producer."},
    {"_get_global_func", GetGlobalFunc, METH_O, "The runtime's global function, or None."},
    {"_register_global_func", Fast(RegisterGlobalFunc), METH_FASTCALL,
     "_register_global_func(name, f, override) -> the Function registered."},
    {"_list_global_func_names", ListGlobalFuncNames, METH_NOARGS, "Global names, sorted."},
    {"_register_object_class", Fast(RegisterObjectClass), METH_FASTCALL,
     "_register_object_class(type_key, cls): wrap objects of that type (and subtypes) in cls."},
    {"_parse_dtype", ParseDType, METH_O, "(code, bits, lanes) of a data type's string form."},
    {"_format_dtype", Fast(FormatDType), METH_FASTCALL,
     "The string form of (code, bits, lanes), or None when it has none."},
    {"_set_dtype_class", SetDTypeClass, METH_O, "Make instances of `cls` convert as data types."},
    {"push_raw_stream", Fast(PushRawStream), METH_FASTCALL,
     "push_raw_stream(device_type, device_id, stream): this thread's stream until pop."},
    {"pop_raw_stream", PopRawStream, METH_NOARGS, "Undo the innermost push_raw_stream."},
    {"get_raw_stream", Fast(GetRawStream), METH_FASTCALL,
     "get_raw_stream(device_type, device_id): the stream calls on this thread see."},
    {"_set_error_table", SetErrorTableMethod, METH_O,
     "set_error_table(dict | None): error kind -> exception class, consulted before builtins."},
    {"_register_error", Fast(RegisterErrorMethod), METH_FASTCALL,
     "_register_error(kind, cls): raise `kind` as `cls`; send `cls` from callbacks as `kind`."},
    {"_error_class", ErrorClassMethod, METH_O, "The class an error of `kind` is raised as."},
    {nullptr, nullptr, 0, nullptr},
};

// Libraries built against apache-tvm-ffi's headers often do not list libtvm_ffi.so as needed
// (FlashInfer's JIT modules, the CuTe DSL's JIT-linked code): they find the runtime's C
// functions in the global scope, where apache-tvm-ffi's Python puts its runtime. Python loads
// this module, and with it the runtime, locally; re-opening the runtime with RTLD_GLOBAL (no
// second copy: RTLD_NOLOAD) makes its functions visible to those libraries too.
void PromoteRuntimeToGlobalScope() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&TVMFFIGetTypeInfo), &info) == 0 ||
      info.dli_fname == nullptr) {
    return;
  }
  if (void* runtime = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL)) {
    dlclose(runtime);  // drops the reference dlopen took; the scope change stays
  }
}

}  // namespace
}  // namespace tvm_ffi_next

// tests/helpers/next_pycore.py builds the same sources as `_core_next` beside an installed core.
#ifndef TVM_FFI_PYCORE_NAME
#define TVM_FFI_PYCORE_NAME _core
#endif
PYBIND11_MODULE(TVM_FFI_PYCORE_NAME, m) {
  using namespace tvm_ffi_next;
  PyObject* module = m.ptr();
  PromoteRuntimeToGlobalScope();
  // What the runtime calls back into Python with (TVMFFIEnvCheckSignals, GIL for callbacks
  // from foreign threads), as every frontend registers them.
  TVMFFIEnvRegisterCAPI("PyErr_CheckSignals", reinterpret_cast<void*>(PyErr_CheckSignals));
  TVMFFIEnvRegisterCAPI("PyGILState_Ensure", reinterpret_cast<void*>(PyGILState_Ensure));
  TVMFFIEnvRegisterCAPI("PyGILState_Release", reinterpret_cast<void*>(PyGILState_Release));
  InitLazyStream();
  InitHostAllocator();
  PyObject* lazy = LazyStreamEnabled() ? Py_True : Py_False;
  if (PyModule_AddObject(module, "_lazy_stream", Py_NewRef(lazy)) != 0 ||
      InitFunctionType(module) != 0 || InitObjectTypes(module) != 0 ||
      PyModule_AddFunctions(module, kModuleFunctions) != 0) {
    throw pybind11::error_already_set();
  }
  RegisterImageReader(m);
  RegisterCuda(m);
}
