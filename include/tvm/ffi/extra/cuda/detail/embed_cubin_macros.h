/*
 * The macros of embed_cubin.h, kept apart so that cubin_launcher.h can end with them without
 * the two headers including each other. They name tvm::ffi::CubinModule only in their
 * expansions, so this file needs base.h alone.
 * What they declare, and why hidden, is described in embed_cubin.h.
 */
#ifndef TVM_FFI_EXTRA_CUDA_DETAIL_EMBED_CUBIN_MACROS_H_
#define TVM_FFI_EXTRA_CUDA_DETAIL_EMBED_CUBIN_MACROS_H_

#include <tvm/ffi/base_detail.h>

// Both macros end in a redeclaration of the struct, so the `;` written after them is needed
// and accepted (an empty declaration would draw -Wpedantic's "extra ';'").
#define TVM_FFI_DETAIL_EMBED_CUBIN_STRUCT(name, load) \
  struct TVM_FFI_HIDDEN EmbedCubinModule_##name {     \
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
  extern "C" TVM_FFI_HIDDEN const char __tvm_ffi__cubin_##name[];                 \
  extern "C" TVM_FFI_HIDDEN const char __tvm_ffi__cubin_##name##_end[];           \
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

#endif  // TVM_FFI_EXTRA_CUDA_DETAIL_EMBED_CUBIN_MACROS_H_
