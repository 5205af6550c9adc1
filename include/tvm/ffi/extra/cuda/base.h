/*
 * The two check macros, TVM_FFI_CHECK_CUDA_ERROR (runtime names) and
 * TVM_FFI_CHECK_CUDA_DRIVER_ERROR (driver names), and the launch extent `tvm::ffi::dim3`
 * (dim3.h), as apache-tvm-ffi's base.h brings them. The macros accept a CUresult, a
 * cudaError_t or a launch result.
 *
 * Nothing here links against CUDA: the error names are looked up at run time, which is why
 * this header brings the driver loader (detail/driver_api.h, through detail/cuda_error.h)
 * and, header-only, its definitions; it brings no image parsing. <cuda_runtime.h> is
 * included only for its declarations, because code that checks runtime calls with
 * TVM_FFI_CHECK_CUDA_ERROR expects them to come with it.
 */
#ifndef TVM_FFI_EXTRA_CUDA_BASE_H_
#define TVM_FFI_EXTRA_CUDA_BASE_H_

#include <cuda.h>
#include <cuda_runtime.h>
#include <tvm/ffi/base_detail.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/cuda/detail/cuda_error.h>
#include <tvm/ffi/extra/cuda/dim3.h>

// Hidden: each library keeps its own copy; no library binds to another's instantiations.
TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {

namespace details {
// The check macros take either API's result; the codes are the same numbers.
inline int CudaCode(CUresult r) { return static_cast<int>(r); }
inline int CudaCode(cudaError_t r) { return static_cast<int>(r); }
}  // namespace details

}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

/*!
 * \brief Throws RuntimeError "CUDA_ERROR_INVALID_VALUE (1): invalid argument" (plus which
 *  kernel, when the code came from a failed launch) unless `expr` is CUDA_SUCCESS.
 */
#define TVM_FFI_CHECK_CUDA_DRIVER_ERROR(expr)                                                 \
  do {                                                                                        \
    const int tvm_ffi_cuda_code_ = ::tvm::ffi::details::CudaCode(expr);                       \
    if (TVM_FFI_UNLIKELY(tvm_ffi_cuda_code_ != 0)) {                                          \
      TVM_FFI_THROW(RuntimeError) << ::tvm::ffi::details::DriverErrorText(tvm_ffi_cuda_code_) \
                                  << ::tvm::ffi::details::TakeLaunchFailureNote(              \
                                         tvm_ffi_cuda_code_);                                 \
    }                                                                                         \
  } while (0)

/*! \brief As above with the runtime's names: "cudaErrorInvalidValue (1): invalid argument". */
#define TVM_FFI_CHECK_CUDA_ERROR(expr)                                                         \
  do {                                                                                         \
    const int tvm_ffi_cuda_code_ = ::tvm::ffi::details::CudaCode(expr);                        \
    if (TVM_FFI_UNLIKELY(tvm_ffi_cuda_code_ != 0)) {                                           \
      TVM_FFI_THROW(RuntimeError) << ::tvm::ffi::details::RuntimeErrorText(tvm_ffi_cuda_code_) \
                                  << ::tvm::ffi::details::TakeLaunchFailureNote(               \
                                         tvm_ffi_cuda_code_);                                  \
    }                                                                                          \
  } while (0)

#endif  // TVM_FFI_EXTRA_CUDA_BASE_H_
