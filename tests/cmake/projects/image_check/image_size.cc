// Refers to the image embedded as "img" (so every route must provide it) and reports
// its size to ctypes.
#include <cstddef>

extern "C" const char __tvm_ffi__cubin_img[];
extern "C" const char __tvm_ffi__cubin_img_end[];

extern "C" __attribute__((visibility("default"))) size_t image_size() {
  return static_cast<size_t>(__tvm_ffi__cubin_img_end - __tvm_ffi__cubin_img);
}
