/*
 * Makes a CUDA tensor argument's device current for the duration of a call, as torch ops
 * do. Uses the driver API through dlopen("libcuda.so.1") on first need, so the extension
 * has no link-time CUDA dependency and CPU-only calls never touch it.
 */
#ifndef TVM_FFI_PYCORE_CUDA_GUARD_H_
#define TVM_FFI_PYCORE_CUDA_GUARD_H_

#include <cstdint>

namespace tvm_ffi_next {

class CudaDeviceGuard {
 public:
  CudaDeviceGuard() = default;
  CudaDeviceGuard(const CudaDeviceGuard&) = delete;
  CudaDeviceGuard& operator=(const CudaDeviceGuard&) = delete;
  ~CudaDeviceGuard() {
    if (switched_) Restore();
  }

  /*!
   * \brief Make `device`'s primary context current. False with a Python error set.
   * With require_driver false, a missing driver makes this a no-op (a stream query from a
   * process without CUDA, answered by a producer that is not a real CUDA library).
   */
  bool Enter(int32_t device, bool require_driver = true) {
    // The stream query of a launch usually names the device the call entered already:
    // skip the driver round trip then.
    if (device == entered_) return true;
    if (!Switch(device, require_driver)) return false;
    entered_ = device;
    return true;
  }

 private:
  bool Switch(int32_t device, bool require_driver);
  void Restore();
  int32_t entered_ = -1;   // device made (or found) current by the last Enter of this call
  void* saved_ = nullptr;  // the context that was current before Enter
  bool switched_ = false;
};

}  // namespace tvm_ffi_next

#endif  // TVM_FFI_PYCORE_CUDA_GUARD_H_
