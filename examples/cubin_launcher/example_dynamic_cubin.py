"""Pass CUBIN bytes to C++ at run time and load them there with CubinModule.

Useful when the image is only known at run time (generated per shape, downloaded,
picked from a table). The C++ function takes the image as ``tvm::ffi::Bytes`` and keeps
one loaded module per distinct image, so passing the same bytes again costs a lookup,
not a reload.

Needs a CUDA GPU, torch with CUDA, nvcc (for the C++ wrapper) and the NVRTC bindings
(``pip install cuda-bindings nvidia-cuda-nvrtc``), used here to make two images.

    python examples/cubin_launcher/example_dynamic_cubin.py
"""

import torch

from tvm_ffi import cpp
from tvm_ffi.cpp.nvrtc import nvrtc_compile

KERNEL_SOURCE = r"""
extern "C" __global__ void scale(const float* x, float* y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = FACTOR * x[i];
}
"""

WRAPPER_SOURCE = r"""
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/extra/cuda/cubin_launcher.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace {

// A module and the kernel taken from it, kept together so the kernel never outlives
// the module that owns its code.
struct LoadedImage {
  explicit LoadedImage(const tvm::ffi::Bytes& image)
      : module(image), kernel(module.GetKernel("scale")) {}
  tvm::ffi::CubinModule module;
  tvm::ffi::CubinKernel kernel;
};

std::mutex cache_mutex;
// Keyed by content, not by address: Python hands over a new buffer on every call.
// Never freed on purpose: unloading CUDA modules from a static destructor at process
// exit can run after the CUDA runtime has shut down.
auto* cache = new std::map<std::string, std::unique_ptr<LoadedImage>>();

LoadedImage& Load(const tvm::ffi::Bytes& image) {
  std::lock_guard<std::mutex> lock(cache_mutex);
  std::string key(image.data(), image.size());
  auto it = cache->find(key);
  if (it == cache->end()) {
    it = cache->emplace(std::move(key), std::make_unique<LoadedImage>(image)).first;
  }
  return *it->second;
}

}  // namespace

void Scale(tvm::ffi::Bytes image, tvm::ffi::TensorView x, tvm::ffi::TensorView y) {
  TVM_FFI_CHECK(x.device().device_type == kDLCUDA && y.device().device_type == kDLCUDA, ValueError)
      << "x and y must be CUDA tensors";
  TVM_FFI_CHECK(x.numel() == y.numel(), ValueError) << "x and y must have the same size";
  LoadedImage& loaded = Load(image);

  void* x_ptr = x.data_ptr();
  void* y_ptr = y.data_ptr();
  long long n = x.numel();
  void* args[] = {&x_ptr, &y_ptr, &n};
  tvm::ffi::dim3 grid(static_cast<unsigned>((n + 127) / 128));
  tvm::ffi::dim3 block(128);

  // The runtime-API spelling of a launch; the driver-API one (CUresult, CUstream,
  // TVM_FFI_CHECK_CUDA_DRIVER_ERROR) works the same way.
  DLDevice device = x.device();
  cudaStream_t stream =
      static_cast<cudaStream_t>(TVMFFIEnvGetStream(device.device_type, device.device_id));
  cudaError_t err = loaded.kernel.Launch(args, grid, block, stream);
  TVM_FFI_CHECK_CUDA_ERROR(err);
}

int64_t LoadedImageCount() {
  std::lock_guard<std::mutex> lock(cache_mutex);
  return static_cast<int64_t>(cache->size());
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(scale, Scale);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(loaded_image_count, LoadedImageCount);
"""


def main() -> None:
    # Two different images of the same kernel: one doubles, one negates.
    double = nvrtc_compile(KERNEL_SOURCE, name="scale.cu", extra_opts=["-DFACTOR=2.0f"])
    negate = nvrtc_compile(KERNEL_SOURCE, name="scale.cu", extra_opts=["-DFACTOR=-1.0f"])
    assert double != negate

    mod = cpp.load_inline("example_dynamic_scale", cuda_sources=WRAPPER_SOURCE)

    torch.manual_seed(0)
    x = torch.randn(10_000, device="cuda")
    for _ in range(3):
        y = torch.full_like(x, float("nan"))
        mod.scale(double, x, y)
        torch.testing.assert_close(y, 2.0 * x)
        mod.scale(negate, x, y)
        torch.testing.assert_close(y, -x)
    # bytearray and a copy of the same bytes hit the same cache entry.
    mod.scale(bytearray(double), x, y)
    torch.testing.assert_close(y, 2.0 * x)
    assert mod.loaded_image_count() == 2, mod.loaded_image_count()
    # Bytes that are not an image are refused with a message, and not cached.
    try:
        mod.scale(b"not a cubin", x, y)
    except ValueError as err:
        assert "not a CUBIN, PTX or fatbin image" in str(err), err
    else:
        raise AssertionError("garbage bytes were accepted")
    assert mod.loaded_image_count() == 2

    print("example_dynamic_cubin: OK")


if __name__ == "__main__":
    main()
