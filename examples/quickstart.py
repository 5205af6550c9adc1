"""The main job of tvm-ffi-cubin in one script: compile a CUDA kernel, embed it in a C++
wrapper, build and load the wrapper, launch it and check the result.

    python examples/quickstart.py

The kernel is compiled with NVRTC when its bindings are installed (the ``nvrtc`` extra:
``pip install ".[nvrtc]"``), else with ``nvcc``. The wrapper has no device code, so
load_inline compiles it with the host C++ compiler and the CUDA headers.
The launch needs a CUDA GPU and torch with CUDA (for the GPU memory); without them every
other step still runs and one line says that the launch was skipped, and why.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from tvm_ffi import cpp

# `extern "C"` keeps the symbol name unmangled, so the wrapper finds it as "add_one".
KERNEL_SOURCE = r"""
extern "C" __global__ void add_one(const float* x, float* y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + 1.0f;
}
"""

# TVM_FFI_EMBED_CUBIN(quickstart_cubin) refers to the bytes passed to load_inline under the
# same name; the image is loaded on the first call and the kernel handle is cached.
WRAPPER_SOURCE = r"""
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/extra/cuda/cubin_launcher.h>
#include <tvm/ffi/function.h>

TVM_FFI_EMBED_CUBIN(quickstart_cubin);

void AddOne(tvm::ffi::TensorView x, tvm::ffi::TensorView y) {
  TVM_FFI_CHECK(x.device().device_type == kDLCUDA && y.device().device_type == kDLCUDA, ValueError)
      << "x and y must be CUDA tensors";
  TVM_FFI_CHECK(x.numel() == y.numel(), ValueError) << "x and y must have the same size";
  static auto kernel = TVM_FFI_EMBED_CUBIN_GET_KERNEL(quickstart_cubin, "add_one");

  const float* x_ptr = static_cast<const float*>(x.data_ptr());
  float* y_ptr = static_cast<float*>(y.data_ptr());
  long long n = x.numel();
  void* args[] = {&x_ptr, &y_ptr, &n};  // each argument by address, with the kernel's type

  constexpr unsigned kThreads = 256;
  tvm::ffi::dim3 grid(static_cast<unsigned>((n + kThreads - 1) / kThreads));
  DLDevice device = x.device();
  CUstream stream = static_cast<CUstream>(TVMFFIEnvGetStream(device.device_type, device.device_id));
  TVM_FFI_CHECK_CUDA_DRIVER_ERROR(kernel.Launch(args, grid, tvm::ffi::dim3(kThreads), stream));
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_one, AddOne);
"""

# Without a GPU to ask, the kernel is compiled for this architecture (any that nvcc supports
# would do: nothing runs it).
FALLBACK_ARCH = "sm_80"


def find_nvcc() -> str:
    """nvcc where the package's own builds find it (CUDA_HOME, PATH, pip's CUDA wheels,
    /usr/local/cuda...), so that this script and load_inline agree on the toolkit."""
    from tvm_ffi.cpp._toolchain import find_cuda_tool

    try:
        return str(find_cuda_tool("nvcc"))
    except RuntimeError as err:  # its message lists every place it looked
        raise SystemExit(f"quickstart: {err}") from None


def compile_kernel(arch: str) -> tuple[bytes, str]:
    """The kernel as a CUBIN for `arch`, and which compiler made it."""
    try:
        from tvm_ffi.cpp.nvrtc import nvrtc_compile

        return nvrtc_compile(KERNEL_SOURCE, name="add_one.cu", arch=arch), "NVRTC"
    except ImportError:  # the NVRTC bindings are not installed
        pass
    with tempfile.TemporaryDirectory() as tmp:
        source, cubin = Path(tmp, "add_one.cu"), Path(tmp, "add_one.cubin")
        source.write_text(KERNEL_SOURCE)
        subprocess.run(
            [find_nvcc(), "--cubin", f"-arch={arch}", str(source), "-o", str(cubin)], check=True
        )
        return cubin.read_bytes(), "nvcc"


def cuda_torch():
    """(torch, None) when torch is installed and sees a CUDA GPU; else (None, why not)."""
    try:
        import torch
    except ImportError:
        return None, "torch is not installed (the launch takes its GPU memory from torch)"
    if torch.version.cuda is None:
        return None, f"torch {torch.__version__} is a CPU-only build (the launch needs CUDA)"
    if not torch.cuda.is_available():
        return None, "no CUDA GPU visible to torch (the launch needs both)"
    return torch, None


def main() -> None:
    torch, no_launch = cuda_torch()
    if torch is not None:
        major, minor = torch.cuda.get_device_capability()
        arch = f"sm_{major}{minor}"
    else:
        arch = FALLBACK_ARCH

    cubin, compiler = compile_kernel(arch)
    assert cubin[:4] == b"\x7fELF", "a CUBIN is an ELF image"
    print(f"compiled add_one with {compiler} for {arch}: {len(cubin)} bytes of CUBIN")

    mod = cpp.load_inline(
        "quickstart", cuda_sources=WRAPPER_SOURCE, embed_cubin={"quickstart_cubin": cubin}
    )
    print(f"built and loaded the wrapper: {mod.add_one.signature}")

    if torch is None:
        print(f"launch skipped: {no_launch}")
        return
    x = torch.arange(1000, dtype=torch.float32, device="cuda")
    y = torch.empty_like(x)
    mod.add_one(x, y)
    torch.testing.assert_close(y, x + 1)
    print("launched add_one on the GPU: y == x + 1")


if __name__ == "__main__":
    main()
