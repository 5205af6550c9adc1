// The guide's C++ embedding example, in the same shape users paste it, plus the runtime-API
// spelling of the same launch in the same translation unit. Compiled, not run, by
// test_cubin_launcher_header.py (with g++ and nvcc, -Wall -Werror).
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/extra/cuda/cubin_launcher.h>
#include <tvm/ffi/function.h>

TVM_FFI_EMBED_CUBIN(my_kernels);

void LaunchMyKernel(tvm::ffi::TensorView x, tvm::ffi::TensorView y) {
  static auto kernel = TVM_FFI_EMBED_CUBIN_GET_KERNEL(my_kernels, "add_one");

  int64_t n = x.size(0);
  void* x_ptr = x.data_ptr();
  void* y_ptr = y.data_ptr();
  void* args[] = {&x_ptr, &y_ptr, &n};

  tvm::ffi::dim3 grid((n + 255) / 256);
  tvm::ffi::dim3 block(256);

  DLDevice device = x.device();
  CUstream stream =
      static_cast<CUstream>(TVMFFIEnvGetStream(device.device_type, device.device_id));

  CUresult result = kernel.Launch(args, grid, block, stream);
  TVM_FFI_CHECK_CUDA_DRIVER_ERROR(result);
}

// The review digest's runtime-API flavour of the same call.
void LaunchRuntimeSpelling(tvm::ffi::TensorView x, tvm::ffi::TensorView y) {
  static auto kernel = TVM_FFI_EMBED_CUBIN_GET_KERNEL(my_kernels, "add_one");
  int64_t n = x.size(0);
  void* x_ptr = x.data_ptr();
  void* y_ptr = y.data_ptr();
  void* args[] = {&x_ptr, &y_ptr, &n};
  cudaStream_t stream = static_cast<cudaStream_t>(
      TVMFFIEnvGetStream(x.device().device_type, x.device().device_id));
  cudaError_t result = kernel.Launch(args, tvm::ffi::dim3(1), tvm::ffi::dim3(256), stream, 1024);
  TVM_FFI_CHECK_CUDA_ERROR(result);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(launch_my_kernel, LaunchMyKernel);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(launch_runtime_spelling, LaunchRuntimeSpelling);
