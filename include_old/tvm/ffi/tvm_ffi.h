/*
 * compat: apache-tvm-ffi. Its umbrella header: the core's public headers in one include.
 * Here every public core header already brings the core's names (detail/names.h); this path
 * exists so that `#include <tvm/ffi/tvm_ffi.h>` resolves. The CUDA launcher is not part of it
 * (as it is not of apache's): include tvm/ffi/extra/cuda/cubin_launcher.h for that.
 */
#ifndef TVM_FFI_TVM_FFI_H_
#define TVM_FFI_TVM_FFI_H_

#include <tvm/ffi/any.h>
#include <tvm/ffi/base_detail.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/container/shape.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/container/tuple.h>
#include <tvm/ffi/container/variant.h>
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/object.h>
#include <tvm/ffi/optional.h>
#include <tvm/ffi/reflection/registry.h>
#include <tvm/ffi/string.h>

#endif  // TVM_FFI_TVM_FFI_H_
