// A library in apache-tvm-ffi's style: DLPack included by its reference spelling, the
// image embedded by tvm_ffi_embed_bin_into as "env". C functions for ctypes.
#include <dlpack/dlpack.h>

#include <cstddef>

#include "run_add_one.h"

static_assert(DLPACK_MAJOR_VERSION >= 1, "dlpack/dlpack.h is the DLPack header");

TVM_FFI_EMBED_CUBIN(env);

extern "C" __attribute__((visibility("default"))) size_t lib_embedded_image_size() {
  return static_cast<size_t>(__tvm_ffi__cubin_env_end - __tvm_ffi__cubin_env);
}

extern "C" __attribute__((visibility("default"))) int lib_embedded_run() {
  return RunAddOne("lib_embedded", [] { return TVM_FFI_EMBED_CUBIN_GET_KERNEL(env, "add_one"); });
}
