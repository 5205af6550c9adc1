/*
 * What every CUDA header of this package shares: the launch extent `tvm::ffi::dim3` and the
 * two check macros, TVM_FFI_CHECK_CUDA_ERROR (runtime names) and TVM_FFI_CHECK_CUDA_DRIVER_ERROR
 * (driver names). The macros accept a CUresult, a cudaError_t or a launch result.
 *
 * Nothing here links against CUDA: the runtime's error names are looked up at run time
 * (detail/driver_api.h). <cuda_runtime.h> is included only for its declarations, because code
 * that checks runtime calls with TVM_FFI_CHECK_CUDA_ERROR expects them to come with it.
 */
#ifndef TVM_FFI_EXTRA_CUDA_BASE_H_
#define TVM_FFI_EXTRA_CUDA_BASE_H_

#include <cuda.h>
#include <cuda_runtime.h>
#include <tvm/ffi/base.h>
#include <tvm/ffi/detail/error.h>
#include <tvm/ffi/extra/cuda/detail/cuda_error.h>

// Hidden: each library keeps its own copy; no library binds to another's instantiations.
TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {

/*! \brief Grid or block extent; unset dimensions are 1. CUDA's own ::dim3 converts to it. */
struct dim3 {
  unsigned int x = 1;
  unsigned int y = 1;
  unsigned int z = 1;
  constexpr dim3() = default;
  constexpr explicit dim3(unsigned int x) : x(x) {}
  constexpr dim3(unsigned int x, unsigned int y) : x(x), y(y) {}
  constexpr dim3(unsigned int x, unsigned int y, unsigned int z) : x(x), y(y), z(z) {}
  constexpr dim3(const ::dim3& d) : x(d.x), y(d.y), z(d.z) {}  // NOLINT: implicit on purpose
};

namespace detail {
// The check macros take either API's result; the codes are the same numbers.
inline int CudaCode(CUresult r) { return static_cast<int>(r); }
inline int CudaCode(cudaError_t r) { return static_cast<int>(r); }
}  // namespace detail

}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

/*!
 * \brief Throws RuntimeError "CUDA_ERROR_INVALID_VALUE (1): invalid argument" (plus which
 *  kernel, when the code came from a failed launch) unless `expr` is CUDA_SUCCESS.
 */
#define TVM_FFI_CHECK_CUDA_DRIVER_ERROR(expr)                                                \
  do {                                                                                       \
    const int tvm_ffi_cuda_code_ = ::tvm::ffi::detail::CudaCode(expr);                       \
    if (TVM_FFI_UNLIKELY(tvm_ffi_cuda_code_ != 0)) {                                         \
      TVM_FFI_THROW(RuntimeError) << ::tvm::ffi::detail::DriverErrorText(tvm_ffi_cuda_code_) \
                                  << ::tvm::ffi::detail::TakeLaunchFailureNote(              \
                                         tvm_ffi_cuda_code_);                                \
    }                                                                                        \
  } while (0)

/*! \brief As above with the runtime's names: "cudaErrorInvalidValue (1): invalid argument". */
#define TVM_FFI_CHECK_CUDA_ERROR(expr)                                                        \
  do {                                                                                        \
    const int tvm_ffi_cuda_code_ = ::tvm::ffi::detail::CudaCode(expr);                        \
    if (TVM_FFI_UNLIKELY(tvm_ffi_cuda_code_ != 0)) {                                          \
      TVM_FFI_THROW(RuntimeError) << ::tvm::ffi::detail::RuntimeErrorText(tvm_ffi_cuda_code_) \
                                  << ::tvm::ffi::detail::TakeLaunchFailureNote(               \
                                         tvm_ffi_cuda_code_);                                 \
    }                                                                                         \
  } while (0)

#endif  // TVM_FFI_EXTRA_CUDA_BASE_H_
