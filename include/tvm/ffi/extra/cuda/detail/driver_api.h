/*
 * The one place where this header family meets the CUDA driver and runtime libraries.
 *
 * Nothing here is resolved at link time: libcuda.so.1 is dlopen'ed on first use and its
 * entry points are fetched with cuGetProcAddress, so a library that includes
 * cubin_launcher.h links with nothing CUDA-specific and loads on machines without a
 * driver. The runtime's error names are looked up the same way, only when an error is
 * being reported. Every difference between CUDA versions lives in the labelled sections
 * below; the classes in cubin_launcher.h contain no version checks.
 */
#ifndef TVM_FFI_EXTRA_CUDA_DETAIL_DRIVER_API_H_
#define TVM_FFI_EXTRA_CUDA_DETAIL_DRIVER_API_H_

#include <cuda.h>
#include <dlfcn.h>
#include <driver_types.h>
#include <tvm/ffi/base_detail.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/cuda/detail/launcher_linkage.h>

#include <atomic>
#include <cstddef>
#include <string>
#include <type_traits>

// ---- Section: supported toolkit headers -------------------------------------------------
// CUlibrary/CUkernel (context-independent loading) arrived in CUDA 12.0.
#if !defined(CUDA_VERSION) || CUDA_VERSION < 12000
#error "tvm/ffi/extra/cuda/cubin_launcher.h needs the CUDA 12.0 or newer toolkit headers"
#endif

// Hidden: each library keeps its own copy; no library binds to another's instantiations.
TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace details {

// ---- Section: entry points newer than the oldest supported headers ------------------------
// Declared by cuda.h from 12.3/12.4 on; spelled out so older headers still compile. They are
// optional at run time too: features that need them report the driver version instead.
using PFN_KernelGetName = CUresult (*)(const char** name, CUkernel kernel);
using PFN_KernelGetParamInfo = CUresult (*)(CUkernel kernel, size_t index, size_t* offset,
                                            size_t* size);
using PFN_LibraryGetKernelCount = CUresult (*)(unsigned int* count, CUlibrary lib);
using PFN_LibraryEnumerateKernels = CUresult (*)(CUkernel* kernels, unsigned int count,
                                                 CUlibrary lib);

// ---- Section: bootstrap (cuGetProcAddress itself) -----------------------------------------
// The _v2 symbol (CUDA 12.0+ drivers) reports why a lookup failed; older drivers have only
// the 4-argument form, which we adapt so the rest of the code sees one signature.
using PFN_GetProcAddressV2 = CUresult (*)(const char*, void**, int, cuuint64_t,
                                          CUdriverProcAddressQueryResult*);
using PFN_GetProcAddressV1 = CUresult (*)(const char*, void**, int, cuuint64_t);

/*! \brief Driver entry points this header uses; a null member means the driver lacks it. */
struct DriverApi {
  decltype(&::cuGetErrorName) GetErrorName = nullptr;
  decltype(&::cuGetErrorString) GetErrorString = nullptr;
  decltype(&::cuDriverGetVersion) DriverGetVersion = nullptr;
  decltype(&::cuDeviceGetCount) DeviceGetCount = nullptr;
  decltype(&::cuDeviceGet) DeviceGet = nullptr;
  decltype(&::cuDeviceGetAttribute) DeviceGetAttribute = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) DevicePrimaryCtxRetain = nullptr;
  decltype(&::cuDevicePrimaryCtxRelease) DevicePrimaryCtxRelease = nullptr;
  decltype(&::cuCtxGetCurrent) CtxGetCurrent = nullptr;
  decltype(&::cuCtxSetCurrent) CtxSetCurrent = nullptr;
  decltype(&::cuCtxPushCurrent) CtxPushCurrent = nullptr;
  decltype(&::cuCtxPopCurrent) CtxPopCurrent = nullptr;
  decltype(&::cuCtxGetDevice) CtxGetDevice = nullptr;
  decltype(&::cuStreamGetCtx) StreamGetCtx = nullptr;
  decltype(&::cuLibraryLoadData) LibraryLoadData = nullptr;
  decltype(&::cuLibraryUnload) LibraryUnload = nullptr;
  decltype(&::cuLibraryGetKernel) LibraryGetKernel = nullptr;
  decltype(&::cuKernelSetAttribute) KernelSetAttribute = nullptr;
  decltype(&::cuKernelGetAttribute) KernelGetAttribute = nullptr;
  decltype(&::cuLaunchKernel) LaunchKernel = nullptr;
  decltype(&::cuLaunchKernelEx) LaunchKernelEx = nullptr;
  PFN_KernelGetName KernelGetName = nullptr;
  PFN_KernelGetParamInfo KernelGetParamInfo = nullptr;
  PFN_LibraryGetKernelCount LibraryGetKernelCount = nullptr;
  PFN_LibraryEnumerateKernels LibraryEnumerateKernels = nullptr;
  int driver_version = 0;  // cuDriverGetVersion, e.g. 12040

  /*! \brief The process-wide table; throws RuntimeError when libcuda.so.1 is unusable. */
  TVM_FFI_HIDDEN static const DriverApi& Get() {
    // A magic static: thread-safe, and a failed (throwing) init is retried on the next call.
    static const DriverApi api = Load();
    return api;
  }

  /*! \brief Throws the "driver too old" error unless `fn` was found. */
  template <typename Fn>
  void Require(Fn fn, const char* name, int needed_version) const {
    if (fn == nullptr) ThrowMissing(name, needed_version);
  }

 private:
  [[noreturn]] void ThrowMissing(const char* name, int needed) const;
  // Opens libcuda.so.1, resolves every entry point and calls cuInit (see driver_api_impl.h).
  static DriverApi Load();

  decltype(&::cuInit) init_ = nullptr;
};

// ---- Section: runtime (cudart) error names, resolved only when reporting an error ----------
// Runtime and driver error codes are numerically identical, but the names differ
// (cudaErrorInvalidValue vs CUDA_ERROR_INVALID_VALUE) and only cudart knows its own. We never
// link it: look in the process first (a library linked with CUDA::cudart), then a copy that is
// already loaded, then load it.
struct RuntimeErrorNames {
  using NameFn = const char* (*)(int);
  NameFn name = nullptr;
  NameFn text = nullptr;

  TVM_FFI_HIDDEN static const RuntimeErrorNames& Get() {
    static const RuntimeErrorNames names = Load();
    return names;
  }

 private:
  static RuntimeErrorNames Load();
};

// ---- Section: context fallback for programs that never touched CUDA --------------------------
/*!
 * \brief Makes device 0's primary context current when no context is, as the runtime does on
 *  its first call. Returns false when a context was already current (nothing to fix).
 *  The primary context is retained for the life of the process, like the runtime's.
 */
bool EnsureCurrentContext(const DriverApi& api);

// ---- Section: making a device current (CUDADeviceGuard) ------------------------------------
/*!
 * \brief Device `device`'s primary context in `*ctx`, or the driver's error (and in `*failed`
 *  the entry point that gave it). Retained once per library and kept for the life of the
 *  process, as the runtime keeps it: a guard made on every call must not grow the driver's
 *  retain count without bound.
 */
inline CUresult PrimaryContext(const DriverApi& api, int device, CUcontext* ctx,
                               const char** failed) {
  constexpr int kCached = 128;  // device ordinals beyond this are retained on every call
  static std::atomic<CUcontext> cache[kCached];  // static storage: starts out all null
  const bool cacheable = device >= 0 && device < kCached;
  if (cacheable) {
    *ctx = cache[device].load(std::memory_order_acquire);
    if (*ctx != nullptr) return CUDA_SUCCESS;
  }
  CUdevice dev = 0;
  *failed = "cuDeviceGet";
  CUresult r = api.DeviceGet(&dev, device);
  if (r != CUDA_SUCCESS) return r;
  *failed = "cuDevicePrimaryCtxRetain";
  r = api.DevicePrimaryCtxRetain(ctx, dev);
  if (r != CUDA_SUCCESS || !cacheable) return r;
  CUcontext expected = nullptr;
  if (!cache[device].compare_exchange_strong(expected, *ctx, std::memory_order_acq_rel) &&
      api.DevicePrimaryCtxRelease != nullptr) {
    api.DevicePrimaryCtxRelease(dev);  // another thread cached it first: drop our extra reference
  }
  return CUDA_SUCCESS;
}

/*! \brief The device a launch on `stream` runs on (its context's, else the current one), or -1. */
int LaunchDevice(const DriverApi& api, CUstream stream);

}  // namespace details
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

// The definitions: here unless TVM_FFI_CUDA_SEPARATE_LAUNCHER moves them to
// detail/launcher_definitions_driver.h.
#ifndef TVM_FFI_CUDA_SEPARATE_LAUNCHER
#include <tvm/ffi/extra/cuda/detail/driver_api_impl.h>
#endif

#endif  // TVM_FFI_EXTRA_CUDA_DETAIL_DRIVER_API_H_
