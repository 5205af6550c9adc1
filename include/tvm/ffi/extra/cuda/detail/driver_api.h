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
#include <tvm/ffi/base.h>
#include <tvm/ffi/error.h>

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
namespace detail {

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
  TVM_FFI_DLL_LOCAL static const DriverApi& Get() {
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
  [[noreturn]] TVM_FFI_COLD void ThrowMissing(const char* name, int needed) const {
    TVM_FFI_THROW(RuntimeError) << "the CUDA driver has no entry point " << name << ": it needs a "
                                << "driver for CUDA " << needed / 1000 << "." << needed % 1000 / 10
                                << " or newer, this driver supports CUDA " << driver_version / 1000
                                << "." << driver_version % 1000 / 10;
    throw;  // unreachable; keeps [[noreturn]] honest if TVM_FFI_THROW is not seen as noreturn
  }

  TVM_FFI_COLD static DriverApi Load() {
    // RTLD_LOCAL: the process may hold its own libcuda symbols; we never interpose on them.
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* why = dlerror();
      TVM_FFI_THROW(RuntimeError)
          << "cannot load the CUDA driver library libcuda.so.1 (" << (why ? why : "unknown error")
          << "); is an NVIDIA driver installed and is this a machine with a GPU?";
    }
    // The handle is kept for the life of the process on purpose: kernels may run until exit.
    DriverApi api;
    auto get_v2 = reinterpret_cast<PFN_GetProcAddressV2>(dlsym(lib, "cuGetProcAddress_v2"));
    auto get_v1 = reinterpret_cast<PFN_GetProcAddressV1>(dlsym(lib, "cuGetProcAddress"));
    if (get_v2 == nullptr && get_v1 == nullptr) {
      TVM_FFI_THROW(RuntimeError) << "libcuda.so.1 has no cuGetProcAddress: the CUDA driver is "
                                  << "too old (CUDA 12.0 or newer is needed)";
    }
    // `version` picks which ABI of a name the driver hands out: cuGetProcAddress returns the
    // newest variant up to that version, and some names gained a parameter later (CUDA
    // 12.5's cuStreamGetCtx_v2, 13.0's cuCtxGetDevice_v2) while the plain declarations we
    // call through keep the old one. Those are asked for at 12.0.
    auto resolve = [&](const char* name, auto& slot, int version = CUDA_VERSION) {
      void* fn = nullptr;
      CUresult r;
      if (get_v2 != nullptr) {
        CUdriverProcAddressQueryResult status;
        r = get_v2(name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &status);
      } else {
        r = get_v1(name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT);
      }
      slot = (r == CUDA_SUCCESS) ? reinterpret_cast<std::decay_t<decltype(slot)>>(fn) : nullptr;
    };
    resolve("cuGetErrorName", api.GetErrorName);
    resolve("cuGetErrorString", api.GetErrorString);
    resolve("cuDriverGetVersion", api.DriverGetVersion);
    resolve("cuInit", api.init_);
    resolve("cuDeviceGetCount", api.DeviceGetCount);
    resolve("cuDeviceGet", api.DeviceGet);
    resolve("cuDeviceGetAttribute", api.DeviceGetAttribute);
    resolve("cuDevicePrimaryCtxRetain", api.DevicePrimaryCtxRetain);
    resolve("cuDevicePrimaryCtxRelease", api.DevicePrimaryCtxRelease);
    resolve("cuCtxGetCurrent", api.CtxGetCurrent);
    resolve("cuCtxSetCurrent", api.CtxSetCurrent);
    resolve("cuCtxPushCurrent", api.CtxPushCurrent);
    resolve("cuCtxPopCurrent", api.CtxPopCurrent);
    resolve("cuCtxGetDevice", api.CtxGetDevice, 12000);
    resolve("cuStreamGetCtx", api.StreamGetCtx, 12000);
    resolve("cuLibraryLoadData", api.LibraryLoadData);
    resolve("cuLibraryUnload", api.LibraryUnload);
    resolve("cuLibraryGetKernel", api.LibraryGetKernel);
    resolve("cuKernelSetAttribute", api.KernelSetAttribute);
    resolve("cuKernelGetAttribute", api.KernelGetAttribute);
    resolve("cuLaunchKernel", api.LaunchKernel);
    resolve("cuLaunchKernelEx", api.LaunchKernelEx);
    resolve("cuKernelGetName", api.KernelGetName);
    resolve("cuKernelGetParamInfo", api.KernelGetParamInfo);
    resolve("cuLibraryGetKernelCount", api.LibraryGetKernelCount);
    resolve("cuLibraryEnumerateKernels", api.LibraryEnumerateKernels);
    if (api.DriverGetVersion != nullptr) api.DriverGetVersion(&api.driver_version);
    // What every module needs; the rest is checked where it is used.
    api.Require(api.init_, "cuInit", 2000);
    api.Require(api.LibraryLoadData, "cuLibraryLoadData", 12000);
    api.Require(api.LibraryGetKernel, "cuLibraryGetKernel", 12000);
    api.Require(api.LibraryUnload, "cuLibraryUnload", 12000);
    api.Require(api.LaunchKernel, "cuLaunchKernel", 4000);
    api.Require(api.LaunchKernelEx, "cuLaunchKernelEx", 11080);
    api.Require(api.KernelSetAttribute, "cuKernelSetAttribute", 12000);
    CUresult r = api.init_(0);
    if (r != CUDA_SUCCESS) {
      const char* name = nullptr;
      const char* text = nullptr;
      if (api.GetErrorName) api.GetErrorName(r, &name);
      if (api.GetErrorString) api.GetErrorString(r, &text);
      TVM_FFI_THROW(RuntimeError) << "cuInit(0): " << (name ? name : "CUDA error") << " ("
                                  << static_cast<int>(r) << "): " << (text ? text : "unknown")
                                  << " (libcuda.so.1 loaded, but the driver found no usable GPU)";
    }
    return api;
  }

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

  TVM_FFI_DLL_LOCAL static const RuntimeErrorNames& Get() {
    static const RuntimeErrorNames names = Load();
    return names;
  }

 private:
  TVM_FFI_COLD static RuntimeErrorNames Load() {
    RuntimeErrorNames out;
    auto take = [&](void* handle) {
      if (handle == nullptr) return false;
      out.name = reinterpret_cast<NameFn>(dlsym(handle, "cudaGetErrorName"));
      out.text = reinterpret_cast<NameFn>(dlsym(handle, "cudaGetErrorString"));
      return out.name != nullptr && out.text != nullptr;
    };
    if (take(RTLD_DEFAULT)) return out;
    const std::string versioned = "libcudart.so." + std::to_string(CUDA_VERSION / 1000);
    for (const char* file : {versioned.c_str(), "libcudart.so"}) {
      if (take(dlopen(file, RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD))) return out;
    }
    for (const char* file : {versioned.c_str(), "libcudart.so"}) {
      if (take(dlopen(file, RTLD_LAZY | RTLD_LOCAL))) return out;
    }
    out.name = out.text = nullptr;
    return out;
  }
};

// ---- Section: context fallback for programs that never touched CUDA --------------------------
/*!
 * \brief Makes device 0's primary context current when no context is, as the runtime does on
 *  its first call. Returns false when a context was already current (nothing to fix).
 *  The primary context is retained for the life of the process, like the runtime's.
 */
inline bool EnsureCurrentContext(const DriverApi& api) {
  CUcontext ctx = nullptr;
  if (api.CtxGetCurrent == nullptr || api.CtxGetCurrent(&ctx) != CUDA_SUCCESS || ctx != nullptr) {
    return false;
  }
  CUdevice dev = 0;
  if (api.DeviceGet(&dev, 0) != CUDA_SUCCESS) return false;
  if (api.DevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS) return false;
  return api.CtxSetCurrent(ctx) == CUDA_SUCCESS;
}

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
inline int LaunchDevice(const DriverApi& api, CUstream stream) {
  CUcontext ctx = nullptr;
  if (stream != nullptr && api.StreamGetCtx != nullptr) {
    if (api.StreamGetCtx(stream, &ctx) != CUDA_SUCCESS) ctx = nullptr;
  }
  CUdevice dev = -1;
  if (ctx != nullptr && api.CtxPushCurrent(ctx) == CUDA_SUCCESS) {
    if (api.CtxGetDevice(&dev) != CUDA_SUCCESS) dev = -1;
    CUcontext popped;
    api.CtxPopCurrent(&popped);
    return dev;
  }
  if (api.CtxGetDevice(&dev) != CUDA_SUCCESS) return -1;
  return dev;
}

}  // namespace detail
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END
#endif  // TVM_FFI_EXTRA_CUDA_DETAIL_DRIVER_API_H_
