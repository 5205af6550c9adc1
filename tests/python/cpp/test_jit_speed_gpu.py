"""Issue 11 on a GPU: the host-compiled wrapper launches its embedded kernel, a new CUBIN
relinked into the unchanged wrapper is the one that runs, and load_inline_many's modules
launch too."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest

from helpers import gpu

pytestmark = pytest.mark.gpu

# The guide's wrapper shape: host code only, one embedded image named "kernels".
WRAPPER = textwrap.dedent(
    """
    #include <tvm/ffi/extra/cuda/cubin_launcher.h>
    TVM_FFI_EMBED_CUBIN(kernels);
    void Apply(tvm::ffi::TensorView x) {
      static auto kernel = TVM_FFI_EMBED_CUBIN_GET_KERNEL(kernels, "apply");
      void* ptr = x.data_ptr();
      long long n = x.numel();
      void* args[] = {&ptr, &n};
      DLDevice device = x.device();
      auto stream = static_cast<cudaStream_t>(
          TVMFFIEnvGetStream(device.device_type, device.device_id));
      TVM_FFI_CHECK_CUDA_ERROR(kernel.Launch(
          args, tvm::ffi::dim3(static_cast<unsigned>((n + 255) / 256)), tvm::ffi::dim3(256),
          stream));
    }
    """
)


def _cubin(tmp_path: Path, arch: str, addend: int) -> bytes:
    root = tmp_path / f"apply{addend}"
    root.mkdir(exist_ok=True)
    source = (
        'extern "C" __global__ void apply(float* x, long long n) {\n'
        "  long long i = blockIdx.x * 256ll + threadIdx.x;\n"
        f"  if (i < n) x[i] += {addend}.0f;\n}}\n"
    )
    return gpu.KernelImages(source, root)(arch)


@pytest.fixture
def arch() -> str:
    return gpu.device_arch()


def test_a_new_cubin_relinked_into_the_wrapper_is_the_one_that_runs(tmp_path, arch, monkeypatch):
    import torch

    from tvm_ffi import cpp

    monkeypatch.setenv("TVM_FFI_CACHE_DIR", str(tmp_path / "cache"))
    x = torch.randn(1000, device="cuda")
    for addend in (1, 2, 1):
        mod = cpp.load_inline(
            f"jit_relink_{addend}",  # a new name each time: a loaded library stays loaded
            cuda_sources=WRAPPER, functions=["Apply"],
            embed_cubin={"kernels": _cubin(tmp_path, arch, addend)},
        )  # fmt: skip
        y = x.clone()
        mod.Apply(y)
        torch.cuda.synchronize()
        torch.testing.assert_close(y, x + addend)
    # One object for the three modules, compiled by the host compiler: no nvcc-registered
    # device code.
    (objects,) = (tmp_path / "cache").glob("objects_*")
    symbols = subprocess.run(
        ["nm", str(next(objects.glob("*.o")))], capture_output=True, text=True, check=True
    ).stdout
    assert "__cudaRegisterFatBinary" not in symbols


def test_many_wrappers_at_once_launch(tmp_path, arch, monkeypatch):
    import torch

    from tvm_ffi import cpp

    monkeypatch.setenv("TVM_FFI_CACHE_DIR", str(tmp_path / "cache"))
    modules = [
        {"name": f"jit_many_gpu_{k}", "cuda_sources": WRAPPER, "functions": ["Apply"],
         "embed_cubin": {"kernels": _cubin(tmp_path, arch, k)}}
        for k in (1, 2, 3)
    ]  # fmt: skip
    x = torch.randn(500, device="cuda")
    for addend, mod in zip((1, 2, 3), cpp.load_inline_many(modules)):
        y = x.clone()
        mod.Apply(y)
        torch.cuda.synchronize()
        torch.testing.assert_close(y, x + addend)
