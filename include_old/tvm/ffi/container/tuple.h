/*
 * tvm::ffi::Tuple<Ts...>: a fixed-size group of values of different types. As a parameter it
 * accepts a Python tuple or list of exactly that length; as a result it comes back as a
 * tuple. get<I>() and structured bindings read the elements.
 */
#ifndef TVM_FFI_CONTAINER_TUPLE_H_
#define TVM_FFI_CONTAINER_TUPLE_H_

#include <tvm/ffi/detail/tuple.h>
#include <tvm/ffi/detail/names.h>

#endif  // TVM_FFI_CONTAINER_TUPLE_H_
