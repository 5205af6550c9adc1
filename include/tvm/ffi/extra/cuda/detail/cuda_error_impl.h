/*
 * The definitions of detail/cuda_error.h's messages (see detail/launcher_linkage.h for where
 * they are compiled).
 */
#ifndef TVM_FFI_EXTRA_CUDA_DETAIL_CUDA_ERROR_IMPL_H_
#define TVM_FFI_EXTRA_CUDA_DETAIL_CUDA_ERROR_IMPL_H_

#include <cuda.h>
#include <tvm/ffi/extra/cuda/detail/cuda_error.h>

#include <cstdio>
#include <string>

TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace detail {

TVM_FFI_COLD TVM_FFI_DETAIL_LAUNCHER_INLINE std::string DriverErrorText(int code) {
  const char* name = nullptr;
  const char* text = nullptr;
  try {
    const DriverApi& api = DriverApi::Get();
    api.GetErrorName(static_cast<CUresult>(code), &name);
    api.GetErrorString(static_cast<CUresult>(code), &text);
  } catch (...) {
    // No driver to ask: the number alone still identifies the error.
  }
  return std::string(name ? name : "CUDA driver error") + " (" + std::to_string(code) +
         "): " + (text ? text : "no description (the CUDA driver could not be loaded)");
}

TVM_FFI_COLD TVM_FFI_DETAIL_LAUNCHER_INLINE std::string RuntimeErrorText(int code) {
  const RuntimeErrorNames& names = RuntimeErrorNames::Get();
  if (names.name != nullptr) {
    return std::string(names.name(code)) + " (" + std::to_string(code) + "): " + names.text(code);
  }
  return "cudaError (" + std::to_string(code) + "): no name available (libcudart is not loaded)";
}

TVM_FFI_COLD TVM_FFI_DETAIL_LAUNCHER_INLINE std::string ArchitectureNote(const ImageInfo& info,
                                                                         int device) {
  std::string note = "image holds " + DescribeArchs(info);
  try {
    const DriverApi& api = DriverApi::Get();
    CUdevice dev = 0;
    if (device < 0) device = 0;
    int major = 0, minor = 0;
    if (api.DeviceGet(&dev, device) == CUDA_SUCCESS &&
        api.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) ==
            CUDA_SUCCESS &&
        api.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) ==
            CUDA_SUCCESS) {
      note += " but device " + std::to_string(device) + " is sm_" + std::to_string(major) +
              std::to_string(minor);
    }
  } catch (...) {
  }
  return note;
}

TVM_FFI_COLD TVM_FFI_DETAIL_LAUNCHER_INLINE void SetLaunchFailure(int code,
                                                                  const std::string& where) {
  LaunchFailure& failure = LastLaunchFailure();
  failure.code = code;
  std::snprintf(failure.where, sizeof(failure.where), "%s", where.c_str());
}

TVM_FFI_COLD TVM_FFI_DETAIL_LAUNCHER_INLINE std::string TakeLaunchFailureNote(int code) {
  LaunchFailure& failure = LastLaunchFailure();
  if (failure.code == 0 || failure.code != code) return std::string();
  std::string note = std::string(" [") + failure.where + "]";
  failure.code = 0;
  failure.where[0] = '\0';
  return note;
}

}  // namespace detail
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END
#endif  // TVM_FFI_EXTRA_CUDA_DETAIL_CUDA_ERROR_IMPL_H_
