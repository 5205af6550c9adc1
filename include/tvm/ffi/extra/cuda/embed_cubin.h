/*
 * Declaring images embedded in a library: TVM_FFI_EMBED_CUBIN (linker symbols made by
 * tvm_ffi.utils.embed_cubin, load_inline, CMake or objcopy) and TVM_FFI_EMBED_CUBIN_FROM_BYTES
 * (an array in the source: C++23 `#embed`, bin2c). Both define, at namespace scope, the
 * struct apache-tvm-ffi's generated code reaches for:
 *
 *   struct EmbedCubinModule_<name> {
 *     tvm::ffi::CubinModule mod;                    // loaded on the first Global() call
 *     static EmbedCubinModule_<name>* Global();     // one per library, thread-safe
 *   };
 *
 * The struct and the embedded symbols have hidden visibility: each library keeps its own
 * image and module, and two libraries that embed the same name never share (or interpose)
 * each other's. The struct is not in an anonymous namespace, so the files of one library
 * that declare the same name share one module.
 */
#ifndef TVM_FFI_EXTRA_CUDA_EMBED_CUBIN_H_
#define TVM_FFI_EXTRA_CUDA_EMBED_CUBIN_H_

// The macros expand to uses of CubinModule: the launcher comes with them, and ends with
// detail/embed_cubin_macros.h, where they are defined.
#include <tvm/ffi/extra/cuda/cubin_launcher.h>

#endif  // TVM_FFI_EXTRA_CUDA_EMBED_CUBIN_H_
