/*
 * Turning CUDA result codes into messages: driver and runtime names, the architecture note,
 * and the per-thread record that lets TVM_FFI_CHECK_CUDA_*_ERROR say which kernel failed.
 * Everything here runs only once something has already gone wrong.
 */
#ifndef TVM_FFI_EXTRA_CUDA_DETAIL_CUDA_ERROR_H_
#define TVM_FFI_EXTRA_CUDA_DETAIL_CUDA_ERROR_H_

#include <cuda.h>
#include <driver_types.h>
#include <tvm/ffi/base.h>
#include <tvm/ffi/extra/cuda/detail/cubin_image.h>
#include <tvm/ffi/extra/cuda/detail/driver_api.h>

#include <cstdio>
#include <string>
#include <utility>

// Hidden: each library keeps its own copy; no library binds to another's instantiations.
TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace detail {

/*! \brief "CUDA_ERROR_INVALID_VALUE (1): invalid argument". Never throws. */
TVM_FFI_COLD inline std::string DriverErrorText(int code) {
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

/*! \brief "cudaErrorInvalidValue (1): invalid argument". Never throws. */
TVM_FFI_COLD inline std::string RuntimeErrorText(int code) {
  const RuntimeErrorNames& names = RuntimeErrorNames::Get();
  if (names.name != nullptr) {
    return std::string(names.name(code)) + " (" + std::to_string(code) + "): " + names.text(code);
  }
  return "cudaError (" + std::to_string(code) + "): no name available (libcudart is not loaded)";
}

/*! \brief Codes after which the useful question is "is this image for this GPU?". */
inline bool IsArchitectureError(int code) {
  return code == CUDA_ERROR_NO_BINARY_FOR_GPU || code == CUDA_ERROR_INVALID_IMAGE ||
         code == CUDA_ERROR_INVALID_PTX || code == CUDA_ERROR_UNSUPPORTED_PTX_VERSION ||
         code == CUDA_ERROR_INVALID_SOURCE;
}

/*! \brief "image holds sm_80 (cubin) but device 0 is sm_90"; device < 0 means "unknown". */
TVM_FFI_COLD inline std::string ArchitectureNote(const ImageInfo& info, int device) {
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

/*!
 * \brief Which launch failed last on this thread, for the check macros. Written only when a
 *  launch fails; `code` ties it to that failure so an unrelated error never picks it up.
 */
struct LaunchFailure {
  int code;
  // A fixed buffer keeps the thread_local plain data: no guard variable, no TLS destructor.
  char where[480];
};

TVM_FFI_DLL_LOCAL inline LaunchFailure& LastLaunchFailure() {
  // global-dynamic: a hidden thread-local would otherwise get the local-exec model when the
  // code is compiled as a position-independent executable (the default of many GCCs), and a
  // shared library cannot hold that (ld: "R_X86_64_TPOFF32 ... making a shared object").
  // The extra __tls_get_addr call is paid only after a failure. __thread, not thread_local:
  // nvcc's front end accepts tls_model only there (the struct is plain data, as __thread needs).
  static __thread LaunchFailure failure __attribute__((tls_model("global-dynamic")));
  return failure;
}

TVM_FFI_COLD inline void SetLaunchFailure(int code, const std::string& where) {
  LaunchFailure& failure = LastLaunchFailure();
  failure.code = code;
  std::snprintf(failure.where, sizeof(failure.where), "%s", where.c_str());
}

/*! \brief " [cuLaunchKernel of kernel ...]" when the last failed launch gave `code`, else "". */
TVM_FFI_COLD inline std::string TakeLaunchFailureNote(int code) {
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
#endif  // TVM_FFI_EXTRA_CUDA_DETAIL_CUDA_ERROR_H_
