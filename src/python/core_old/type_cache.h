/*
 * How a Python type is passed as an argument, decided once per type. Exact builtin types
 * never get here (the caller tests them first); this covers tensors of every producer and
 * the rarer kinds (int and float subclasses, numpy scalars, ctypes.c_void_p, ...).
 */
#ifndef TVM_FFI_PY_TYPE_CACHE_H_
#define TVM_FFI_PY_TYPE_CACHE_H_

#include <Python.h>

#include <atomic>
#include <vector>

#include "call_frame.h"
#include "dlpack_exchange.h"

namespace tvm_ffi_py {

enum class ArgKind : uint8_t {
  kExchangeApi,  // DLPack C exchange API: no Python call per tensor
  kDLPack,       // __dlpack__ protocol
  kInt,          // int subclass or __index__
  kFloat,        // float subclass or __float__
  kStr,          // str subclass
  kBytes,        // bytes subclass
  kByteArray,    // bytearray (and subclasses)
  kSequence,     // list/tuple subclass
  kMapping,      // dict subclass
  kOpaquePtr,    // ctypes.c_void_p
  kDType,        // tvm_ffi.dtype, torch.dtype, numpy.dtype: passed as their name ("float32")
  kDevice,       // torch.device: passed as tvm_ffi.device() of it, a (type, index) pair
  kUnsupported,
};

struct TypeInfo {
  PyTypeObject* type;  // strong reference, so the address is never reused for another type
  ArgKind kind;
  const ExchangeApi* api;  // kExchangeApi only
  // A torch.Tensor (sub)class: its conjugate and negative bits are checked per call, since
  // a DLTensor cannot carry them (see CheckTorchBits).
  bool torch_tensor = false;
};

constexpr int kTypeCacheSize = 8;

struct TypeCache {
  TypeInfo entries[kTypeCacheSize];
  int last = 0;  // the most recent hit, checked first: calls usually repeat one tensor type
  int next = 0;  // round-robin slot for the next insertion
};

extern TypeCache g_type_cache;

/*! \brief tvm_ffi.dtype (set by python/tvm_ffi/_dtype.py), or NULL before it is imported. */
extern PyTypeObject* g_dtype_class;

/*! \brief Classify and insert; NULL with a Python error set on failure. */
const TypeInfo* ClassifyType(PyTypeObject* type);

inline const TypeInfo* LookupType(PyTypeObject* type) {
  TypeCache& c = g_type_cache;
  if (c.entries[c.last].type == type) return &c.entries[c.last];
  for (int i = 0; i < kTypeCacheSize; ++i) {
    if (c.entries[i].type == type) {
      c.last = i;
      return &c.entries[i];
    }
  }
  return ClassifyType(type);
}

/*! \brief The newest exchange API seen in this process (torch's, in practice), or NULL. */
extern const ExchangeApi* g_last_exchange_api;

/*!
 * \brief Tensor through obj.__dlpack__(); fills *out (and *read_only from the DLPack 1.x
 *  read-only flag), registers cleanups in frame.
 */
int TensorFromDLPackProtocol(CallFrame* frame, PyObject* obj, DLTensor** out, bool* read_only);

/*! \brief Tensor through a managed tensor of the exchange API (no dltensor_from_py_object). */
int TensorFromManagedExchange(CallFrame* frame, const ExchangeApi* api, PyObject* obj,
                              DLTensor** out, bool* read_only);

/*! \brief TVMFFICallContext::alloc_tensor for our calls; handle is the CallFrame. */
int AllocTensorForCall(void* handle, DLTensor* prototype, DLManagedTensorVersioned** out);

/*!
 * \brief Refuses a torch tensor whose conjugate or negative bit is set (BufferError naming
 *  the argument, as torch's own __dlpack__ refuses the conjugate bit): its memory holds the
 *  values before the lazy conjugation/negation, so a callee would read wrong values.
 *  `exported`: the tensor's DLTensor, when already exported (a real dtype skips the
 *  conjugate query), or NULL. Returns 0, or -1 with the error set.
 */
int CheckTorchBits(CallFrame* frame, PyObject* obj, const DLTensor* exported);

/*!
 * \brief The DLTensor of a tensor argument (`info` of kind kExchangeApi or kDLPack) through
 *  the producer's fastest route: the exchange API's dltensor_from_py_object into `slot`
 *  (NULL: one owned by the frame), its managed tensors, or __dlpack__; a torch tensor with
 *  the conjugate or negative bit is refused (CheckTorchBits). Fills *out and *read_only;
 *  returns 0, or -1 with the error set.
 */
int ExportTensorArg(CallFrame* frame, const TypeInfo* info, PyObject* obj, DLTensor* slot,
                    DLTensor** out, bool* read_only);

/*! \brief ctypes.c_void_p value; 0 or -1 with an error set. */
int OpaquePtrFromCtypes(PyObject* obj, void** out);

/*! \brief A stream set by tvm_ffi.use_raw_stream for one device, on one thread. */
struct RawStreamOverride {
  int32_t device_type;
  int32_t device_id;
  void* stream;
};

/*! \brief This thread's overrides, innermost last. */
std::vector<RawStreamOverride>& RawStreamOverrides();

/*! \brief Overrides alive over all threads: lets the stream query skip the lookup at 0. */
extern std::atomic<int> g_raw_stream_overrides;

/*! \brief The innermost override for a device on this thread, or NULL. */
const RawStreamOverride* FindRawStreamOverride(int32_t device_type, int32_t device_id);

/*!
 * \brief The framework's current stream for a device (torch's, through its exchange API;
 *  `api` first when given): 0 and *stream set (NULL without a framework), or -1 with an error.
 */
int FrameworkStream(const ExchangeApi* api, int32_t device_type, int32_t device_id,
                    void** stream);

/*! \brief TVMFFICallContext::get_stream for our calls; handle is the CallFrame. */
void* GetStreamForCall(void* handle, int32_t device_type, int32_t device_id);

}  // namespace tvm_ffi_py

#endif  // TVM_FFI_PY_TYPE_CACHE_H_
