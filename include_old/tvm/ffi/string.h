/*
 * tvm::ffi::String (text) and tvm::ffi::Bytes (binary data, e.g. a CUBIN).
 *
 * Both own their characters, know their size (embedded NULs are kept), and are cheap to
 * copy: copies share one immutable buffer. They convert implicitly to std::string_view.
 */
#ifndef TVM_FFI_STRING_H_
#define TVM_FFI_STRING_H_

#include <tvm/ffi/detail/string.h>
#include <tvm/ffi/detail/names.h>

#endif  // TVM_FFI_STRING_H_
