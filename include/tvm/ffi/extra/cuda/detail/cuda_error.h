/*
 * Turning CUDA result codes into messages: driver and runtime names, and the per-thread
 * record that lets TVM_FFI_CHECK_CUDA_*_ERROR say which kernel failed. Everything here runs
 * only once something has already gone wrong. (The architecture note of a failed load is the
 * launcher's: detail/cubin_launcher_impl.h.)
 */
#ifndef TVM_FFI_EXTRA_CUDA_DETAIL_CUDA_ERROR_H_
#define TVM_FFI_EXTRA_CUDA_DETAIL_CUDA_ERROR_H_

#include <cuda.h>
#include <driver_types.h>
#include <tvm/ffi/base_detail.h>
#include <tvm/ffi/extra/cuda/detail/driver_api.h>
#include <tvm/ffi/extra/cuda/detail/launcher_linkage.h>

#include <string>

// Hidden: each library keeps its own copy; no library binds to another's instantiations.
TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace details {

/*! \brief "CUDA_ERROR_INVALID_VALUE (1): invalid argument". Never throws. */
std::string DriverErrorText(int code);

/*! \brief "cudaErrorInvalidValue (1): invalid argument". Never throws. */
std::string RuntimeErrorText(int code);

/*!
 * \brief Which launch failed last on this thread, for the check macros. Written only when a
 *  launch fails; `code` ties it to that failure so an unrelated error never picks it up.
 */
struct LaunchFailure {
  int code;
  // A fixed buffer keeps the thread_local plain data: no guard variable, no TLS destructor.
  char where[480];
};

TVM_FFI_HIDDEN inline LaunchFailure& LastLaunchFailure() {
  // global-dynamic: a hidden thread-local would otherwise get the local-exec model when the
  // code is compiled as a position-independent executable (the default of many GCCs), and a
  // shared library cannot hold that (ld: "R_X86_64_TPOFF32 ... making a shared object").
  // The extra __tls_get_addr call is paid only after a failure. __thread, not thread_local:
  // nvcc's front end accepts tls_model only there (the struct is plain data, as __thread needs).
  static __thread LaunchFailure failure __attribute__((tls_model("global-dynamic")));
  return failure;
}

/*! \brief Records the failure of a launch for the check macros (TakeLaunchFailureNote). */
void SetLaunchFailure(int code, const std::string& where);

/*! \brief " [cuLaunchKernel of kernel ...]" when the last failed launch gave `code`, else "". */
std::string TakeLaunchFailureNote(int code);

}  // namespace details
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

// The definitions: here unless TVM_FFI_CUDA_SEPARATE_LAUNCHER moves them to
// detail/launcher_definitions_driver.h.
#ifndef TVM_FFI_CUDA_SEPARATE_LAUNCHER
#include <tvm/ffi/extra/cuda/detail/cuda_error_impl.h>
#endif

#endif  // TVM_FFI_EXTRA_CUDA_DETAIL_CUDA_ERROR_H_
