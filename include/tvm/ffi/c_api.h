/*
 * The C ABI between a library that exports functions with
 * TVM_FFI_DLL_EXPORT_TYPED_FUNC and whoever calls them (the Python core
 * extension, or any C/C++ program). docs/abi.md describes it in prose.
 *
 * Plain C on purpose: a caller needs nothing but this header, dlopen and dlsym.
 */
#ifndef TVM_FFI_C_API_H_
#define TVM_FFI_C_API_H_

#include <stdint.h>
#include <tvm/ffi/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

/*!
 * \brief Bumped when the structs or the entry signature below change. Version 2 added the
 *  map and managed-tensor type codes and TVMFFICallContext::alloc_tensor; a version-1
 *  library never reads or returns either, so callers may keep accepting it.
 */
#define TVM_FFI_ABI_VERSION 2

/*! \brief Every exported function `name` is the symbol `__tvm_ffi_<name>`. */
#define TVM_FFI_SYMBOL_PREFIX "__tvm_ffi_"

/*! \brief Passed as num_args to ask an entry for its TVMFFIFunctionInfo instead of calling it. */
#define TVM_FFI_QUERY_INFO (-1)

typedef enum {
  kTVMFFINone = 0,
  kTVMFFIInt = 1,         /* v_int64 */
  kTVMFFIFloat = 2,       /* v_float64 */
  kTVMFFIBool = 3,        /* v_int64, 0 or 1 */
  kTVMFFIStr = 4,         /* v_str: UTF-8, NUL-terminated; size: bytes without the NUL */
  kTVMFFIBytes = 5,       /* v_str: raw bytes (may hold NULs); size: byte count */
  kTVMFFIDLTensorPtr = 6, /* v_tensor: borrowed for the duration of the call */
  kTVMFFIArray = 7,       /* v_array: size elements; flags: TVM_FFI_ARRAY_IS_TUPLE or 0 (list) */
  kTVMFFIOpaquePtr = 8,   /* v_ptr */
  kTVMFFIError = 9,       /* results only: v_ptr is a const TVMFFIErrorInfo* */
  kTVMFFIUnsupported = 10, /* arguments only: the caller could not convert it; v_str names its type */
  kTVMFFIMap = 11,         /* v_array: 2 * size elements, key then value; size: entry count */
  kTVMFFIDLManagedTensor = 12 /* results only: v_ptr is a DLManagedTensorVersioned* that the
                                 receiver owns and must release with its deleter, exactly once */
} TVMFFITypeCode;

#define TVM_FFI_ARRAY_IS_TUPLE 1
/*! \brief flags of a kTVMFFIInt: v_int64 holds the bits of a uint64_t above INT64_MAX. */
#define TVM_FFI_INT_IS_UNSIGNED 1
/*! \brief flags of a kTVMFFIDLTensorPtr argument: the producer marked the memory read-only. */
#define TVM_FFI_TENSOR_IS_READ_ONLY 1

/*! \brief An opaque object handle (for TVMFFIEnvTensorAlloc: a DLManagedTensorVersioned*). */
typedef void* TVMFFIObjectHandle;

/*! \brief One argument or result value. 24 bytes, trivially copyable. */
typedef struct TVMFFIAny {
  int32_t type_code;
  int32_t flags;
  union {
    int64_t v_int64;
    double v_float64;
    void* v_ptr;
    const char* v_str;
    DLTensor* v_tensor;
    const struct TVMFFIAny* v_array;
  };
  int64_t size;
} TVMFFIAny;

/*! \brief Heap object owned by whoever receives it; release with obj->deleter(obj). */
typedef struct TVMFFIObject {
  void (*deleter)(struct TVMFFIObject* self);
} TVMFFIObject;

/*! \brief What an entry reports when it fails. Strings live as long as the result's owner. */
typedef struct TVMFFIErrorInfo {
  const char* kind;    /* "RuntimeError", "ValueError", "TypeError", ... */
  const char* message; /* the message alone, no kind prefix */
  const char* file;    /* where it was raised, "" when unknown */
  int32_t line;
} TVMFFIErrorInfo;

/*! \brief Result slot. value may point into memory kept alive by owner (NULL for scalars). */
typedef struct TVMFFIResult {
  TVMFFIAny value;
  TVMFFIObject* owner;
} TVMFFIResult;

/*!
 * \brief Per-call context handed in by the caller; may be NULL.
 * get_stream returns the caller's current stream for a device (NULL: the default stream);
 * it is only called when the function asks (TVMFFIEnvGetStream), so passing it is free.
 * alloc_tensor (read only when abi_version >= 2; may be NULL) allocates a tensor through the
 * caller's framework for the shape, dtype and device of `prototype` (its data, strides and
 * byte_offset are ignored): 0 and *out set, or -1 when it failed (the caller keeps the reason).
 */
typedef struct TVMFFICallContext {
  int32_t abi_version;
  void* handle;
  void* (*get_stream)(void* handle, int32_t device_type, int32_t device_id);
  int (*alloc_tensor)(void* handle, DLTensor* prototype, DLManagedTensorVersioned** out);
} TVMFFICallContext;

/*! \brief Static description of one exported function (see TVM_FFI_QUERY_INFO). */
typedef struct TVMFFIFunctionInfo {
  int32_t abi_version;
  int32_t num_args;
  const char* name;
  const char* signature; /* e.g. "add_one(Tensor, Tensor) -> None" */
} TVMFFIFunctionInfo;

/*!
 * \brief The signature of every `__tvm_ffi_<name>` symbol.
 * num_args >= 0: call; returns 0 and fills result, or returns -1 with
 *   result->value.type_code == kTVMFFIError. Never lets an exception escape.
 *   The caller releases result->owner (if non-NULL) once it has read the value.
 * num_args == TVM_FFI_QUERY_INFO: sets result->value to kTVMFFIOpaquePtr pointing
 *   at a static TVMFFIFunctionInfo, owner NULL; ctx and args may be NULL.
 */
typedef int (*TVMFFIFunctionEntry)(const TVMFFICallContext* ctx, const TVMFFIAny* args,
                                   int32_t num_args, TVMFFIResult* result);

#ifdef __cplusplus
}  /* extern "C" */
#endif
#endif  /* TVM_FFI_C_API_H_ */
