// add_one(x, y): y = x + 1 for 1-D float32 CUDA tensors, through the kernel that
// tvm_ffi_embed_cubin merged into this library's object (NAME add_one_kernels).
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/extra/cuda/cubin_launcher.h>
#include <tvm/ffi/function.h>

#include <cstdint>

TVM_FFI_EMBED_CUBIN(add_one_kernels);

namespace {

bool IsFloat32(const tvm::ffi::TensorView& t) {
  DLDataType dtype = t.dtype();
  return dtype.code == kDLFloat && dtype.bits == 32 && dtype.lanes == 1;
}

void AddOne(tvm::ffi::TensorView x, tvm::ffi::TensorView y) {
  TVM_FFI_CHECK(x.device().device_type == kDLCUDA, ValueError) << "x must be a CUDA tensor";
  TVM_FFI_CHECK(x.ndim() == 1 && y.ndim() == 1 && x.size(0) == y.size(0), ValueError)
      << "x and y must be 1-D tensors of the same length";
  TVM_FFI_CHECK(IsFloat32(x) && IsFloat32(y), TypeError) << "x and y must be float32";
  TVM_FFI_CHECK(x.IsContiguous() && y.IsContiguous(), ValueError)
      << "x and y must be contiguous";

  int64_t n = x.size(0);
  if (n == 0) return;  // a grid of zero blocks is a launch error
  // Loaded on first use, once per process; the kernel handle is cached here.
  static auto kernel = TVM_FFI_EMBED_CUBIN_GET_KERNEL(add_one_kernels, "add_one");

  void* x_ptr = x.data_ptr();
  void* y_ptr = y.data_ptr();
  void* args[] = {&x_ptr, &y_ptr, &n};
  constexpr int64_t kThreads = 256;
  tvm::ffi::dim3 grid(static_cast<unsigned int>((n + kThreads - 1) / kThreads));
  tvm::ffi::dim3 block(kThreads);

  // The caller's current stream (torch's, when called from Python).
  DLDevice device = x.device();
  CUstream stream =
      static_cast<CUstream>(TVMFFIEnvGetStream(device.device_type, device.device_id));
  CUresult result = kernel.Launch(args, grid, block, stream);
  TVM_FFI_CHECK_CUDA_DRIVER_ERROR(result);
}

}  // namespace

TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_one, AddOne);
