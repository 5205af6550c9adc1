/*
 * tvm_ffi.cuda's kernel types: CubinKernel (a kernel of a loaded image, with the parameter
 * layout its launches pack against) and the launcher `kernel[grid, block]` returns. Plain
 * CPython types with vectorcall, so a launch goes from Python to cuLaunchKernel without a
 * Python-level frame.
 */
#ifndef TVM_FFI_PY_CUDA_LAUNCH_H_
#define TVM_FFI_PY_CUDA_LAUNCH_H_

#include <Python.h>

#include <tvm/ffi/extra/cuda/cubin_launcher.h>

#include <memory>
#include <string>

#include "cuda_args.h"

namespace tvm_ffi_next {
namespace cuda {

/*! \brief Ready both types; the CubinKernel type (borrowed), or NULL with an error set. */
PyTypeObject* InitKernelTypes();

/*! \brief A new CubinKernel object, or NULL with an error set. */
PyObject* NewKernel(std::shared_ptr<const tvm::ffi::CubinKernel> kernel, Layout layout,
                    const std::string& name, const std::string& module_label);

/*! \brief Raises a tvm::ffi::Error as the Python exception of its kind; returns NULL. */
PyObject* RaiseFfiError(const tvm::ffi::Error& e);

}  // namespace cuda
}  // namespace tvm_ffi_next

#endif  // TVM_FFI_PY_CUDA_LAUNCH_H_
