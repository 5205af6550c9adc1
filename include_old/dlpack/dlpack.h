/*
 * `#include <dlpack/dlpack.h>`, the spelling DLPack's own distribution and most kernel
 * libraries use, resolves to this package's DLPack 1.x definitions.
 */
#ifndef TVM_FFI_DLPACK_DLPACK_FORWARD_H_
#define TVM_FFI_DLPACK_DLPACK_FORWARD_H_

#include <tvm/ffi/dlpack.h>

#endif  // TVM_FFI_DLPACK_DLPACK_FORWARD_H_
