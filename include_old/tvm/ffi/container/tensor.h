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
#include <tvm/ffi/detail/names.h>

#endif  // TVM_FFI_CONTAINER_TENSOR_H_
