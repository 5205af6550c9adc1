/*
 * tvm::ffi::Array<T>: a sequence. As a parameter it accepts a Python list or tuple; as a
 * result it comes back as a list. Value semantics over std::vector (a copy is a copy), with
 * the member names kernel-library wrappers use.
 */
#ifndef TVM_FFI_CONTAINER_ARRAY_H_
#define TVM_FFI_CONTAINER_ARRAY_H_

#include <tvm/ffi/detail/array.h>
#include <tvm/ffi/detail/names.h>

#endif  // TVM_FFI_CONTAINER_ARRAY_H_
