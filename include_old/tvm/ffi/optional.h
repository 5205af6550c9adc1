/*
 * tvm::ffi::Optional<T>: a value or nothing. As a parameter of an exported function it
 * accepts Python None; as a result, nothing comes back as None. A thin layer over
 * std::optional with the spellings kernel-library wrappers use (has_value, value, value_or,
 * defined, comparison with std::nullopt).
 */
#ifndef TVM_FFI_OPTIONAL_H_
#define TVM_FFI_OPTIONAL_H_

#include <tvm/ffi/detail/optional.h>
#include <tvm/ffi/detail/names.h>

#endif  // TVM_FFI_OPTIONAL_H_
