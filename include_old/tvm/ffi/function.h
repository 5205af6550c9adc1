/*
 * TVM_FFI_DLL_EXPORT_TYPED_FUNC: export a typed C++ function through the C ABI of c_api.h.
 *
 *   void AddOne(tvm::ffi::TensorView x, tvm::ffi::TensorView y);
 *   TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_one, AddOne);
 *
 * defines the symbol `__tvm_ffi_add_one`, which a loader finds with dlsym (or by listing the
 * library's dynamic symbols). Supported types are listed in docs/guides/cpp_core.md.
 */
#ifndef TVM_FFI_FUNCTION_H_
#define TVM_FFI_FUNCTION_H_

#include <tvm/ffi/detail/function.h>
#include <tvm/ffi/detail/names.h>

#endif  // TVM_FFI_FUNCTION_H_
