/*
 * How a Python type travels as an argument, decided once per type and cached. Exact builtin
 * types never get here (ConvertArg tests them by pointer first); this covers tensors of every
 * producer and the rarer kinds (subclasses, dtypes, devices, the object protocol, ...).
 */
#ifndef TVM_FFI_PYCORE_NEXT_ARG_TYPES_H_
#define TVM_FFI_PYCORE_NEXT_ARG_TYPES_H_

#include "core.h"

namespace tvm_ffi_next {

// Scalar argument views (args.cc, arg_protocols.cc): the payload's unused bytes are zero.
inline void SetPod(TVMFFIAny* out, int32_t index, int64_t v) {
  out->type_index = index;
  out->zero_padding = 0;
  out->v_int64 = v;
}
inline void SetFloat(TVMFFIAny* out, double v) {
  out->type_index = kTVMFFIFloat;
  out->zero_padding = 0;
  out->v_float64 = v;
}
inline void SetPointer(TVMFFIAny* out, void* ptr) {
  out->type_index = kTVMFFIOpaquePtr;
  out->zero_padding = 0;
  out->v_ptr = ptr;
}
inline void SetDataType(TVMFFIAny* out, long long code, long long bits, long long lanes) {
  SetPod(out, kTVMFFIDataType, 0);
  out->v_dtype.code = static_cast<uint8_t>(code);
  out->v_dtype.bits = static_cast<uint8_t>(bits);
  out->v_dtype.lanes = static_cast<uint16_t>(lanes);
}

enum class Kind : uint8_t {
  kHandle,          // our Function / Object wrappers
  kInt,             // int subclass or __index__
  kFloat,           // float subclass or __float__
  kStr,             // str subclass
  kDTypeStr,        // str subclass with type_code/bits/lanes (tvm_ffi.dtype)
  kBytes,           // bytes subclass
  kByteArray,       // bytearray
  kSequence,        // list/tuple subclass
  kMapping,         // dict subclass
  kExchangeApi,     // tensor with the DLPack C exchange API
  kDLPack,          // tensor with __dlpack__
  kObjectProtocol,  // __tvm_ffi_object__()
  kFrameworkDType,  // torch.dtype, numpy.dtype: by name
  kTorchDevice,     // torch.device
  kDLDevice,        // __dlpack_device__() of a non-tensor
  kOpaquePtr,       // ctypes.c_void_p
  // apache-tvm-ffi's conversion protocols (arg_protocols.cc):
  kCudaStream,         // __cuda_stream__() or cuda.bindings.driver.CUstream: an opaque pointer
  kOpaquePtrProtocol,  // __tvm_ffi_opaque_ptr__()
  kDLPackDataType,     // __dlpack_data_type__(): (code, bits, lanes)
  kIntProtocol,        // __tvm_ffi_int__()
  kFloatProtocol,      // __tvm_ffi_float__()
  kValueProtocol,      // __tvm_ffi_value__(): converted in its place
  kCallable,
  kOpaque,  // anything else: an ffi.OpaquePyObject holding the object
};

struct TypeEntry {
  PyTypeObject* type;  // strong reference: the address is never reused for another type
  Kind kind;
  const ExchangeApi* api;
  // torch.Tensor or a subclass: its conjugate and negative bits are checked per call, since a
  // DLTensor cannot carry them.
  bool torch_tensor;
  // Exactly torch.Tensor: its DLTensor needs no producer check (CheckProducerTensor). Torch
  // refuses negative sizes and computes every storage extent with overflow checks wherever
  // sizes or strides are set; a subclass (a wrapper subclass sets its own) is checked.
  bool torch_exact;
};

/*! \brief The entry for `type`, classified on first sight (never fails: other types are
 *  kOpaque). */
const TypeEntry* LookupType(PyTypeObject* type);
/*! \brief The entry LookupType answered last (never NULL; the GIL guards it): a call's
 *  tensors are usually of one type, so ConvertArg tries it before the builtin types. */
extern const TypeEntry* g_last_type;

/*!
 * \brief Refuses a torch tensor whose conjugate or negative bit is set (BufferError naming the
 *  argument): its memory holds the values before the lazy conjugation/negation, so a callee
 *  would read wrong values. `exported` is its DLTensor. 0, or -1 with the error set.
 */
int CheckTorchBits(const ArgFrame* frame, PyObject* obj, const DLTensor* exported);

/*!
 * \brief CheckTorchBits before a torch tensor is exported through its __dlpack__ (a subclass
 *  without the exchange API), which would refuse the conjugate bit in its own words.
 */
int CheckTorchBitsBeforeExport(const ArgFrame* frame, PyObject* obj);

/*! \brief An argument of one of the protocol kinds (kCudaStream ... kValueProtocol); 0, or -1
 *  with an error naming the argument and the method at fault. */
int ProtocolArg(ArgFrame* frame, Kind kind, PyObject* obj, TVMFFIAny* out, DLTensor* view,
                int depth);

}  // namespace tvm_ffi_next

#endif  // TVM_FFI_PYCORE_NEXT_ARG_TYPES_H_
