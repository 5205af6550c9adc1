// The extent check and the wording of dltensor_check.h.
#include "dltensor_check.h"

namespace tvm_ffi_py {

DLTensorFault CheckDLTensor(const DLTensor& t) {
  DLTensorFault fault = CheckDLTensorShape(t);
  if (fault.kind != DLTensorFault::kNone) return fault;
  for (int32_t d = 0; d < t.ndim; ++d) {
    if (t.shape[d] == 0) return {};  // no element: nothing is ever addressed
  }
  // Elements from the first to the last (row-major without strides), then bytes.
  int64_t last = 0;
  int64_t row_major = 1;
  for (int32_t d = t.ndim; d-- > 0;) {
    int64_t stride = row_major;
    if (t.strides != nullptr) {
      stride = t.strides[d];
      if (stride == INT64_MIN) return {DLTensorFault::kExtentOverflow, d};
      stride = stride < 0 ? -stride : stride;
    }
    int64_t step = 0;
    if (__builtin_mul_overflow(t.shape[d] - 1, stride, &step) ||
        __builtin_add_overflow(last, step, &last) ||
        __builtin_mul_overflow(row_major, t.shape[d], &row_major)) {
      return {DLTensorFault::kExtentOverflow, d};
    }
  }
  const int64_t item_bits = int64_t{t.dtype.bits} * t.dtype.lanes;
  int64_t bits = 0;
  if (__builtin_mul_overflow(last + 1, item_bits, &bits)) {
    return {DLTensorFault::kExtentOverflow, 0};
  }
  return {};
}

std::string DescribeDLTensorFault(const DLTensor& t, const DLTensorFault& fault) {
  const std::string ndim = std::to_string(t.ndim);
  const std::string axis = std::to_string(fault.axis);
  switch (fault.kind) {
    case DLTensorFault::kNegativeNdim:
      return "a negative ndim (ndim " + ndim + ")";
    case DLTensorFault::kTooManyDims:
      return "too many dimensions (ndim " + ndim + ", at most " + std::to_string(kMaxTensorDims) +
             ")";
    case DLTensorFault::kNoShape:
      return "no shape (ndim " + ndim + ")";
    case DLTensorFault::kNegativeSize:
      return "a negative size (" + std::to_string(t.shape[fault.axis]) + ") in dimension " + axis;
    case DLTensorFault::kExtentOverflow:
      return "a shape and strides whose extent overflows 64 bits (at dimension " + axis + ")";
    case DLTensorFault::kNone:
      break;
  }
  return "no fault";
}

}  // namespace tvm_ffi_py
