/*
 * The tvm-ffi C ABI: the values, objects and C functions through which a library, the runtime
 * (libtvm_ffi.so) and a language binding exchange data. Libraries built against
 * apache-tvm-ffi 0.1.x and libraries built here use the same layouts, numbers and symbols,
 * so either runs in the other's runtime. docs/dev/abi.md says why each rule exists.
 *
 * Plain C: a caller needs this header, <dlpack/dlpack.h> and libtvm_ffi.so.
 * Every size and offset that code on the other side reads inline is pinned by a
 * static assertion at the end of this file.
 */
#ifndef TVM_FFI_C_API_H_
#define TVM_FFI_C_API_H_

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#if defined(_MSC_VER)
#define TVM_FFI_WEAK __declspec(selectany)
#else
#define TVM_FFI_WEAK __attribute__((weak))
#endif

/* TVM_FFI_DLL marks the runtime's functions; TVM_FFI_DLL_EXPORT a library's exported entries. */
#if !defined(TVM_FFI_DLL) && defined(__EMSCRIPTEN__)
#include <emscripten/emscripten.h>
#define TVM_FFI_DLL EMSCRIPTEN_KEEPALIVE
#define TVM_FFI_DLL_EXPORT EMSCRIPTEN_KEEPALIVE
#endif
#if !defined(TVM_FFI_DLL) && defined(_MSC_VER)
#ifdef TVM_FFI_EXPORTS
#define TVM_FFI_DLL __declspec(dllexport)
#else
#define TVM_FFI_DLL __declspec(dllimport)
#endif
#define TVM_FFI_DLL_EXPORT __declspec(dllexport)
#endif
#ifndef TVM_FFI_DLL
#define TVM_FFI_DLL __attribute__((visibility("default")))
#define TVM_FFI_DLL_EXPORT __attribute__((visibility("default")))
#endif

#if defined(__GNUC__) || defined(__clang__)
#define TVM_FFI_ATTRIBUTE_PURE __attribute__((__pure__))
#else
#define TVM_FFI_ATTRIBUTE_PURE
#endif

/* The C ABI this header describes (what TVMFFIGetVersion answers). */
#define TVM_FFI_VERSION_MAJOR 0
#define TVM_FFI_VERSION_MINOR 1
#define TVM_FFI_VERSION_PATCH 16

/* Every exported function `name` of a library is the symbol `__tvm_ffi_<name>`. */
#define TVM_FFI_SYMBOL_PREFIX "__tvm_ffi_"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  uint32_t major;
  uint32_t minor;
  uint32_t patch;
} TVMFFIVersion;

/*
 * What a TVMFFIAny holds. Below 64 the payload is a plain value; from 64 on it is a
 * reference-counted TVMFFIObject. Indices from 128 on are handed out at run time to types
 * that libraries register (TVMFFITypeGetOrAllocIndex).
 */
#ifdef __cplusplus
enum TVMFFITypeIndex : int32_t {
#else
typedef enum {
#endif
  kTVMFFIAny = -1, /* "any type": used only in reflection, never stored in a value */
  kTVMFFINone = 0,
  kTVMFFIInt = 1,           /* v_int64 */
  kTVMFFIBool = 2,          /* v_int64, 0 or 1 */
  kTVMFFIFloat = 3,         /* v_float64 */
  kTVMFFIOpaquePtr = 4,     /* v_ptr */
  kTVMFFIDataType = 5,      /* v_dtype */
  kTVMFFIDevice = 6,        /* v_device */
  kTVMFFIDLTensorPtr = 7,   /* v_ptr: a DLTensor* borrowed for the call */
  kTVMFFIRawStr = 8,        /* v_c_str, NUL-terminated; views only, never owned */
  kTVMFFIByteArrayPtr = 9,  /* v_ptr: a TVMFFIByteArray*; views only */
  kTVMFFIObjectRValueRef = 10, /* v_ptr: an ObjectRef* the callee may move from */
  kTVMFFISmallStr = 11,     /* v_bytes, small_str_len <= 7, NUL after the last byte */
  kTVMFFISmallBytes = 12,   /* as kTVMFFISmallStr, for bytes */
  kTVMFFIUnchanged = 13,    /* a transform's "leave this value as it is" */
  kTVMFFIStaticObjectBegin = 64,
  kTVMFFIObject = 64,       /* the root of every object type */
  kTVMFFIStr = 65,          /* an object with a TVMFFIByteArray at offset 24 */
  kTVMFFIBytes = 66,        /* as kTVMFFIStr */
  kTVMFFIError = 67,        /* TVMFFIErrorCell at offset 24 */
  kTVMFFIFunction = 68,     /* TVMFFIFunctionCell at offset 24 */
  kTVMFFIShape = 69,        /* TVMFFIShapeCell at offset 24 */
  kTVMFFITensor = 70,       /* DLTensor at offset 24 */
  kTVMFFIArray = 71,        /* TVMFFISeqCell at offset 24, immutable, elements TVMFFIAny */
  kTVMFFIMap = 72,          /* immutable hash map, layout in tvm/ffi/detail/map_layout.h */
  kTVMFFIModule = 73,       /* a C++ class whose vtable pointer precedes the header */
  kTVMFFIOpaquePyObject = 74, /* TVMFFIOpaqueObjectCell at offset 24 holding a PyObject* */
  kTVMFFIList = 75,         /* TVMFFISeqCell at offset 24, mutable */
  kTVMFFIDict = 76,         /* mutable map, same layout as kTVMFFIMap */
  kTVMFFIVisitInterrupt = 77,
  kTVMFFIBigInt = 78,
  kTVMFFIStaticObjectEnd,
  kTVMFFIDynObjectBegin = 128
#ifdef __cplusplus
};
#else
} TVMFFITypeIndex;
#endif

/* A pointer to a TVMFFIObject, for functions that need not know the object's type. */
typedef void* TVMFFIObjectHandle;

/* The flags a deleter receives: what it is asked to release. */
#ifdef __cplusplus
enum TVMFFIObjectDeleterFlagBitMask : int32_t {
#else
typedef enum {
#endif
  kTVMFFIObjectDeleterFlagBitMaskStrong = 1 << 0, /* the last strong reference went: destroy */
  kTVMFFIObjectDeleterFlagBitMaskWeak = 1 << 1,   /* the last weak reference went: free */
  kTVMFFIObjectDeleterFlagBitMaskBoth =
      kTVMFFIObjectDeleterFlagBitMaskStrong | kTVMFFIObjectDeleterFlagBitMaskWeak,
#ifdef __cplusplus
};
#else
} TVMFFIObjectDeleterFlagBitMask;
#endif

/*
 * The header of every object (24 bytes). combined_ref_count holds the strong count in its low
 * 32 bits and the weak count in its high 32 bits; a new object starts at strong 1, weak 1, and
 * the weak count keeps that 1 while any strong reference exists, so the memory outlives the
 * contents exactly as long as weak references need it.
 */
typedef struct {
  uint64_t combined_ref_count;
  int32_t type_index;
  uint32_t __padding; /* zero */
  union {
    void (*deleter)(void* self, int flags); /* flags: TVMFFIObjectDeleterFlagBitMask */
    int64_t __ensure_align;
  };
} TVMFFIObject;

/*
 * One value (16 bytes). zero_padding is 0 except in small strings and bytes, where it is the
 * length. A pointer payload narrower than 8 bytes leaves the upper bytes zero, so v_uint64
 * can hash and compare any value.
 */
typedef struct {
  int32_t type_index;
  union {
    uint32_t zero_padding;
    uint32_t small_str_len;
  };
  union {
    int64_t v_int64;
    double v_float64;
    void* v_ptr;
    const char* v_c_str;
    TVMFFIObject* v_obj;
    DLDataType v_dtype;
    DLDevice v_device;
    char v_bytes[8];
    uint64_t v_uint64;
  };
} TVMFFIAny;

typedef struct {
  const char* data;
  size_t size;
} TVMFFIByteArray;

typedef struct {
  const int64_t* data;
  size_t size;
} TVMFFIShapeCell;

/* The cell of arrays and lists. data_deleter is NULL when the elements live inside the object. */
#ifdef __cplusplus
struct TVMFFISeqCell {
#else
typedef struct {
#endif
  void* data;
  int64_t size;
  int64_t capacity;
  void (*data_deleter)(void*);
#ifdef __cplusplus
};
#else
} TVMFFISeqCell;
#endif

#ifdef __cplusplus
enum TVMFFIBacktraceUpdateMode : int32_t {
#else
typedef enum {
#endif
  kTVMFFIBacktraceUpdateModeReplace = 0,
  kTVMFFIBacktraceUpdateModeAppend = 1,
#ifdef __cplusplus
};
#else
} TVMFFIBacktraceUpdateMode;
#endif

/*
 * The cell of an error object. kind is a Python exception name ("ValueError", ...);
 * update_backtrace lets each layer an error crosses add its frames. cause_chain and
 * extra_context are owned object handles or NULL.
 */
typedef struct {
  TVMFFIByteArray kind;
  TVMFFIByteArray message;
  TVMFFIByteArray backtrace;
  void (*update_backtrace)(TVMFFIObjectHandle self, const TVMFFIByteArray* backtrace,
                           int32_t update_mode);
  TVMFFIObjectHandle cause_chain;
  TVMFFIObjectHandle extra_context;
} TVMFFIErrorCell;

/*
 * The calling convention of every function. The caller sets result->type_index to kTVMFFINone
 * first. Returns 0 with an owned result, or -1 with an error left in the calling thread's slot
 * (TVMFFIErrorMoveFromRaised). -2 means a frontend error is already pending in the caller's
 * language runtime (for example a Python exception); nothing is in the slot.
 */
typedef int (*TVMFFISafeCallType)(void* handle, const TVMFFIAny* args, int32_t num_args,
                                  TVMFFIAny* result);

/*
 * The cell of a function object. cpp_call is a C++-ABI shortcut that only code of the same
 * C++ runtime may use; functions made here set it to NULL and never call a foreign one, so no
 * C++ exception crosses a library boundary.
 */
typedef struct {
  TVMFFISafeCallType safe_call;
  void* cpp_call;
} TVMFFIFunctionCell;

typedef struct {
  void* handle; /* for kTVMFFIOpaquePyObject, a PyObject* */
} TVMFFIOpaqueObjectCell;

/* Placed right before an object that a custom allocator made; frees that memory. */
typedef struct {
  void (*delete_space)(void* ptr);
} TVMFFIObjectAllocHeader;

typedef struct {
  void* (*allocate)(size_t size, size_t alignment, int32_t type_index, void* context);
  void* context;
} TVMFFICustomAllocator;

/* ---- reflection: what a registered type says about itself ---------------------------- */

typedef int (*TVMFFIFieldGetter)(void* field, TVMFFIAny* result);
typedef int (*TVMFFIFieldSetter)(void* field, const TVMFFIAny* value);
typedef int (*TVMFFIObjectCreator)(TVMFFIObjectHandle* result);

#ifdef __cplusplus
enum TVMFFIFieldFlagBitMask : int32_t {
#else
typedef enum {
#endif
  kTVMFFIFieldFlagBitMaskWritable = 1 << 0,
  kTVMFFIFieldFlagBitMaskHasDefault = 1 << 1,
  kTVMFFIFieldFlagBitMaskIsStaticMethod = 1 << 2,
  kTVMFFIFieldFlagBitMaskSEqHashIgnore = 1 << 3,
  kTVMFFIFieldFlagBitMaskSEqHashDefPattern = 1 << 4,
  kTVMFFIFieldFlagBitMaskDefaultFromFactory = 1 << 5,
  kTVMFFIFieldFlagBitMaskReprOff = 1 << 6,
  kTVMFFIFieldFlagBitMaskCompareOff = 1 << 7,
  kTVMFFIFieldFlagBitMaskHashOff = 1 << 8,
  kTVMFFIFieldFlagBitMaskInitOff = 1 << 9,
  kTVMFFIFieldFlagBitMaskKwOnly = 1 << 10,
  kTVMFFIFieldFlagBitSetterIsFunctionObj = 1 << 11, /* setter is a Function handle */
  kTVMFFIFieldFlagBitMaskSEqHashDefSimple = 1 << 12,
#ifdef __cplusplus
};
#else
} TVMFFIFieldFlagBitMask;
#endif

#ifdef __cplusplus
enum TVMFFISEqHashKind : int32_t {
#else
typedef enum {
#endif
  kTVMFFISEqHashKindUnsupported = 0,
  kTVMFFISEqHashKindTreeNode = 1,
  kTVMFFISEqHashKindFreeVar = 2,
  kTVMFFISEqHashKindDAGNode = 3,
  kTVMFFISEqHashKindConstTreeNode = 4,
  kTVMFFISEqHashKindUniqueInstance = 5,
#ifdef __cplusplus
};
#else
} TVMFFISEqHashKind;
#endif

#ifdef __cplusplus
enum TVMFFIDefRegionKind : int32_t {
#else
typedef enum {
#endif
  kTVMFFIDefRegionKindNone = 0,
  kTVMFFIDefRegionKindPattern = 1,
  kTVMFFIDefRegionKindSimple = 2,
#ifdef __cplusplus
};
#else
} TVMFFIDefRegionKind;
#endif

typedef struct {
  TVMFFIByteArray name;
  TVMFFIByteArray doc;
  TVMFFIByteArray metadata; /* JSON */
  int64_t flags;            /* TVMFFIFieldFlagBitMask */
  int64_t size;
  int64_t alignment;
  int64_t offset; /* from the start of the object */
  TVMFFIFieldGetter getter;
  void* setter; /* TVMFFIFieldSetter, or a Function handle (kTVMFFIFieldFlagBitSetterIsFunctionObj) */
  TVMFFIAny default_value_or_factory;
  int32_t field_static_type_index;
} TVMFFIFieldInfo;

typedef struct {
  TVMFFIByteArray name;
  TVMFFIByteArray doc;
  TVMFFIByteArray metadata; /* JSON */
  int64_t flags;            /* kTVMFFIFieldFlagBitMaskIsStaticMethod or 0 */
  TVMFFIAny method;         /* a Function */
} TVMFFIMethodInfo;

typedef struct {
  TVMFFIByteArray doc;
  TVMFFIObjectCreator creator; /* NULL when the type cannot be made empty */
  int32_t total_size;          /* sizeof the object; 0 when unknown */
  TVMFFISEqHashKind structural_eq_hash_kind;
} TVMFFITypeMetadata;

/* A per-type attribute: the entry for type index i is data[i - begin_index], if within size. */
typedef struct {
  const TVMFFIAny* data;
  int32_t size;
  int32_t begin_index;
} TVMFFITypeAttrColumn;

#ifdef __cplusplus
struct TVMFFITypeInfo {
#else
typedef struct TVMFFITypeInfo {
#endif
  int32_t type_index;
  int32_t type_depth; /* number of ancestors */
  TVMFFIByteArray type_key;
  const struct TVMFFITypeInfo** type_ancestors; /* [depth]: the ancestor at that depth */
  uint64_t type_key_hash;
  int32_t num_fields;
  int32_t num_methods;
  const TVMFFIFieldInfo* fields;
  const TVMFFIMethodInfo* methods;
  const TVMFFITypeMetadata* metadata;
#ifdef __cplusplus
};
#else
} TVMFFITypeInfo;
#endif

/* ---- the runtime's C functions (libtvm_ffi.so) --------------------------------------- */
/* Unless said otherwise: 0 on success, -1 with an error in the thread's slot. */

TVM_FFI_DLL void TVMFFIGetVersion(TVMFFIVersion* out_version);

/* Objects */
TVM_FFI_DLL int TVMFFIObjectIncRef(TVMFFIObjectHandle obj);
TVM_FFI_DLL int TVMFFIObjectDecRef(TVMFFIObjectHandle obj);
/* An object of an opaque type_index owning handle; deleter(handle) runs when it dies. */
TVM_FFI_DLL int TVMFFIObjectCreateOpaque(void* handle, int32_t type_index,
                                         void (*deleter)(void* handle), TVMFFIObjectHandle* out);
TVM_FFI_DLL TVMFFICustomAllocator* TVMFFIGetCustomAllocator(void);
TVM_FFI_DLL int TVMFFISetCustomAllocator(TVMFFICustomAllocator* allocator);
TVM_FFI_DLL int TVMFFIAnyViewToOwnedAny(const TVMFFIAny* any_view, TVMFFIAny* out);

/* Functions */
/* A function object calling safe_call(self, ...); deleter(self) runs when it dies. */
TVM_FFI_DLL int TVMFFIFunctionCreate(void* self, TVMFFISafeCallType safe_call,
                                     void (*deleter)(void* self), TVMFFIObjectHandle* out);
TVM_FFI_DLL int TVMFFIFunctionCall(TVMFFIObjectHandle func, TVMFFIAny* args, int32_t num_args,
                                   TVMFFIAny* result);
TVM_FFI_DLL int TVMFFIFunctionSetGlobal(const TVMFFIByteArray* name, TVMFFIObjectHandle f,
                                        int allow_override);
TVM_FFI_DLL int TVMFFIFunctionSetGlobalFromMethodInfo(const TVMFFIMethodInfo* method_info,
                                                      int allow_override);
/* *out is a new reference, or NULL when no global function has that name. */
TVM_FFI_DLL int TVMFFIFunctionGetGlobal(const TVMFFIByteArray* name, TVMFFIObjectHandle* out);

/* Errors: one slot per thread */
TVM_FFI_DLL void TVMFFIErrorMoveFromRaised(TVMFFIObjectHandle* result); /* NULL when empty */
/* The slot adds a reference of its own: the caller still releases the one it holds. */
TVM_FFI_DLL void TVMFFIErrorSetRaised(TVMFFIObjectHandle error);
TVM_FFI_DLL void TVMFFIErrorSetRaisedFromCStr(const char* kind, const char* message);
/* The message is the concatenation of the parts; NULL parts are skipped. */
TVM_FFI_DLL void TVMFFIErrorSetRaisedFromCStrParts(const char* kind, const char** message_parts,
                                                   int32_t num_parts);
TVM_FFI_DLL int TVMFFIErrorCreate(const TVMFFIByteArray* kind, const TVMFFIByteArray* message,
                                  const TVMFFIByteArray* backtrace, TVMFFIObjectHandle* out);
TVM_FFI_DLL int TVMFFIErrorCreateWithCauseAndExtraContext(
    const TVMFFIByteArray* kind, const TVMFFIByteArray* message, const TVMFFIByteArray* backtrace,
    TVMFFIObjectHandle cause_chain, TVMFFIObjectHandle extra_context, TVMFFIObjectHandle* out);
/* The backtrace text at a throw site; valid until the thread's next call. */
TVM_FFI_DLL const TVMFFIByteArray* TVMFFIBacktrace(const char* filename, int lineno,
                                                   const char* func, int cross_ffi_boundary);

/* Tensors */
TVM_FFI_DLL int TVMFFITensorFromDLPack(DLManagedTensor* from, int32_t require_alignment,
                                       int32_t require_contiguous, TVMFFIObjectHandle* out);
TVM_FFI_DLL int TVMFFITensorToDLPack(TVMFFIObjectHandle from, DLManagedTensor** out);
TVM_FFI_DLL int TVMFFITensorFromDLPackVersioned(DLManagedTensorVersioned* from,
                                                int32_t require_alignment,
                                                int32_t require_contiguous,
                                                TVMFFIObjectHandle* out);
TVM_FFI_DLL int TVMFFITensorToDLPackVersioned(TVMFFIObjectHandle from,
                                              DLManagedTensorVersioned** out);
/* A tensor sharing source's memory under prototype's shape, strides and dtype (unchecked). */
TVM_FFI_DLL int TVMFFITensorCreateUnsafeView(TVMFFIObjectHandle source, const DLTensor* prototype,
                                             TVMFFIObjectHandle* out);

/* Strings, bytes, big integers, data types: *out is a small value or a new object */
TVM_FFI_DLL int TVMFFIStringFromByteArray(const TVMFFIByteArray* input, TVMFFIAny* out);
TVM_FFI_DLL int TVMFFIBytesFromByteArray(const TVMFFIByteArray* input, TVMFFIAny* out);
TVM_FFI_DLL int TVMFFIBigIntFromByteArray(const TVMFFIByteArray* input, TVMFFIAny* out);
TVM_FFI_DLL TVMFFIByteArray TVMFFIBigIntGetContentByteArray(const TVMFFIAny* value);
TVM_FFI_DLL int TVMFFIDataTypeFromString(const TVMFFIByteArray* str, DLDataType* out);
TVM_FFI_DLL int TVMFFIDataTypeToString(const DLDataType* dtype, TVMFFIAny* out);

/* Types */
TVM_FFI_DLL int TVMFFITypeKeyToIndex(const TVMFFIByteArray* type_key, int32_t* out_tindex);
/*
 * The index of type_key, registering it when new: static_type_index >= 0 registers a built-in
 * index, -1 takes the next dynamic one. Parent indices are smaller than their children's.
 */
TVM_FFI_DLL int32_t TVMFFITypeGetOrAllocIndex(const TVMFFIByteArray* type_key,
                                              int32_t static_type_index, int32_t type_depth,
                                              int32_t num_child_slots,
                                              int32_t child_slots_can_overflow,
                                              int32_t parent_type_index);
/* The type's information; type_index must be a value index (0..13) or a registered type. */
TVM_FFI_DLL TVM_FFI_ATTRIBUTE_PURE const TVMFFITypeInfo* TVMFFIGetTypeInfo(int32_t type_index);
TVM_FFI_DLL int TVMFFITypeRegisterField(int32_t type_index, const TVMFFIFieldInfo* info);
TVM_FFI_DLL int TVMFFITypeRegisterMethod(int32_t type_index, const TVMFFIMethodInfo* info);
TVM_FFI_DLL int TVMFFITypeRegisterMetadata(int32_t type_index, const TVMFFITypeMetadata* metadata);
TVM_FFI_DLL int TVMFFITypeRegisterAttr(int32_t type_index, const TVMFFIByteArray* attr_name,
                                       const TVMFFIAny* attr_value);
/* NULL when no type registered that attribute. */
TVM_FFI_DLL const TVMFFITypeAttrColumn* TVMFFIGetTypeAttrColumn(const TVMFFIByteArray* attr_name);

/* One-time initialisation of a process-wide handle, safe against concurrent callers. */
TVM_FFI_DLL int TVMFFIHandleInitOnce(void** handle_addr, int (*init_func)(void** result));
TVM_FFI_DLL int TVMFFIHandleDeinitOnce(void** handle_addr, int (*deinit_func)(void* handle));

#ifdef __cplusplus
}  // extern "C"
#endif

/* ---- the layout, pinned (LP64 targets) ------------------------------------------- */
#if UINTPTR_MAX > 0xFFFFFFFFu
#ifdef __cplusplus
#define TVM_FFI_DETAIL_ABI_ASSERT(cond, what) static_assert(cond, what)
#else
#define TVM_FFI_DETAIL_ABI_ASSERT(cond, what) _Static_assert(cond, what)
#endif
TVM_FFI_DETAIL_ABI_ASSERT(sizeof(TVMFFIAny) == 16, "TVMFFIAny is 16 bytes");
TVM_FFI_DETAIL_ABI_ASSERT(offsetof(TVMFFIAny, v_int64) == 8, "TVMFFIAny payload at 8");
TVM_FFI_DETAIL_ABI_ASSERT(sizeof(TVMFFIObject) == 24, "object header is 24 bytes");
TVM_FFI_DETAIL_ABI_ASSERT(offsetof(TVMFFIObject, type_index) == 8, "type index at 8");
TVM_FFI_DETAIL_ABI_ASSERT(offsetof(TVMFFIObject, deleter) == 16, "deleter at 16");
TVM_FFI_DETAIL_ABI_ASSERT(sizeof(TVMFFIByteArray) == 16, "TVMFFIByteArray is 16 bytes");
TVM_FFI_DETAIL_ABI_ASSERT(sizeof(TVMFFIShapeCell) == 16, "TVMFFIShapeCell is 16 bytes");
TVM_FFI_DETAIL_ABI_ASSERT(sizeof(TVMFFISeqCell) == 32, "TVMFFISeqCell is 32 bytes");
TVM_FFI_DETAIL_ABI_ASSERT(sizeof(TVMFFIErrorCell) == 72, "TVMFFIErrorCell is 72 bytes");
TVM_FFI_DETAIL_ABI_ASSERT(offsetof(TVMFFIErrorCell, update_backtrace) == 48, "update_backtrace");
TVM_FFI_DETAIL_ABI_ASSERT(sizeof(TVMFFIFunctionCell) == 16, "TVMFFIFunctionCell is 16 bytes");
TVM_FFI_DETAIL_ABI_ASSERT(sizeof(TVMFFIFieldInfo) == 120, "TVMFFIFieldInfo is 120 bytes");
TVM_FFI_DETAIL_ABI_ASSERT(offsetof(TVMFFIFieldInfo, default_value_or_factory) == 96, "default");
TVM_FFI_DETAIL_ABI_ASSERT(sizeof(TVMFFIMethodInfo) == 72, "TVMFFIMethodInfo is 72 bytes");
TVM_FFI_DETAIL_ABI_ASSERT(sizeof(TVMFFITypeMetadata) == 32, "TVMFFITypeMetadata is 32 bytes");
TVM_FFI_DETAIL_ABI_ASSERT(sizeof(TVMFFITypeAttrColumn) == 16, "TVMFFITypeAttrColumn is 16");
TVM_FFI_DETAIL_ABI_ASSERT(sizeof(TVMFFITypeInfo) == 72, "TVMFFITypeInfo is 72 bytes");
TVM_FFI_DETAIL_ABI_ASSERT(offsetof(TVMFFITypeInfo, metadata) == 64, "metadata at 64");
TVM_FFI_DETAIL_ABI_ASSERT(sizeof(DLTensor) == 48, "DLTensor is 48 bytes");
#undef TVM_FFI_DETAIL_ABI_ASSERT
#endif

#endif  // TVM_FFI_C_API_H_
