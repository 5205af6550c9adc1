/*
 * The CUDA runtime's error type, as the launcher headers name it (see cuda.h here for why
 * the compiled core declares these itself). The runtime is never called.
 */
#ifndef TVM_FFI_PY_CUDA_DECLS_DRIVER_TYPES_H_
#define TVM_FFI_PY_CUDA_DECLS_DRIVER_TYPES_H_

// The first and last codes fix the enum's range to the runtime's own (0 to 16383).
enum cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorUnknown = 999,
  cudaErrorApiFailureBase = 10000
};
typedef enum cudaError cudaError_t;

#endif  // TVM_FFI_PY_CUDA_DECLS_DRIVER_TYPES_H_
