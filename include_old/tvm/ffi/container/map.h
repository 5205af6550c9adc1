/*
 * tvm::ffi::Map<K, V>: a mapping. As a parameter it accepts a Python dict; as a result it
 * comes back as a dict. Entries keep insertion order (as Python's dict does); lookups are
 * linear, which is the fast choice for the handful of options a kernel wrapper receives.
 */
#ifndef TVM_FFI_CONTAINER_MAP_H_
#define TVM_FFI_CONTAINER_MAP_H_

#include <tvm/ffi/detail/map.h>
#include <tvm/ffi/detail/names.h>

#endif  // TVM_FFI_CONTAINER_MAP_H_
