/*
 * tvm::ffi::CUDADeviceGuard: makes a device current for a scope and restores what was current
 * before. The apache-tvm-ffi name, implemented with the driver table of detail/driver_api.h
 * (primary contexts), so it needs no cudart at link time. The runtime API follows the same
 * current context, so cudaMalloc and <<<...>>> launches inside the scope use the device too.
 */
#ifndef TVM_FFI_EXTRA_CUDA_DEVICE_GUARD_H_
#define TVM_FFI_EXTRA_CUDA_DEVICE_GUARD_H_

#include <cuda.h>
#include <tvm/ffi/base_detail.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/cuda/base.h>
#include <tvm/ffi/extra/cuda/detail/cuda_error.h>
#include <tvm/ffi/extra/cuda/detail/driver_api.h>

#include <exception>
#include <string>

// Hidden: each library keeps its own copy; no library binds to another's instantiations.
TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {

/*!
 * \brief While alive, `device` is the current CUDA device of this thread (its primary context
 *  is current, unless a context of that device already was). On destruction the context that
 *  was current before (possibly none) is current again.
 *
 *  void Wrapper(tvm::ffi::TensorView x) {
 *    tvm::ffi::CUDADeviceGuard guard(x.device().device_id);
 *    ...
 *  }
 */
struct CUDADeviceGuard {  // a struct, as apache-tvm-ffi declares it
 public:
  CUDADeviceGuard() = delete;
  /*! \brief Throws RuntimeError naming `device` when it cannot be made current. */
  explicit CUDADeviceGuard(int device)
      : api_(&details::DriverApi::Get()), device_(device), uncaught_(std::uncaught_exceptions()) {
    CUresult r = api_->CtxGetCurrent(&saved_);
    if (r != CUDA_SUCCESS) Fail("cuCtxGetCurrent", r);
    if (saved_ != nullptr) {
      // A context of this device is current already (the primary one, or the program's own):
      // leave it, as cudaSetDevice would not switch either.
      CUdevice current = -1;
      if (api_->CtxGetDevice(&current) == CUDA_SUCCESS && current == device) return;
    }
    CUcontext target = nullptr;
    const char* failed = nullptr;
    r = details::PrimaryContext(*api_, device, &target, &failed);
    if (r != CUDA_SUCCESS) Fail(failed, r);
    r = api_->CtxSetCurrent(target);
    if (r != CUDA_SUCCESS) Fail("cuCtxSetCurrent", r);
    switched_ = true;
  }

  /*!
   * \brief Restores the previous context. A failure to restore throws RuntimeError, except
   *  while another exception is unwinding the stack (throwing then would end the program).
   */
  ~CUDADeviceGuard() noexcept(false) {
    if (!switched_) return;
    const CUresult r = api_->CtxSetCurrent(saved_);
    if (r != CUDA_SUCCESS && std::uncaught_exceptions() == uncaught_) {
      Fail("cuCtxSetCurrent (restoring the previous context)", r);
    }
  }

  CUDADeviceGuard(const CUDADeviceGuard&) = delete;
  CUDADeviceGuard& operator=(const CUDADeviceGuard&) = delete;

  /*! \brief The device this guard made current. */
  int device() const { return device_; }

 private:
  [[noreturn]] TVM_FFI_COLD void Fail(const char* op, CUresult r) const {
    std::string count;
    int n = 0;
    if (api_->DeviceGetCount != nullptr && api_->DeviceGetCount(&n) == CUDA_SUCCESS) {
      count = " (" + std::to_string(n) + " CUDA device" + (n == 1 ? "" : "s") + " visible)";
    }
    TVM_FFI_THROW(RuntimeError) << "CUDADeviceGuard(" << device_ << "): " << op
                                << " for CUDA device " << device_ << ": "
                                << details::DriverErrorText(r) << count;
    throw;  // not reached
  }

  const details::DriverApi* api_;
  int device_;
  int uncaught_;  // exceptions in flight when the guard was made
  CUcontext saved_ = nullptr;
  bool switched_ = false;
};

}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END
#endif  // TVM_FFI_EXTRA_CUDA_DEVICE_GUARD_H_
