/*
 * The one include of a library's first launcher translation unit in separate mode (see
 * detail/launcher_linkage.h): defines image inspection, driver loading and the CUDA error
 * texts, the run-once functions of cubin_image.h, driver_api.h and cuda_error.h.
 */
#ifndef TVM_FFI_EXTRA_CUDA_DETAIL_LAUNCHER_DEFINITIONS_DRIVER_H_
#define TVM_FFI_EXTRA_CUDA_DETAIL_LAUNCHER_DEFINITIONS_DRIVER_H_

#if defined(TVM_FFI_EXTRA_CUDA_DETAIL_LAUNCHER_LINKAGE_H_) && \
    !defined(TVM_FFI_CUDA_SEPARATE_LAUNCHER)
#error \
    "launcher_definitions_driver.h must come before every other header of the CUDA launcher in its file: they were included header-only, so it would define nothing"
#endif
#ifndef TVM_FFI_CUDA_SEPARATE_LAUNCHER
#define TVM_FFI_CUDA_SEPARATE_LAUNCHER 1
#endif

// clang-format off: the declarations first, then the definitions (no *_impl.h
// includes its declaring header).
#include <tvm/ffi/extra/cuda/detail/cubin_image.h>
#include <tvm/ffi/extra/cuda/detail/cuda_error.h>
#include <tvm/ffi/extra/cuda/detail/driver_api.h>

#include <tvm/ffi/extra/cuda/detail/cubin_image_impl.h>
#include <tvm/ffi/extra/cuda/detail/cuda_error_impl.h>
#include <tvm/ffi/extra/cuda/detail/driver_api_impl.h>
// clang-format on

#endif  // TVM_FFI_EXTRA_CUDA_DETAIL_LAUNCHER_DEFINITIONS_DRIVER_H_
