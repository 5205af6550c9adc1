// Kernels for the embedding tests; they are inspected and compared, never launched.
#include <cstdint>

#include "probe.cuh"

#ifndef PROBE_OPTIONS_SEEN
#error "tvm_ffi_generate_cubin did not pass OPTIONS to nvcc"
#endif

extern "C" __global__ void probe_scale(float* x, int64_t n) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= PROBE_SCALE;
}
