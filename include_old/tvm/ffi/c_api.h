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
 *  map and managed-tensor type codes and TVMFFICallContext::alloc_tensor; version 3 the
 *  object type code (functions, modules, user objects) and the global registry. A library of
 *  an older version never reads or returns what came later, so callers may keep accepting it.
 */
#define TVM_FFI_ABI_VERSION 3

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
  kTVMFFIDLManagedTensor = 12, /* results only: v_ptr is a DLManagedTensorVersioned* that the
                                  receiver owns and must release with its deleter, exactly once */
  kTVMFFIRefObject = 13 /* v_ptr: a TVMFFIRefObject*. An argument is borrowed for the call; a
                           result is a new reference the receiver releases (type->dec_ref) */
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

/* ---- reference-counted objects: functions, modules, user objects (ABI version 3) ---- */

/*! \brief type->flags: the object can be called (type->call is set). */
#define TVM_FFI_OBJECT_IS_FUNCTION 1
/*! \brief type->flags: the object answers type->get_function (a module). */
#define TVM_FFI_OBJECT_IS_MODULE 2
/*!
 * \brief type->flags: the object is a C++ tvm::ffi::Object of this ABI version laid out by
 * tvm/ffi/object.h, so C++ code may reach it through its Object base.
 */
#define TVM_FFI_OBJECT_IS_CXX 4

struct TVMFFIRefObject;

/*!
 * \brief What an object is and how to use it. Static storage in the library that made the
 * object: that library stays loaded while any of its objects is alive.
 */
typedef struct TVMFFIObjectType {
  int32_t abi_version;
  int32_t flags;          /* TVM_FFI_OBJECT_IS_* */
  const char* type_key;   /* e.g. "ffi.Function", "ffi.Module", "sgl.NgramCorpus" */
  void (*inc_ref)(struct TVMFFIRefObject* self);
  /* Drops a reference; the last one destroys the object. */
  void (*dec_ref)(struct TVMFFIRefObject* self);
  /* Functions: the same contract as a TVMFFIFunctionEntry (0, or -1 with an error result). */
  int (*call)(struct TVMFFIRefObject* self, const TVMFFICallContext* ctx, const TVMFFIAny* args,
              int32_t num_args, TVMFFIResult* result);
  /*
   * Modules: looks up a function by name. 0 with result->value a kTVMFFIRefObject function (a
   * new reference) or kTVMFFINone when there is none; -1 with an error result.
   */
  int (*get_function)(struct TVMFFIRefObject* self, const char* name, TVMFFIResult* result);
} TVMFFIObjectType;

/*! \brief The header every object starts its C view with. */
typedef struct TVMFFIRefObject {
  const TVMFFIObjectType* type;
} TVMFFIRefObject;

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

/*
 * ---- the process-wide registry (ABI version 3), defined by libtvm_ffi.so ----
 * Global functions by name, and the constructor and methods of object types by type key.
 * Declared weak: a library that does not link libtvm_ffi still loads, and finds the registry
 * when libtvm_ffi.so is already loaded into the global scope (the Python package loads it
 * before any library it loads) or sees a NULL address (TVMFFIRegistryAvailable() is false).
 */
#ifndef TVM_FFI_REGISTRY_API  /* libtvm_ffi itself defines it empty: its definitions are strong */
#if defined(__GNUC__) || defined(__clang__)
#define TVM_FFI_REGISTRY_API __attribute__((weak))
#else
#define TVM_FFI_REGISTRY_API
#endif
#endif

/*!
 * \brief Registers `func` (a function object; the registry takes its own reference) under
 * `name`. Returns 0; -1 when the name is taken and `allow_override` is 0.
 */
TVM_FFI_REGISTRY_API int TVMFFIFunctionSetGlobal(const char* name, TVMFFIRefObject* func,
                                                 int allow_override);
/*! \brief The function registered under `name` (a new reference), or NULL. */
TVM_FFI_REGISTRY_API TVMFFIRefObject* TVMFFIFunctionGetGlobal(const char* name);
/*!
 * \brief Calls `visit(name, handle)` for each registered global function, in name order;
 * returns how many there are.
 */
TVM_FFI_REGISTRY_API int64_t TVMFFIFunctionListGlobalNames(void (*visit)(const char* name,
                                                                           void* handle),
                                                             void* handle);
/*!
 * \brief Registers a member of the object type `type_key`: a method (called with the object as
 * its first argument) or, under the name "__ffi_init__", the constructor (returns the object).
 * Returns 0; -1 when the member exists and `allow_override` is 0.
 */
TVM_FFI_REGISTRY_API int TVMFFITypeSetMember(const char* type_key, const char* name,
                                             TVMFFIRefObject* func, int allow_override);
/*! \brief The member `name` of the type `type_key` (a new reference), or NULL. */
TVM_FFI_REGISTRY_API TVMFFIRefObject* TVMFFITypeGetMember(const char* type_key,
                                                            const char* name);
/*!
 * \brief The path of the loaded library that holds `address` (an object type's static storage,
 * a function), for messages; NULL when none does. The string lives as long as the process.
 */
TVM_FFI_REGISTRY_API const char* TVMFFILibraryPathOf(const void* address);
/*!
 * \brief Records the failure of a load-time registration (TVM_FFI_STATIC_INIT_BLOCK), which has
 * no caller to return it to: `kind` and `message` as in TVMFFIErrorInfo, `address` anything
 * inside the failing library. Kept for the thread, which is the one loading the library.
 */
TVM_FFI_REGISTRY_API void TVMFFIInitErrorRecord(const void* address, const char* kind,
                                                const char* message);
/*!
 * \brief Calls `visit(library, kind, message, handle)` for each failure recorded on this thread,
 * oldest first (library NULL when unknown), and forgets them; returns their count. A loader
 * calls it after dlopen to report what the library's initialisers could not.
 */
TVM_FFI_REGISTRY_API int64_t TVMFFIInitErrorsTake(void (*visit)(const char* library,
                                                                const char* kind,
                                                                const char* message,
                                                                void* handle),
                                                  void* handle);

#ifdef __cplusplus
}  /* extern "C" */
#endif
#endif  /* TVM_FFI_C_API_H_ */
