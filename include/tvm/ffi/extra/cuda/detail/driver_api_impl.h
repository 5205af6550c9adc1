/*
 * The definitions of detail/driver_api.h's run-once functions. Included after that header's
 * declarations, by it or by launcher_definitions_driver.h (see detail/launcher_linkage.h).
 */
#ifndef TVM_FFI_EXTRA_CUDA_DETAIL_DRIVER_API_IMPL_H_
#define TVM_FFI_EXTRA_CUDA_DETAIL_DRIVER_API_IMPL_H_

#include <cuda.h>
#include <dlfcn.h>
#include <tvm/ffi/error.h>

#include <string>
#include <type_traits>

TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace details {

// ---- Section: bootstrap (cuGetProcAddress itself) -----------------------------------------
TVM_FFI_COLD TVM_FFI_DETAIL_LAUNCHER_INLINE void DriverApi::ThrowMissing(const char* name,
                                                                         int needed) const {
  TVM_FFI_THROW(RuntimeError) << "the CUDA driver has no entry point " << name << ": it needs a "
                              << "driver for CUDA " << needed / 1000 << "." << needed % 1000 / 10
                              << " or newer, this driver supports CUDA " << driver_version / 1000
                              << "." << driver_version % 1000 / 10;
  throw;  // unreachable; keeps [[noreturn]] honest if TVM_FFI_THROW is not seen as noreturn
}

TVM_FFI_COLD TVM_FFI_DETAIL_LAUNCHER_INLINE DriverApi DriverApi::Load() {
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

// ---- Section: runtime (cudart) error names, resolved only when reporting an error ----------
TVM_FFI_COLD TVM_FFI_DETAIL_LAUNCHER_INLINE RuntimeErrorNames RuntimeErrorNames::Load() {
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

// ---- Section: context fallback for programs that never touched CUDA --------------------------
TVM_FFI_DETAIL_LAUNCHER_INLINE bool EnsureCurrentContext(const DriverApi& api) {
  CUcontext ctx = nullptr;
  if (api.CtxGetCurrent == nullptr || api.CtxGetCurrent(&ctx) != CUDA_SUCCESS || ctx != nullptr) {
    return false;
  }
  CUdevice dev = 0;
  if (api.DeviceGet(&dev, 0) != CUDA_SUCCESS) return false;
  if (api.DevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS) return false;
  return api.CtxSetCurrent(ctx) == CUDA_SUCCESS;
}

// ---- Section: making a device current ---------------------------------------------------
TVM_FFI_DETAIL_LAUNCHER_INLINE int LaunchDevice(const DriverApi& api, CUstream stream) {
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

}  // namespace details
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END
#endif  // TVM_FFI_EXTRA_CUDA_DETAIL_DRIVER_API_IMPL_H_
