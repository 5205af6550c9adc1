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

#include <tvm/ffi/base.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/detail/export.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/string.h>

#include <type_traits>

/*!
 * \brief Exports `...` (a function name or a lambda expression; variadic so a lambda body may
 * contain commas) as the C symbol `__tvm_ffi_<Name>`.
 *
 * The callable lives in a function-local static: for a function pointer or a lambda without
 * captures that is constant-initialized, so the call compiles to a direct call. The expansion
 * ends with the function's body, so it may be followed by `;` (an empty declaration, valid
 * since C++11) or not.
 */
#define TVM_FFI_DLL_EXPORT_TYPED_FUNC(Name, ...)                                                 \
  extern "C" TVM_FFI_DLL_EXPORT int __tvm_ffi_##Name(const TVMFFICallContext* ctx,               \
                                                     const TVMFFIAny* args, int32_t num_args,    \
                                                     TVMFFIResult* result) {                     \
    static const auto tvm_ffi_callable_ = (__VA_ARGS__);                                         \
    using TvmFfiExportTraits_ =                                                                  \
        ::tvm::ffi::detail::ExportTraits<std::remove_cv_t<decltype(tvm_ffi_callable_)>>;         \
    if (TVM_FFI_UNLIKELY(num_args == TVM_FFI_QUERY_INFO)) {                                      \
      static const TVMFFIFunctionInfo* const tvm_ffi_info_ =                                     \
          TvmFfiExportTraits_::NewFunctionInfo(#Name);                                           \
      return ::tvm::ffi::detail::SetFunctionInfoResult(tvm_ffi_info_, result);                   \
    }                                                                                            \
    return TvmFfiExportTraits_::Call(tvm_ffi_callable_, #Name, ctx, args, num_args, result);     \
  }

#endif  // TVM_FFI_FUNCTION_H_
