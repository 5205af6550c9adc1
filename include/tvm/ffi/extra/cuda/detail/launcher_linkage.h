/*
 * Where the launcher's run-once functions are compiled: image inspection, loading the driver,
 * loading modules and looking up kernels, and the text of CUDA errors.
 *
 * By default the header family is header-only: those functions are inline and compiled in
 * every translation unit that calls them. That is half the compile time of a small wrapper,
 * paid again by every wrapper. With TVM_FFI_CUDA_SEPARATE_LAUNCHER defined in every
 * translation unit of a library, they are only declared, and the library links two
 * translation units that define them (compiled with TVM_FFI_CUDA_SEPARATE_LAUNCHER too):
 *
 *   #define TVM_FFI_CUDA_LAUNCHER_PART 1  // 2 in the other file
 *   #include <tvm/ffi/extra/cuda/cubin_launcher.h>
 *
 * Part 1 defines image inspection, driver loading and error texts (the impls of cubin_image.h,
 * driver_api.h and cuda_error.h, so its file may include just cuda_error.h); part 2 module
 * loading, kernel lookup and kernel settings (cubin_launcher_impl.h). The two cost about the
 * same to compile, so they build in parallel. Launches, kernel accessors, templates and
 * function-local singletons (DriverApi::Get, LastLaunchFailure) stay inline in either mode:
 * launches cost the same, and each library still holds one of each singleton.
 * tvm_ffi.cpp.load_inline builds a library whose sources include the launcher this way, and
 * compiles the two parts once per compiler and flags (a cache entry of their own).
 *
 * Each header of the family declares those functions (plainly: GCC refuses `noinline` on a
 * declaration marked inline) and includes its *_impl.h, which defines them with
 * TVM_FFI_DETAIL_LAUNCHER_INLINE, when TVM_FFI_DETAIL_LAUNCHER_PART is 0 (header-only: every
 * part) or names the part that impl belongs to. The macros stay defined: the headers that
 * use them are included one after another, not from one place.
 */
#ifndef TVM_FFI_EXTRA_CUDA_DETAIL_LAUNCHER_LINKAGE_H_
#define TVM_FFI_EXTRA_CUDA_DETAIL_LAUNCHER_LINKAGE_H_

#if !defined(TVM_FFI_CUDA_SEPARATE_LAUNCHER)
#if defined(TVM_FFI_CUDA_LAUNCHER_PART)
#error \
    "TVM_FFI_CUDA_LAUNCHER_PART defines the launcher's functions for a library compiled with TVM_FFI_CUDA_SEPARATE_LAUNCHER: define that too"
#endif
#define TVM_FFI_DETAIL_LAUNCHER_INLINE inline
#define TVM_FFI_DETAIL_LAUNCHER_PART 0
#elif defined(TVM_FFI_CUDA_LAUNCHER_PART)
#if TVM_FFI_CUDA_LAUNCHER_PART != 1 && TVM_FFI_CUDA_LAUNCHER_PART != 2
#error "TVM_FFI_CUDA_LAUNCHER_PART must be 1 or 2"
#endif
#define TVM_FFI_DETAIL_LAUNCHER_INLINE
#define TVM_FFI_DETAIL_LAUNCHER_PART TVM_FFI_CUDA_LAUNCHER_PART
#else
// Declarations only: the library's launcher parts define them.
#define TVM_FFI_DETAIL_LAUNCHER_INLINE
#define TVM_FFI_DETAIL_LAUNCHER_PART -1
#endif

#endif  // TVM_FFI_EXTRA_CUDA_DETAIL_LAUNCHER_LINKAGE_H_
