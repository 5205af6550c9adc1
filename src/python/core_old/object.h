/*
 * Reference-counted objects of ABI version 3 (c_api.h) on the Python side: tvm_ffi.Object
 * wrappers, functions backed by an object, Python callables handed to C++ as function objects,
 * and the process-wide registry in libtvm_ffi.so, loaded on first use.
 */
#ifndef TVM_FFI_PY_OBJECT_H_
#define TVM_FFI_PY_OBJECT_H_

#include <Python.h>
#include <tvm/ffi/c_api.h>

namespace tvm_ffi_py {

struct CallFrame;

/*! \brief The registry's entry points, found in libtvm_ffi.so. */
struct RegistryApi {
  int (*set_global)(const char* name, TVMFFIRefObject* func, int allow_override);
  TVMFFIRefObject* (*get_global)(const char* name);
  int64_t (*list_globals)(void (*visit)(const char* name, void* handle), void* handle);
  int (*set_member)(const char* type_key, const char* name, TVMFFIRefObject* func,
                    int allow_override);
  TVMFFIRefObject* (*get_member)(const char* type_key, const char* name);
  int64_t (*take_init_errors)(void (*visit)(const char* library, const char* kind,
                                            const char* message, void* handle),
                              void* handle);
};

/*!
 * \brief dlopens libtvm_ffi.so (RTLD_NOW | RTLD_GLOBAL) once, so that libraries loaded later
 *  bind their weak references to the registry; its path comes from
 *  tvm_ffi.config.get_libtvm_ffi_path(). Returns the API, or NULL with an error set.
 */
const RegistryApi* EnsureRegistry();

/*! \brief Ready tvm_ffi.Object; returns it (borrowed) or NULL with an error set. */
PyTypeObject* InitObjectType();

/*!
 * \brief The Python value of an object reference, which it takes over (also on failure):
 *  a function becomes a tvm_ffi.Function (a Python callable handed out earlier comes back as
 *  itself), anything else a tvm_ffi.Object or the class registered for its type key. NULL
 *  `ref` is None. `name` names a function (NULL: its type key).
 */
PyObject* WrapRef(TVMFFIRefObject* ref, const char* name);

/*!
 * \brief Converts an argument that is an object: a tvm_ffi.Object or object-backed Function
 *  (borrowed), an exported Function or another Python callable (a function object owned by
 *  the frame until the call returns). 0 converted, -1 error set, 1 not an object.
 */
int ObjectArg(CallFrame* frame, PyObject* obj, TVMFFIAny* out);

/*! \brief Adds _register_object_class, _get_global_func, ... to the _core module. */
int AddObjectFunctions(PyObject* module);

}  // namespace tvm_ffi_py

#endif  // TVM_FFI_PY_OBJECT_H_
