/*
 * The names every public core header makes available, as apache-tvm-ffi's headers do through
 * their includes (its tensor.h, error.h, function.h, containers... each bring nearly all of
 * them): code written for it may name Optional, Array, Any, Function or Variant after
 * including only one of them. Public headers include this last; nothing inside include/
 * includes a public header, so there is no include cycle.
 */
#ifndef TVM_FFI_DETAIL_NAMES_H_
#define TVM_FFI_DETAIL_NAMES_H_

#include <tvm/ffi/base_detail.h>
#include <tvm/ffi/detail/any.h>
#include <tvm/ffi/detail/array.h>
#include <tvm/ffi/detail/dtype.h>
#include <tvm/ffi/detail/error.h>
#include <tvm/ffi/detail/function.h>
#include <tvm/ffi/detail/map.h>
#include <tvm/ffi/detail/object.h>
#include <tvm/ffi/detail/optional.h>
#include <tvm/ffi/detail/shape.h>
#include <tvm/ffi/detail/std_compat.h>  // compat: apache-tvm-ffi
#include <tvm/ffi/detail/string.h>
#include <tvm/ffi/detail/tensor.h>
#include <tvm/ffi/detail/tuple.h>
#include <tvm/ffi/detail/variant.h>

#endif  // TVM_FFI_DETAIL_NAMES_H_
