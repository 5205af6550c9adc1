// The user guide's launcher wrapper (docs/guides/cubin_launcher.md): an embedded image, one
// kernel, its launch on the caller's stream, the check macro and the export. Built for the
// import/export checks of test_headers_symbols.py; the image symbols are defined here, empty,
// since only the library's symbol tables are read.
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/extra/cuda/cubin_launcher.h>
#include <tvm/ffi/function.h>

extern "C" __attribute__((visibility("hidden"))) const char __tvm_ffi__cubin_my_kernels[] = "";
extern "C" __attribute__((visibility("hidden"))) const char __tvm_ffi__cubin_my_kernels_end[] = "";

TVM_FFI_EMBED_CUBIN(my_kernels);

void LaunchAddOne(tvm::ffi::TensorView x, tvm::ffi::TensorView y) {
  static auto kernel = TVM_FFI_EMBED_CUBIN_GET_KERNEL(my_kernels, "add_one");
  int64_t n = x.size(0);
  void* x_ptr = x.data_ptr();
  void* y_ptr = y.data_ptr();
  void* args[] = {&x_ptr, &y_ptr, &n};
  DLDevice device = x.device();
  CUstream stream = static_cast<CUstream>(TVMFFIEnvGetStream(device.device_type, device.device_id));
  CUresult result = kernel.Launch(args, tvm::ffi::dim3((n + 255) / 256), tvm::ffi::dim3(256), stream);
  TVM_FFI_CHECK_CUDA_DRIVER_ERROR(result);
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(launch_add_one, LaunchAddOne);
