/*
 * tvm::ffi::Error and the TVM_FFI_THROW / TVM_FFI_CHECK macros.
 *
 * An Error carries a kind (the name of the Python exception the caller should raise, e.g.
 * "ValueError"), a message, and where it was thrown. An exported function that throws one
 * reports all four through the C ABI (see function.h).
 */
#ifndef TVM_FFI_ERROR_H_
#define TVM_FFI_ERROR_H_

#include <tvm/ffi/detail/error.h>
#include <tvm/ffi/detail/names.h>

#endif  // TVM_FFI_ERROR_H_
