/*
 * DLDataType helpers: comparison, the string form ("float32", "bfloat16", "int8x4") and
 * printing to a std::ostream, as kernel-library wrappers use them in checks and messages.
 */
#ifndef TVM_FFI_DTYPE_H_
#define TVM_FFI_DTYPE_H_

#include <tvm/ffi/detail/dtype.h>
#include <tvm/ffi/detail/names.h>

#endif  // TVM_FFI_DTYPE_H_
