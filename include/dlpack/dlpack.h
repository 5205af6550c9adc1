/*
 * DLPack 1.3 data structures, written from the DLPack specification
 * (https://dmlc.github.io/dlpack/latest/c_api.html).
 *
 * The include guard is the one the reference header uses, on purpose: when another copy of
 * dlpack.h (e.g. torch's ATen/dlpack.h) is included in the same translation unit, whichever
 * comes first wins and the other is skipped. Both describe the same ABI, so either works.
 */
#ifndef DLPACK_DLPACK_H_
#define DLPACK_DLPACK_H_

#include <stddef.h>
#include <stdint.h>

#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 3

/* Linkage macros some producers' headers use; this copy declares no functions itself. */
#ifdef __cplusplus
#define DLPACK_EXTERN_C extern "C"
#else
#define DLPACK_EXTERN_C
#endif
#ifndef DLPACK_DLL
#define DLPACK_DLL
#endif

#ifdef __cplusplus
extern "C" {
#endif

/*! \brief ABI version of a DLManagedTensorVersioned: a consumer must not read past `version`
 *  (except to call the deleter) when `major` differs from its own. */
typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;

/* A fixed underlying type keeps DLDevice 8 bytes in C and C++ alike. */
#ifdef __cplusplus
typedef enum : int32_t {
#else
typedef enum {
#endif
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3, /* pinned host memory (cudaMallocHost) */
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,
  kDLCUDAManaged = 13, /* cudaMallocManaged */
  kDLOneAPI = 14,
  kDLWebGPU = 15,
  kDLHexagon = 16,
  kDLMAIA = 17,
  kDLTrn = 18,
} DLDeviceType;

typedef struct {
  DLDeviceType device_type;
  int32_t device_id; /* 0 for plain, pinned and managed host memory */
} DLDevice;

typedef enum {
  kDLInt = 0U,
  kDLUInt = 1U,
  kDLFloat = 2U,
  kDLOpaqueHandle = 3U,
  kDLBfloat = 4U,
  kDLComplex = 5U,
  kDLBool = 6U,
  kDLFloat8_e3m4 = 7U,
  kDLFloat8_e4m3 = 8U,
  kDLFloat8_e4m3b11fnuz = 9U,
  kDLFloat8_e4m3fn = 10U,
  kDLFloat8_e4m3fnuz = 11U,
  kDLFloat8_e5m2 = 12U,
  kDLFloat8_e5m2fnuz = 13U,
  kDLFloat8_e8m0fnu = 14U,
  kDLFloat6_e2m3fn = 15U,
  kDLFloat6_e3m2fn = 16U,
  kDLFloat4_e2m1fn = 17U,
} DLDataTypeCode;

/*! \brief Element type: e.g. float32 is {kDLFloat, 32, 1}; bool is {kDLBool, 8, 1}. */
typedef struct {
  uint8_t code; /* a DLDataTypeCode, stored in one byte */
  uint8_t bits;
  uint16_t lanes; /* > 1 for vector types */
} DLDataType;

/*! \brief A borrowed view of an n-d array; owns nothing. */
typedef struct {
  void* data; /* may be a device pointer; the first element is at data + byte_offset */
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;   /* ndim entries */
  int64_t* strides; /* ndim entries, in elements; NULL from old producers means row-major */
  uint64_t byte_offset;
} DLTensor;

/*! \brief Pre-1.0 exchange struct; still produced by `__dlpack__()` without max_version. */
typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensor* self); /* frees manager_ctx and self; may be NULL */
} DLManagedTensor;

#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
/* The producer made a copy: the consumer is the only user until it calls the deleter. */
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)
/* Sub-byte types (fp4, fp6) are packed unless this is set. */
#define DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED (1UL << 2UL)

/*! \brief The 1.x exchange struct. Fields up to `flags` keep their layout across versions. */
typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned* self);
  uint64_t flags; /* DLPACK_FLAG_BITMASK_* */
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

/*
 * The C exchange API (DLPack 1.2 and later): a tensor type publishes a static table of these
 * function pointers through the `__dlpack_c_exchange_api__` attribute of the type, so a consumer
 * can convert tensors and read the current stream without calling back into Python. py_object is a
 * PyObject*; every function returns 0 on success and -1 with a Python exception set.
 */
typedef int (*DLPackManagedTensorAllocator)(DLTensor* prototype, DLManagedTensorVersioned** out,
                                            void* error_ctx,
                                            void (*SetError)(void* error_ctx, const char* kind,
                                                             const char* message));
typedef int (*DLPackManagedTensorFromPyObjectNoSync)(void* py_object,
                                                     DLManagedTensorVersioned** out);
typedef int (*DLPackManagedTensorToPyObjectNoSync)(DLManagedTensorVersioned* tensor,
                                                   void** out_py_object);
/* Fills a caller-owned DLTensor that stays valid only while py_object is alive and unchanged. */
typedef int (*DLPackDLTensorFromPyObjectNoSync)(void* py_object, DLTensor* out);
typedef int (*DLPackCurrentWorkStream)(DLDeviceType device_type, int32_t device_id,
                                       void** out_current_stream);

typedef struct DLPackExchangeAPIHeader {
  DLPackVersion version;
  struct DLPackExchangeAPIHeader* prev_api; /* an older table, or NULL */
} DLPackExchangeAPIHeader;

typedef struct DLPackExchangeAPI {
  DLPackExchangeAPIHeader header;
  DLPackManagedTensorAllocator managed_tensor_allocator;
  DLPackManagedTensorFromPyObjectNoSync managed_tensor_from_py_object_no_sync;
  DLPackManagedTensorToPyObjectNoSync managed_tensor_to_py_object_no_sync;
  DLPackDLTensorFromPyObjectNoSync dltensor_from_py_object_no_sync; /* may be NULL */
  DLPackCurrentWorkStream current_work_stream;
} DLPackExchangeAPI;

#ifdef __cplusplus
}  // extern "C"
#endif
#endif  // DLPACK_DLPACK_H_
