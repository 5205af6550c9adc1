/*
 * The compiler helpers (TVM_FFI_LIKELY, TVM_FFI_COLD, TVM_FFI_HIDDEN, ...) under this
 * package's earlier path; they are defined in base_detail.h, apache-tvm-ffi's path for them,
 * which every header includes. This path stays for code written against it.
 */
#ifndef TVM_FFI_BASE_H_
#define TVM_FFI_BASE_H_

#include <tvm/ffi/base_detail.h>

#endif  // TVM_FFI_BASE_H_
