/*
 * The definitions of detail/cuda_error.h's messages. Included after that header's
 * declarations, by it or by launcher_definitions_driver.h (see detail/launcher_linkage.h).
 */
#ifndef TVM_FFI_EXTRA_CUDA_DETAIL_CUDA_ERROR_IMPL_H_
#define TVM_FFI_EXTRA_CUDA_DETAIL_CUDA_ERROR_IMPL_H_

#include <cuda.h>

#include <cstdio>
#include <string>

TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace details {

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

}  // namespace details
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END
#endif  // TVM_FFI_EXTRA_CUDA_DETAIL_CUDA_ERROR_IMPL_H_
