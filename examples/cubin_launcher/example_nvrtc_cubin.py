"""Compile a kernel with NVRTC at run time and launch it through an embedded CUBIN.

Needs a CUDA GPU, torch with CUDA, nvcc (to build the C++ wrapper) and the NVRTC
bindings (``pip install cuda-bindings nvidia-cuda-nvrtc``).

    python examples/cubin_launcher/example_nvrtc_cubin.py
"""

import torch

from tvm_ffi import cpp
from tvm_ffi.cpp.nvrtc import nvrtc_compile

# The kernel: y = a * x + b. `extern "C"` keeps the symbol name unmangled, so the C++
# side can look it up as "affine".
KERNEL_SOURCE = r"""
extern "C" __global__ void affine(const float* x, float* y, float a, float b, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + b;
}
"""

# The wrapper: TVM_FFI_EMBED_CUBIN(affine_image) refers to the bytes passed below under
# the same name; the module is loaded on the first call and the kernel handle is cached.
WRAPPER_SOURCE = r"""
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/extra/cuda/cubin_launcher.h>
#include <tvm/ffi/function.h>

TVM_FFI_EMBED_CUBIN(affine_image);

void Affine(tvm::ffi::TensorView x, tvm::ffi::TensorView y, double a, double b) {
  // The kernel dereferences these pointers on the GPU: host memory would crash it.
  TVM_FFI_CHECK(x.device().device_type == kDLCUDA && y.device().device_type == kDLCUDA, ValueError)
      << "x and y must be CUDA tensors";
  TVM_FFI_CHECK(x.numel() == y.numel(), ValueError) << "x and y must have the same size";
  static auto kernel = TVM_FFI_EMBED_CUBIN_GET_KERNEL(affine_image, "affine");

  // Every argument is passed by address, with exactly the type the kernel declares.
  const float* x_ptr = static_cast<const float*>(x.data_ptr());
  float* y_ptr = static_cast<float*>(y.data_ptr());
  float a32 = static_cast<float>(a);
  float b32 = static_cast<float>(b);
  long long n = x.numel();
  void* args[] = {&x_ptr, &y_ptr, &a32, &b32, &n};

  constexpr unsigned kThreads = 256;
  tvm::ffi::dim3 grid(static_cast<unsigned>((n + kThreads - 1) / kThreads));
  tvm::ffi::dim3 block(kThreads);

  // The caller's current stream (torch's, when called from torch code).
  DLDevice device = x.device();
  CUstream stream = static_cast<CUstream>(TVMFFIEnvGetStream(device.device_type, device.device_id));
  CUresult result = kernel.Launch(args, grid, block, stream);
  TVM_FFI_CHECK_CUDA_DRIVER_ERROR(result);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(affine, Affine);
"""


def main() -> None:
    # arch=None compiles for the current GPU.
    cubin = nvrtc_compile(KERNEL_SOURCE, name="affine.cu")
    assert cubin[:4] == b"\x7fELF", "NVRTC returns an ELF image (a CUBIN)"

    mod = cpp.load_inline(
        "example_nvrtc_affine",
        cuda_sources=WRAPPER_SOURCE,
        embed_cubin={"affine_image": cubin},
    )

    torch.manual_seed(0)
    x = torch.randn(100_003, device="cuda")  # not a multiple of the block size
    y = torch.full_like(x, float("nan"))
    mod.affine(x, y, 2.5, -1.0)
    torch.testing.assert_close(y, 2.5 * x - 1.0)

    # It runs on torch's current stream, so it orders with other work on that stream.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())  # x was written on the default stream
    with torch.cuda.stream(side):
        z = torch.empty_like(x)
        mod.affine(x, z, 0.5, 3.0)
    side.synchronize()
    torch.testing.assert_close(z, 0.5 * x + 3.0)

    # Wrong inputs are refused before anything reaches the GPU.
    try:
        mod.affine(x.cpu(), y.cpu(), 1.0, 0.0)
    except ValueError as err:
        assert "must be CUDA tensors" in str(err)
    else:
        raise AssertionError("CPU tensors were accepted")

    print("example_nvrtc_cubin: OK")


if __name__ == "__main__":
    main()
