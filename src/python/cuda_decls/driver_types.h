/*
 * The CUDA runtime's error type and launch configuration, as the launcher headers name them (see
 * cuda.h here for why the compiled core declares these itself). The runtime is never called.
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

struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
};

// The runtime's launch attributes: the driver's ids and value layout (cuda.h here).
typedef struct CUstream_st* cudaStream_t;
enum cudaLaunchAttributeID {
  cudaLaunchAttributeCooperative = 2,
  cudaLaunchAttributeClusterDimension = 4,
  cudaLaunchAttributeProgrammaticStreamSerialization = 6
};
union cudaLaunchAttributeValue {
  char pad[64];
  void* align_;
};
struct cudaLaunchAttribute {
  enum cudaLaunchAttributeID id;
  char pad[8 - sizeof(enum cudaLaunchAttributeID)];
  union cudaLaunchAttributeValue val;
};
typedef struct cudaLaunchConfig_st {
  struct dim3 gridDim;
  struct dim3 blockDim;
  unsigned long dynamicSmemBytes;
  cudaStream_t stream;
  struct cudaLaunchAttribute* attrs;
  unsigned int numAttrs;
} cudaLaunchConfig_t;

#endif  // TVM_FFI_PY_CUDA_DECLS_DRIVER_TYPES_H_
