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

#include <tvm/ffi/base.h>
#include <tvm/ffi/extra/cuda/cubin_launcher.h>

// Both macros end in a redeclaration of the struct, so the `;` written after them is needed
// and accepted (an empty declaration would draw -Wpedantic's "extra ';'").
#define TVM_FFI_DETAIL_EMBED_CUBIN_STRUCT(name, load) \
  struct TVM_FFI_DLL_LOCAL EmbedCubinModule_##name {  \
    ::tvm::ffi::CubinModule mod = load;               \
    static EmbedCubinModule_##name* Global() {        \
      static EmbedCubinModule_##name instance;        \
      return &instance;                               \
    }                                                 \
  };                                                  \
  struct EmbedCubinModule_##name

/*!
 * \brief Declares the image embedded under `name` (symbols __tvm_ffi__cubin_<name> and
 *  __tvm_ffi__cubin_<name>_end) and its module, EmbedCubinModule_<name>::Global()->mod.
 *  Use at namespace scope, followed by `;`; may appear in several files of one library.
 */
#define TVM_FFI_EMBED_CUBIN(name)                                                 \
  extern "C" TVM_FFI_DLL_LOCAL const char __tvm_ffi__cubin_##name[];              \
  extern "C" TVM_FFI_DLL_LOCAL const char __tvm_ffi__cubin_##name##_end[];        \
  TVM_FFI_DETAIL_EMBED_CUBIN_STRUCT(                                              \
      name, ::tvm::ffi::CubinModule::FromEmbedded(#name, __tvm_ffi__cubin_##name, \
                                                  __tvm_ffi__cubin_##name##_end))

/*!
 * \brief Declares an image held in the array `image` (`#embed`, bin2c: unsigned char[],
 *  char[] or wider integers; its size is sizeof(image)) under `name`, like TVM_FFI_EMBED_CUBIN.
 *  A pointer, or an array declared without its size, is sized by the image's own header.
 */
#define TVM_FFI_EMBED_CUBIN_FROM_BYTES(name, image) \
  TVM_FFI_DETAIL_EMBED_CUBIN_STRUCT(name, ::tvm::ffi::CubinModule::FromEmbeddedBytes(#name, image))

/*! \brief The CubinModule declared under `name` (loaded on first use). */
#define TVM_FFI_EMBED_CUBIN_GET_MODULE(name) \
  (static_cast<const ::tvm::ffi::CubinModule&>(EmbedCubinModule_##name::Global()->mod))

/*! \brief A CubinKernel for `kernel_name` from the module declared under `name`. */
#define TVM_FFI_EMBED_CUBIN_GET_KERNEL(name, kernel_name) \
  (EmbedCubinModule_##name::Global()->mod.GetKernel(kernel_name))

#endif  // TVM_FFI_EXTRA_CUDA_EMBED_CUBIN_H_
