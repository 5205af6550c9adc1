/*
 * tvm_ffi.Function: a plain CPython type (not pybind11) so that a call is one vectorcall
 * straight into the argument conversion and the library's entry.
 */
#ifndef TVM_FFI_PY_FUNCTION_H_
#define TVM_FFI_PY_FUNCTION_H_

#include <Python.h>
#include <tvm/ffi/c_api.h>

namespace tvm_ffi_py {

struct FunctionObject {
  PyObject_HEAD vectorcallfunc vectorcall;
  TVMFFIFunctionEntry entry;
  const TVMFFIFunctionInfo* info;  // static data of the library, which is never unloaded
  const char* name;                // UTF-8 of name_obj, for error messages
  PyObject* name_obj;              // str
  PyObject* signature;             // str: "add_one(Tensor, Tensor) -> None"
  PyObject* doc;                   // set by load_inline(functions={name: doc}); NULL: signature
  // A function object (ABI version 3) called through ref->type->call, owned; NULL for an
  // exported entry.
  TVMFFIRefObject* ref;
};

/*! \brief Ready the type; returns it (borrowed) or NULL with an error set. */
PyTypeObject* InitFunctionType();

/*! \brief A new Function, or NULL with an error set. */
PyObject* NewFunction(TVMFFIFunctionEntry entry, const TVMFFIFunctionInfo* info, const char* name);

/*! \brief A new Function over a function object; takes over `ref` (also on failure). */
PyObject* NewRefFunction(TVMFFIRefObject* ref, const char* name);

/*! \brief Whether `obj` is a tvm_ffi.Function. */
bool IsFunction(PyObject* obj);

}  // namespace tvm_ffi_py

#endif  // TVM_FFI_PY_FUNCTION_H_
