/*
 * tvm::ffi::AnyView and tvm::ffi::Any: one value of any type the ABI carries.
 *
 * AnyView borrows (an argument of the call, or a C++ value that outlives the view); Any owns
 * (strings and containers are copied, objects hold a reference). Both convert to a typed value
 * with cast<T>() (throws TypeError) or as<T>() / try_cast<T>() (std::optional). As parameters
 * of an exported function they accept any argument; as results they return their value.
 */
#ifndef TVM_FFI_ANY_H_
#define TVM_FFI_ANY_H_

#include <tvm/ffi/detail/any.h>
#include <tvm/ffi/detail/names.h>

#endif  // TVM_FFI_ANY_H_
