/*
 * tvm::ffi::Variant<Ts...>: a value of one of several types. As a parameter of an exported
 * function it takes the first alternative, in order, that the argument converts to (so list
 * `double` before `int64_t` only if an int should become a double); as a result it returns the
 * alternative it holds. (std::variant converts the same way once extra/stl.h is included.)
 */
#ifndef TVM_FFI_CONTAINER_VARIANT_H_
#define TVM_FFI_CONTAINER_VARIANT_H_

#include <tvm/ffi/detail/variant.h>
#include <tvm/ffi/detail/names.h>

#endif  // TVM_FFI_CONTAINER_VARIANT_H_
