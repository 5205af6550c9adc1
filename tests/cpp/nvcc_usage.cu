// The core headers compiled by nvcc: a kernel wrapper the way the guide writes one, minus the
// CUBIN launcher (tested with its own header). Compiled with `nvcc -c`, never run.
#include <cuda_runtime.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/extra/stl.h>  // std::vector and std::tuple, as in apache-tvm-ffi
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

__global__ void AddOneKernel(const float* x, float* y, int64_t n) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + 1.0f;
}

void AddOne(tvm::ffi::TensorView x, tvm::ffi::TensorView y) {
  TVM_FFI_CHECK(x.device().device_type == kDLCUDA, ValueError) << "x must be on CUDA";
  TVM_FFI_CHECK(x.numel() == y.numel(), ValueError) << "size mismatch";
  int64_t n = x.size(0);
  DLDevice device = x.device();
  cudaStream_t stream =
      static_cast<cudaStream_t>(TVMFFIEnvGetStream(device.device_type, device.device_id));
  unsigned blocks = static_cast<unsigned>((n + 255) / 256);
  AddOneKernel<<<blocks, 256, 0, stream>>>(static_cast<const float*>(x.data_ptr()),
                                           static_cast<float*>(y.data_ptr()), n);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) TVM_FFI_THROW(RuntimeError) << cudaGetErrorString(err);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_one, AddOne);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(describe, [](tvm::ffi::String name, std::vector<int64_t> dims) {
  return std::make_tuple(name, static_cast<int64_t>(dims.size()), tvm::ffi::Bytes("x\0y", 3));
});
