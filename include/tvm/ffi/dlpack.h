/*
 * The DLPack structs (DLTensor, DLDevice, DLDataType, ...) under this package's earlier path.
 * The one copy is <dlpack/dlpack.h> (DLPack 1.3), where apache-tvm-ffi's headers and DLPack's
 * users include it from; this path stays for code written against it.
 */
#ifndef TVM_FFI_DLPACK_H_
#define TVM_FFI_DLPACK_H_

#include <dlpack/dlpack.h>

#endif  // TVM_FFI_DLPACK_H_
