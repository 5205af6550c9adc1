// y[i] = x[i] + 1, compiled by add_tvm_ffi_cubin, add_tvm_ffi_fatbin and tvm_ffi_generate_cubin.
#include <cstdint>

extern "C" __global__ void add_one(const float* x, float* y, int64_t n) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + 1.0f;
}
