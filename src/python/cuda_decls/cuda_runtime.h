/*
 * The runtime declarations the launcher headers name: cudaError_t and ::dim3 (tvm::ffi::dim3
 * converts from it). See cuda.h here for why the compiled core declares these itself.
 */
#ifndef TVM_FFI_PY_CUDA_DECLS_CUDA_RUNTIME_H_
#define TVM_FFI_PY_CUDA_DECLS_CUDA_RUNTIME_H_

#include "driver_types.h"  // ::dim3 is there, as the runtime's launch configuration needs it

#endif  // TVM_FFI_PY_CUDA_DECLS_CUDA_RUNTIME_H_
