/*
 * The one include of a library's second launcher translation unit in separate mode (see
 * detail/launcher_linkage.h): defines module loading, kernel lookup and kernel settings, the
 * run-once functions of cubin_launcher.h.
 */
#ifndef TVM_FFI_EXTRA_CUDA_DETAIL_LAUNCHER_DEFINITIONS_MODULES_H_
#define TVM_FFI_EXTRA_CUDA_DETAIL_LAUNCHER_DEFINITIONS_MODULES_H_

#if defined(TVM_FFI_EXTRA_CUDA_DETAIL_LAUNCHER_LINKAGE_H_) && \
    !defined(TVM_FFI_CUDA_SEPARATE_LAUNCHER)
#error \
    "launcher_definitions_modules.h must come before every other header of the CUDA launcher in its file: they were included header-only, so it would define nothing"
#endif
#ifndef TVM_FFI_CUDA_SEPARATE_LAUNCHER
#define TVM_FFI_CUDA_SEPARATE_LAUNCHER 1
#endif
// Wrappers need cubin_launcher.h to bring function.h; these definitions do not (a faster parse).
#define TVM_FFI_DETAIL_LAUNCHER_DEFINITIONS 1

// clang-format off: the declarations first, then the definitions (no *_impl.h
// includes its declaring header).
#include <tvm/ffi/extra/cuda/cubin_launcher.h>

#include <tvm/ffi/extra/cuda/detail/cubin_launcher_impl.h>
// clang-format on

#endif  // TVM_FFI_EXTRA_CUDA_DETAIL_LAUNCHER_DEFINITIONS_MODULES_H_
