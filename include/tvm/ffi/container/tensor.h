/*
 * tvm::ffi::TensorView: a non-owning view of a DLTensor, the type an exported function takes
 * for tensor arguments. It is valid only while the DLTensor it views is (for an argument:
 * until the function returns).
 *
 * tvm::ffi::Tensor: an owning tensor (shared ownership of a DLManagedTensorVersioned), the
 * type an exported function returns for a tensor it allocated, e.g. through the caller's
 * framework with Tensor::FromEnvAlloc(TVMFFIEnvTensorAlloc, shape, dtype, device).
 */
#ifndef TVM_FFI_CONTAINER_TENSOR_H_
#define TVM_FFI_CONTAINER_TENSOR_H_

#include <tvm/ffi/detail/tensor.h>

// The names code written for apache-tvm-ffi finds through this header (its tensor.h brings
// them through its own includes).
#include <tvm/ffi/any.h>
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/variant.h>
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/object.h>
#include <tvm/ffi/optional.h>
#include <tvm/ffi/string.h>

#endif  // TVM_FFI_CONTAINER_TENSOR_H_
