"""Compile kernels with nvcc to a CUBIN and embed it in a JIT-built library.

This is the ahead-of-time route in miniature: ``nvcc --cubin`` makes the image (here at
run time of the example, in a CMake project at build time) and the library carries it,
so nothing is compiled when the library is loaded. Two kernels share one image; one of
them uses dynamic shared memory.

Needs a CUDA GPU, torch with CUDA and nvcc.

    python examples/cubin_launcher/example_embedded_cubin.py
"""

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import torch

from tvm_ffi import cpp

KERNELS = r"""
extern "C" __global__ void saxpy(float a, const float* x, float* y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

// One partial sum per block, reduced in dynamic shared memory (blockDim.x floats).
extern "C" __global__ void block_sums(const float* x, float* sums, long long n) {
  extern __shared__ float partial[];
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  partial[threadIdx.x] = i < n ? x[i] : 0.0f;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) sums[blockIdx.x] = partial[0];
}
"""

WRAPPER_SOURCE = r"""
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/extra/cuda/cubin_launcher.h>
#include <tvm/ffi/function.h>

#include <cstdint>

TVM_FFI_EMBED_CUBIN(vector_ops);

namespace {
constexpr unsigned kThreads = 256;

CUstream StreamOf(const tvm::ffi::TensorView& t) {
  DLDevice device = t.device();
  TVM_FFI_CHECK(device.device_type == kDLCUDA, ValueError) << "expected a CUDA tensor";
  return static_cast<CUstream>(TVMFFIEnvGetStream(device.device_type, device.device_id));
}
}  // namespace

void Saxpy(double a, tvm::ffi::TensorView x, tvm::ffi::TensorView y) {
  static auto kernel = TVM_FFI_EMBED_CUBIN_GET_KERNEL(vector_ops, "saxpy");
  float a32 = static_cast<float>(a);
  void* x_ptr = x.data_ptr();
  void* y_ptr = y.data_ptr();
  long long n = x.numel();
  void* args[] = {&a32, &x_ptr, &y_ptr, &n};
  tvm::ffi::dim3 grid(static_cast<unsigned>((n + kThreads - 1) / kThreads));
  CUresult result = kernel.Launch(args, grid, tvm::ffi::dim3(kThreads), StreamOf(x));
  TVM_FFI_CHECK_CUDA_DRIVER_ERROR(result);
}

void BlockSums(tvm::ffi::TensorView x, tvm::ffi::TensorView sums) {
  static auto kernel = TVM_FFI_EMBED_CUBIN_GET_KERNEL(vector_ops, "block_sums");
  long long n = x.numel();
  unsigned blocks = static_cast<unsigned>((n + kThreads - 1) / kThreads);
  TVM_FFI_CHECK(sums.numel() == static_cast<int64_t>(blocks), ValueError)
      << "sums must have " << blocks << " elements (got " << sums.numel() << ")";
  void* x_ptr = x.data_ptr();
  void* sums_ptr = sums.data_ptr();
  void* args[] = {&x_ptr, &sums_ptr, &n};
  uint32_t smem = kThreads * sizeof(float);  // the size of `partial` in the kernel
  CUresult result =
      kernel.Launch(args, tvm::ffi::dim3(blocks), tvm::ffi::dim3(kThreads), StreamOf(x), smem);
  TVM_FFI_CHECK_CUDA_DRIVER_ERROR(result);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(saxpy, Saxpy);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(block_sums, BlockSums);
"""


def find_nvcc() -> str:
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")):
        if root and (Path(root) / "bin" / "nvcc").is_file():
            return str(Path(root) / "bin" / "nvcc")
    found = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    assert Path(found).is_file(), "nvcc not found: set CUDA_HOME or put nvcc on PATH"
    return found


def compile_cubin(source: str, arch: str) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "vector_ops.cu", Path(tmp) / "vector_ops.cubin"
        src.write_text(source)
        subprocess.run(
            [find_nvcc(), "--cubin", f"-arch={arch}", str(src), "-o", str(out)], check=True
        )
        return out.read_bytes()


def main() -> None:
    major, minor = torch.cuda.get_device_capability()
    cubin = compile_cubin(KERNELS, f"sm_{major}{minor}")

    mod = cpp.load_inline(
        "example_embedded_vector_ops",
        cuda_sources=WRAPPER_SOURCE,
        embed_cubin={"vector_ops": cubin},
    )

    torch.manual_seed(0)
    n = 70_001
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    expected = 3.0 * x + y
    mod.saxpy(3.0, x, y)  # in place: y += 3 x
    torch.testing.assert_close(y, expected)

    blocks = (n + 255) // 256
    sums = torch.full((blocks,), float("nan"), device="cuda")
    mod.block_sums(x, sums)
    padded = torch.nn.functional.pad(x, (0, blocks * 256 - n))
    torch.testing.assert_close(sums, padded.view(blocks, 256).sum(dim=1), rtol=1e-4, atol=1e-4)

    print("example_embedded_cubin: OK")


if __name__ == "__main__":
    main()
