/*
 * Where the launcher's run-once functions are compiled: image inspection, loading the driver,
 * loading modules and looking up kernels, and the text of CUDA errors.
 *
 * By default the header family is header-only: those functions are inline and compiled in
 * every translation unit that calls them. That is half the compile time of a small wrapper,
 * paid again by every wrapper. With TVM_FFI_CUDA_SEPARATE_LAUNCHER defined in every
 * translation unit of a library, the headers only declare them, and the library links the
 * two translation units that define them, each of which includes one header and nothing else:
 *
 *   #include <tvm/ffi/extra/cuda/detail/launcher_definitions_driver.h>   // file 1
 *   #include <tvm/ffi/extra/cuda/detail/launcher_definitions_modules.h>  // file 2
 *
 * The first defines image inspection, driver loading and error texts, the second module
 * loading, kernel lookup and kernel settings; they cost about the same to compile, so they
 * build in parallel. Launches, kernel accessors, templates and function-local singletons
 * (DriverApi::Get, LastLaunchFailure) stay inline in either mode: launches cost the same, and
 * each library still holds one of each singleton. tvm_ffi.cpp.load_inline builds a library
 * whose sources include the launcher this way.
 *
 * Each declaring header ends by including its *_impl.h unless TVM_FFI_CUDA_SEPARATE_LAUNCHER
 * is defined. The impl headers define with TVM_FFI_DETAIL_LAUNCHER_INLINE (`inline`, or
 * nothing in separate mode) and include nothing of their own family: only the declaring header
 * and the definitions headers include them, after the declarations.
 */
#ifndef TVM_FFI_EXTRA_CUDA_DETAIL_LAUNCHER_LINKAGE_H_
#define TVM_FFI_EXTRA_CUDA_DETAIL_LAUNCHER_LINKAGE_H_

#ifdef TVM_FFI_CUDA_SEPARATE_LAUNCHER
#define TVM_FFI_DETAIL_LAUNCHER_INLINE
#else
#define TVM_FFI_DETAIL_LAUNCHER_INLINE inline
#endif

#endif  // TVM_FFI_EXTRA_CUDA_DETAIL_LAUNCHER_LINKAGE_H_
