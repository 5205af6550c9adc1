/*
 * The runtime declarations the launcher headers name: cudaError_t and ::dim3 (tvm::ffi::dim3
 * converts from it). See cuda.h here for why the compiled core declares these itself.
 */
#ifndef TVM_FFI_PY_CUDA_DECLS_CUDA_RUNTIME_H_
#define TVM_FFI_PY_CUDA_DECLS_CUDA_RUNTIME_H_

#include "driver_types.h"

struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
};

#endif  // TVM_FFI_PY_CUDA_DECLS_CUDA_RUNTIME_H_
