// Wrapper code in the shape written for apache-tvm-ffi's CUDA headers (kernel libraries,
// its tests and examples), using every compatibility name: the cuda_api types and functions,
// ConstructLaunchConfig + LaunchEx, CUDADeviceGuard, both embed macros and the struct they
// define, and the driver-API branch. Compiled, not run, by test_apache_compat.py (g++ and
// nvcc, -Wall -Wextra -Werror).
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/extra/cuda/base.h>
#include <tvm/ffi/extra/cuda/cubin_launcher.h>
#include <tvm/ffi/extra/cuda/device_guard.h>
#include <tvm/ffi/extra/cuda/internal/unified_api.h>
#include <tvm/ffi/function.h>

#include <cstdint>
#include <type_traits>

namespace ffi = tvm::ffi;
namespace cuda_api = tvm::ffi::cuda_api;

// Code that supports both of apache's back ends picks the driver branch here.
#if TVM_FFI_CUBIN_LAUNCHER_USE_DRIVER_API
using ExpectedStream = CUstream;
using ExpectedResult = CUresult;
#else
#error "TVM_FFI_CUBIN_LAUNCHER_USE_DRIVER_API must be 1"
#endif

static_assert(std::is_same<cuda_api::StreamHandle, ExpectedStream>::value, "");
static_assert(std::is_same<cuda_api::ResultType, ExpectedResult>::value, "");
static_assert(std::is_same<cuda_api::DeviceHandle, CUdevice>::value, "");
static_assert(std::is_same<cuda_api::LibraryHandle, CUlibrary>::value, "");
static_assert(std::is_same<cuda_api::KernelHandle, CUkernel>::value, "");
static_assert(std::is_same<cuda_api::LaunchConfig, CUlaunchConfig>::value, "");
static_assert(std::is_same<cuda_api::LaunchAttrType, CUlaunchAttribute>::value, "");
static_assert(std::is_same<cuda_api::DeviceAttrType, CUdevice_attribute>::value, "");
static_assert(cuda_api::kSuccess == CUDA_SUCCESS, "");
static_assert(std::is_same<decltype(std::declval<const ffi::CubinKernel&>().GetHandle()),
                           cuda_api::KernelHandle>::value,
              "");
static_assert(!std::is_default_constructible<ffi::CUDADeviceGuard>::value, "");
static_assert(!std::is_convertible<int, ffi::CUDADeviceGuard>::value, "explicit");
static_assert(!std::is_convertible<const unsigned char*, ffi::CubinModule>::value, "explicit");

// bin2c output (`bin2c --name kernel_image k.cubin`, abridged), a char array and the
// 8-byte elements of `bin2c --type longlong`.
static const unsigned char kernel_image[] = {0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x01, 0x33};
static const char kernel_chars[] = {0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x01, 0x33};
static const unsigned long long kernel_words[] = {0x3301010246454c7fULL};
extern const unsigned char kernel_unsized[];  // defined elsewhere, size unknown here

TVM_FFI_EMBED_CUBIN(apache_style);
TVM_FFI_EMBED_CUBIN_FROM_BYTES(from_bin2c, kernel_image);
TVM_FFI_EMBED_CUBIN_FROM_BYTES(from_chars, kernel_chars);
TVM_FFI_EMBED_CUBIN_FROM_BYTES(from_words, kernel_words);
TVM_FFI_EMBED_CUBIN_FROM_BYTES(from_unsized, kernel_unsized);

// Generated host code reaches for the struct directly.
static_assert(std::is_same<decltype(EmbedCubinModule_apache_style::Global()),
                           EmbedCubinModule_apache_style*>::value,
              "");
static_assert(
    std::is_same<decltype(EmbedCubinModule_from_bin2c::Global()->mod), ffi::CubinModule>::value,
    "");

static cuda_api::StreamHandle StreamOf(ffi::TensorView t) {
  return static_cast<cuda_api::StreamHandle>(
      TVMFFIEnvGetStream(t.device().device_type, t.device().device_id));
}

void LaunchWithCluster(ffi::TensorView out, int64_t cluster) {
  ffi::CUDADeviceGuard guard(out.device().device_id);
  static auto kernel = TVM_FFI_EMBED_CUBIN_GET_KERNEL(apache_style, "cluster_info");
  cuda_api::LaunchConfig config;
  cuda_api::LaunchAttrType attr;
  TVM_FFI_CHECK_CUBIN_LAUNCHER_CUDA_ERROR(
      cuda_api::ConstructLaunchConfig(kernel.GetHandle(), StreamOf(out), 0, ffi::dim3(8),
                                      ffi::dim3(32), static_cast<int>(cluster), config, attr));
  void* p = out.data_ptr();
  void* args[] = {&p};
  TVM_FFI_CHECK_CUBIN_LAUNCHER_CUDA_ERROR(kernel.LaunchEx(args, config));
  TVM_FFI_CHECK_CUBIN_LAUNCHER_CUDA_ERROR(
      cuda_api::LaunchKernelEx(kernel.GetHandle(), args, config));
  cuda_api::ResultType r = kernel.Launch(args, ffi::dim3(8), ffi::dim3(32), StreamOf(out));
  if (r != cuda_api::kSuccess) {
    const char* name = nullptr;
    const char* text = nullptr;
    cuda_api::GetErrorString(r, &name, &text);
    TVM_FFI_THROW(RuntimeError) << name << ": " << text;
  }
}

void LaunchFromBytes(ffi::TensorView x, ffi::TensorView y) {
  static auto kernel = TVM_FFI_EMBED_CUBIN_GET_KERNEL(from_bin2c, "add_one");
  static auto same = EmbedCubinModule_from_bin2c::Global()->mod["add_one"];
  static auto big = EmbedCubinModule_from_chars::Global()->mod.GetKernelWithMaxDynamicSharedMemory(
      "add_one", 100 * 1024);
  const ffi::CubinModule& words = TVM_FFI_EMBED_CUBIN_GET_MODULE(from_words);
  (void)words.GetHandle();
  (void)EmbedCubinModule_from_unsized::Global()->mod.GetHandle();
  void* xp = x.data_ptr();
  void* yp = y.data_ptr();
  int64_t n = x.size(0);
  void* args[] = {&xp, &yp, &n};
  TVM_FFI_CHECK_CUBIN_LAUNCHER_CUDA_ERROR(
      kernel.Launch(args, ffi::dim3((n + 255) / 256), ffi::dim3(256), StreamOf(x)));
  TVM_FFI_CHECK_CUDA_ERROR(same.Launch(args, ffi::dim3(1), ffi::dim3(1), StreamOf(x)));
  TVM_FFI_CHECK_CUDA_ERROR(big.Launch(args, ffi::dim3(1), ffi::dim3(1), StreamOf(x), 100 * 1024));
}

// The unified functions as kernel libraries call them around a CubinKernel they own.
void RawApi(const unsigned char* image, ffi::TensorView x) {
  ffi::CubinModule module(image);
  cuda_api::LibraryHandle library = nullptr;
  TVM_FFI_CHECK_CUBIN_LAUNCHER_CUDA_ERROR(cuda_api::LoadLibrary(&library, image));
  cuda_api::KernelHandle kernel = nullptr;
  TVM_FFI_CHECK_CUBIN_LAUNCHER_CUDA_ERROR(cuda_api::GetKernel(&kernel, library, "add_one"));
  int count = 0;
  TVM_FFI_CHECK_CUBIN_LAUNCHER_CUDA_ERROR(cuda_api::GetDeviceCount(&count));
  for (int i = 0; i < count; ++i) {
    cuda_api::DeviceHandle device = cuda_api::GetDeviceHandle(i);
    int optin = 0;
    int static_smem = 0;
    TVM_FFI_CHECK_CUBIN_LAUNCHER_CUDA_ERROR(cuda_api::GetDeviceAttribute(
        &optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device));
    TVM_FFI_CHECK_CUBIN_LAUNCHER_CUDA_ERROR(
        cuda_api::GetKernelSharedMem(kernel, static_smem, device));
    TVM_FFI_CHECK_CUBIN_LAUNCHER_CUDA_ERROR(
        cuda_api::SetKernelMaxDynamicSharedMem(kernel, optin - static_smem, device));
  }
  void* xp = x.data_ptr();
  void* args[] = {&xp};
  TVM_FFI_CHECK_CUBIN_LAUNCHER_CUDA_ERROR(
      cuda_api::LaunchKernel(kernel, args, ffi::dim3(1), ffi::dim3(32), StreamOf(x)));
  TVM_FFI_CHECK_CUBIN_LAUNCHER_CUDA_ERROR(
      cuda_api::LaunchKernel(kernel, args, ffi::dim3(1), ffi::dim3(32), StreamOf(x), 1024));
  TVM_FFI_CHECK_CUBIN_LAUNCHER_CUDA_ERROR(cuda_api::UnloadLibrary(library));
}

// Runtime-API code next to the launcher: base.h brings the runtime's declarations.
void RuntimeCalls(ffi::TensorView x) {
  ffi::CUDADeviceGuard guard(x.device().device_id);
  int device = -1;
  TVM_FFI_CHECK_CUDA_ERROR(cudaGetDevice(&device));
  TVM_FFI_CHECK_CUDA_ERROR(
      cudaMemsetAsync(x.data_ptr(), 0, 4, static_cast<cudaStream_t>(StreamOf(x))));
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(launch_with_cluster, LaunchWithCluster);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(launch_from_bytes, LaunchFromBytes);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(runtime_calls, RuntimeCalls);
