// Declares the embedded image's symbols the way TVM_FFI_EMBED_CUBIN does and hands them
// out through C functions, so a test can compare them with the image file (with ctypes,
// no GPU). Only the C ABI header is needed.
#include <tvm/ffi/c_api.h>

#include <cstddef>

extern "C" const char __tvm_ffi__cubin_probe[];
extern "C" const char __tvm_ffi__cubin_probe_end[];

extern "C" __attribute__((visibility("default"))) const char* probe_image() {
  return __tvm_ffi__cubin_probe;
}

extern "C" __attribute__((visibility("default"))) size_t probe_image_size() {
  return static_cast<size_t>(__tvm_ffi__cubin_probe_end - __tvm_ffi__cubin_probe);
}
