/*
 * tvm::ffi::cuda_api: the names apache-tvm-ffi's launcher code uses to talk to CUDA without
 * saying which API (driver or runtime) it talks to. Here there is one answer, the driver API:
 * the types are driver types and every function goes through the dlopen'ed driver table of
 * detail/driver_api.h, so code using them links with nothing CUDA-specific.
 *
 * The functions return the driver's CUresult and do nothing else: no error recording, no
 * context set-up. Where the driver cannot be loaded at all they throw RuntimeError (as every
 * other entry point of this package does); GetErrorString never throws.
 *
 * The path is apache-tvm-ffi's, kept so that its users' includes work: despite the folder's
 * name this header is public API. This package's word for "not public" is detail/.
 */
#ifndef TVM_FFI_EXTRA_CUDA_INTERNAL_UNIFIED_API_H_
#define TVM_FFI_EXTRA_CUDA_INTERNAL_UNIFIED_API_H_

// Code written for apache-tvm-ffi branches on this macro; 1 makes it take the driver branch.
#ifndef TVM_FFI_CUBIN_LAUNCHER_USE_DRIVER_API
#define TVM_FFI_CUBIN_LAUNCHER_USE_DRIVER_API 1
#elif !(TVM_FFI_CUBIN_LAUNCHER_USE_DRIVER_API)
#error \
    "TVM_FFI_CUBIN_LAUNCHER_USE_DRIVER_API is 0, but this package (tvm-ffi-cubin) launches kernels through the CUDA driver API only: tvm::ffi::cuda_api has driver types (CUstream, CUkernel, CUresult), and no runtime-API variant exists. Remove the definition (or define it to 1)."
#endif

#include <cuda.h>
#include <driver_types.h>
#include <tvm/ffi/base_detail.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/cuda/base.h>
#include <tvm/ffi/extra/cuda/detail/cuda_error.h>
#include <tvm/ffi/extra/cuda/detail/driver_api.h>

#include <cstddef>
#include <cstdint>

// Hidden: each library keeps its own copy; no library binds to another's instantiations.
TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace details {

// The runtime API's launch attributes are the driver's under other names: the same ids, the
// same value layout (the runtime passes them on to cuLaunchKernelEx). These hold that.
static_assert(sizeof(cudaLaunchAttribute) == sizeof(CUlaunchAttribute) &&
                  offsetof(cudaLaunchAttribute, val) == offsetof(CUlaunchAttribute, value) &&
                  sizeof(cudaLaunchAttributeValue) == sizeof(CUlaunchAttributeValue),
              "cudaLaunchAttribute and CUlaunchAttribute differ in layout");
static_assert(static_cast<int>(cudaLaunchAttributeCooperative) ==
                      static_cast<int>(CU_LAUNCH_ATTRIBUTE_COOPERATIVE) &&
                  static_cast<int>(cudaLaunchAttributeClusterDimension) ==
                      static_cast<int>(CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) &&
                  static_cast<int>(cudaLaunchAttributeProgrammaticStreamSerialization) ==
                      static_cast<int>(CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION),
              "cudaLaunchAttributeID and CUlaunchAttributeID differ");

/*! \brief The driver's view of a runtime-API launch configuration; attributes are shared. */
inline CUlaunchConfig DriverLaunchConfig(const cudaLaunchConfig_t& config) noexcept {
  CUlaunchConfig raw{};
  raw.gridDimX = config.gridDim.x;
  raw.gridDimY = config.gridDim.y;
  raw.gridDimZ = config.gridDim.z;
  raw.blockDimX = config.blockDim.x;
  raw.blockDimY = config.blockDim.y;
  raw.blockDimZ = config.blockDim.z;
  raw.sharedMemBytes = static_cast<unsigned>(config.dynamicSmemBytes);
  raw.hStream = config.stream;  // cudaStream_t is CUstream
  raw.attrs = reinterpret_cast<CUlaunchAttribute*>(config.attrs);
  raw.numAttrs = config.numAttrs;
  return raw;
}

}  // namespace details

namespace cuda_api {

using StreamHandle = CUstream;
using DeviceHandle = CUdevice;
using LibraryHandle = CUlibrary;
using KernelHandle = CUkernel;
using LaunchConfig = CUlaunchConfig;
using LaunchAttrType = CUlaunchAttribute;
using ResultType = CUresult;
using DeviceAttrType = CUdevice_attribute;

constexpr ResultType kSuccess = CUDA_SUCCESS;

/*! \brief The driver's name and description of `err`; never throws, never leaves them null. */
inline void GetErrorString(ResultType err, const char** name, const char** text) {
  *name = nullptr;
  *text = nullptr;
  try {
    const details::DriverApi& api = details::DriverApi::Get();
    if (api.GetErrorName(err, name) != CUDA_SUCCESS) *name = nullptr;
    if (api.GetErrorString(err, text) != CUDA_SUCCESS) *text = nullptr;
  } catch (...) {
    // No driver to ask; the fallbacks below still say what happened.
  }
  if (*name == nullptr) *name = "CUDA driver error";
  if (*text == nullptr) *text = "no description (the CUDA driver could not be loaded)";
}

/*! \brief cuLibraryLoadData of an image the driver can size itself (CUBIN, fatbin, PTX). */
inline ResultType LoadLibrary(LibraryHandle* library, const void* image) {
  return details::DriverApi::Get().LibraryLoadData(library, image, nullptr, nullptr, 0, nullptr,
                                                   nullptr, 0);
}

inline ResultType UnloadLibrary(LibraryHandle library) {
  return details::DriverApi::Get().LibraryUnload(library);
}

inline ResultType GetKernel(KernelHandle* kernel, LibraryHandle library, const char* name) {
  return details::DriverApi::Get().LibraryGetKernel(kernel, library, name);
}

/*! \brief The driver's handle of device ordinal `device_id`; throws RuntimeError naming it. */
inline DeviceHandle GetDeviceHandle(int device_id) {
  CUdevice dev = 0;
  const CUresult r = details::DriverApi::Get().DeviceGet(&dev, device_id);
  if (r != CUDA_SUCCESS) {
    TVM_FFI_THROW(RuntimeError) << "cuDeviceGet(" << device_id
                                << "): " << details::DriverErrorText(r);
  }
  return dev;
}

inline ResultType GetDeviceCount(int* count) {
  return details::DriverApi::Get().DeviceGetCount(count);
}

inline ResultType GetDeviceAttribute(int* value, DeviceAttrType attr, DeviceHandle device) {
  return details::DriverApi::Get().DeviceGetAttribute(value, attr, device);
}

/*! \brief The kernel's static shared memory per block on `device`, in bytes. */
inline ResultType GetKernelSharedMem(KernelHandle kernel, int& out, DeviceHandle device) {
  return details::DriverApi::Get().KernelGetAttribute(&out, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                                                      kernel, device);
}

/*! \brief Allows `shmem` bytes of dynamic shared memory per block on `device`. */
inline ResultType SetKernelMaxDynamicSharedMem(KernelHandle kernel, int shmem,
                                               DeviceHandle device) {
  return details::DriverApi::Get().KernelSetAttribute(
      CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shmem, kernel, device);
}

/*! \brief cuLaunchKernel; a CUkernel is accepted wherever the driver takes a CUfunction. */
inline ResultType LaunchKernel(KernelHandle kernel, void** args, dim3 grid, dim3 block,
                               StreamHandle stream, uint32_t dyn_smem_bytes = 0) {
  return details::DriverApi::Get().LaunchKernel(reinterpret_cast<CUfunction>(kernel), grid.x,
                                                grid.y, grid.z, block.x, block.y, block.z,
                                                dyn_smem_bytes, stream, args, nullptr);
}

/*! \brief cuLaunchKernelEx with a configuration built by the caller. */
inline ResultType LaunchKernelEx(KernelHandle kernel, void** args, const LaunchConfig& config) {
  return details::DriverApi::Get().LaunchKernelEx(&config, reinterpret_cast<CUfunction>(kernel),
                                                  args, nullptr);
}

// compat: apache-tvm-ffi (code written for its runtime-API mode builds a cudaLaunchConfig_t)
inline ResultType LaunchKernelEx(KernelHandle kernel, void** args,
                                 const cudaLaunchConfig_t& config) {
  return LaunchKernelEx(kernel, args, details::DriverLaunchConfig(config));
}

/*!
 * \brief Fills `config` for a launch of `grid` x `block` on `stream` with `smem` bytes of
 *  dynamic shared memory. `cluster_dim` > 1 adds a cluster of that many blocks along x, stored
 *  in `attr`, which must outlive the launch; 1 adds no attribute. A `cluster_dim` below 1 is
 *  CUDA_ERROR_INVALID_VALUE. `kernel` is not needed by the driver API and is not read.
 */
inline ResultType ConstructLaunchConfig(KernelHandle kernel, StreamHandle stream, uint32_t smem,
                                        dim3 grid, dim3 block, int cluster_dim,
                                        LaunchConfig& config, LaunchAttrType& attr) {
  (void)kernel;
  config = LaunchConfig{};
  config.gridDimX = grid.x;
  config.gridDimY = grid.y;
  config.gridDimZ = grid.z;
  config.blockDimX = block.x;
  config.blockDimY = block.y;
  config.blockDimZ = block.z;
  config.sharedMemBytes = smem;
  config.hStream = stream;
  config.attrs = nullptr;
  config.numAttrs = 0;
  if (cluster_dim < 1) return CUDA_ERROR_INVALID_VALUE;
  if (cluster_dim > 1) {
    attr = LaunchAttrType{};
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = static_cast<unsigned>(cluster_dim);
    attr.value.clusterDim.y = 1;
    attr.value.clusterDim.z = 1;
    config.attrs = &attr;
    config.numAttrs = 1;
  }
  return kSuccess;
}

}  // namespace cuda_api
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

/*! \brief TVM_FFI_CHECK_CUDA_DRIVER_ERROR under apache-tvm-ffi's launcher name (driver names). */
#define TVM_FFI_CHECK_CUBIN_LAUNCHER_CUDA_ERROR(expr) TVM_FFI_CHECK_CUDA_DRIVER_ERROR(expr)

#endif  // TVM_FFI_EXTRA_CUDA_INTERNAL_UNIFIED_API_H_
