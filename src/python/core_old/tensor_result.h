/*
 * Tensors coming back from a call (kTVMFFIDLManagedTensor results) and the allocator a
 * callee reaches through TVMFFIEnvTensorAlloc.
 */
#ifndef TVM_FFI_PY_TENSOR_RESULT_H_
#define TVM_FFI_PY_TENSOR_RESULT_H_

#include <Python.h>
#include <tvm/ffi/c_api.h>

namespace tvm_ffi_py {

struct CallFrame;

/*! \brief Ready tvm_ffi.Tensor; returns it (borrowed) or NULL with an error set. */
PyTypeObject* InitTensorType();

/*!
 * \brief Takes ownership of `managed` and returns it as a Python object: the framework
 *  tensor of the call's arguments (torch in, torch out), else a tvm_ffi.Tensor. On failure
 *  the tensor is released and NULL returned with an error set.
 */
PyObject* ManagedTensorToPython(const CallFrame& frame, DLManagedTensorVersioned* managed);

/*!
 * \brief tvm_ffi.from_dlpack: a tvm_ffi.Tensor sharing the memory of any __dlpack__ producer
 *  (a tvm_ffi.Tensor comes back as itself); NULL with an error set.
 */
PyObject* TensorFromDLPack(PyObject* obj);

/*! \brief Releases every managed tensor and object inside a result that will not be converted. */
void ReleaseManagedTensors(const TVMFFIAny& v);

}  // namespace tvm_ffi_py

#endif  // TVM_FFI_PY_TENSOR_RESULT_H_
