/*
 * The checks a DLTensor from a producer passes before anything reads it: readers walk
 * shape[0..ndim) and strides[0..ndim), and compute addresses from them, so a bad field there
 * would read out of bounds. Arguments get the cheap checks (one pass over the shape, on the
 * call path); a tensor tvm_ffi keeps (from_dlpack) also gets its byte extent checked.
 */
#ifndef TVM_FFI_PY_DLTENSOR_CHECK_H_
#define TVM_FFI_PY_DLTENSOR_CHECK_H_

#include <tvm/ffi/base.h>
#include <tvm/ffi/dlpack.h>

#include <cstdint>
#include <string>

namespace tvm_ffi_py {

/*! \brief More dimensions than any framework makes: a larger ndim is a corrupt field. */
constexpr int32_t kMaxTensorDims = 1024;

/*! \brief What is wrong with a DLTensor (kNone: nothing), and where. */
struct DLTensorFault {
  enum Kind { kNone, kNegativeNdim, kTooManyDims, kNoShape, kNegativeSize, kExtentOverflow };
  Kind kind = kNone;
  int32_t axis = -1;  // kNegativeSize, kExtentOverflow: the dimension
};

/*! \brief The cheap checks: ndim in [0, kMaxTensorDims], a shape when ndim > 0, sizes >= 0. */
inline DLTensorFault CheckDLTensorShape(const DLTensor& t) {
  if (TVM_FFI_UNLIKELY(t.ndim < 0)) return {DLTensorFault::kNegativeNdim};
  if (TVM_FFI_UNLIKELY(t.ndim > kMaxTensorDims)) return {DLTensorFault::kTooManyDims};
  if (TVM_FFI_UNLIKELY(t.ndim > 0 && t.shape == nullptr)) return {DLTensorFault::kNoShape};
  for (int32_t d = 0; d < t.ndim; ++d) {
    if (TVM_FFI_UNLIKELY(t.shape[d] < 0)) return {DLTensorFault::kNegativeSize, d};
  }
  return {};
}

/*!
 * \brief CheckDLTensorShape, then the extent: the byte offset of the last element (from the
 *  strides, or row-major without them) and the bytes it spans fit in int64.
 */
DLTensorFault CheckDLTensor(const DLTensor& t);

/*! \brief "a negative size (-3) in dimension 1": the fault, for "<producer> gave a DLTensor with
 * ...". */
std::string DescribeDLTensorFault(const DLTensor& t, const DLTensorFault& fault);

}  // namespace tvm_ffi_py

#endif  // TVM_FFI_PY_DLTENSOR_CHECK_H_
