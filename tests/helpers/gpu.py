"""What the GPU tests share: kernels several of them launch, the device's architecture, skips
for devices older than Hopper and for one GPU, test kernels compiled by nvcc (each image once),
and a second context on device 0."""

from __future__ import annotations

import contextlib
import ctypes
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import SimpleNamespace

import pytest

# Kernels several GPU tests compile beside their own (CUDA source text, to concatenate).
ADD_ONE_CU = r"""
extern "C" __global__ void add_one(const float* x, float* y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + 1.0f;
}
"""

# Without the guards, the pair would not compile for the architectures before Hopper that the
# tests building for any device target; there the pair runs without the early start.
PDL_PAIR_CU = r"""
// PDL pair: the primary lets its dependent start early; the dependent waits for its data.
extern "C" __global__ void pdl_primary(const float* x, float* tmp, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) tmp[i] = 3.0f * x[i];
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
extern "C" __global__ void pdl_secondary(const float* tmp, float* y, long long n) {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = tmp[i] + 1.0f;
}
"""


def device_arch(device: int = 0) -> str:
    """``sm_XY`` of the device, as nvcc's ``-arch`` spells it."""
    import torch

    major, minor = torch.cuda.get_device_capability(device)
    return f"sm_{major}{minor}"


def needs_hopper(what: str) -> None:
    """Skips the test on a device older than compute capability 9.0, saying what needs it."""
    import torch

    if torch.cuda.get_device_capability(0)[0] < 9:
        pytest.skip(f"needs compute capability 9.0 or newer ({what})")


# nvcc's flags for each kind of image, for an ``sm_XY`` architecture.
_KIND_FLAGS = {
    "cubin": lambda arch: ["--cubin", f"-arch={arch}"],
    "ptx": lambda arch: ["--ptx", f"-arch=compute_{arch[3:]}"],
    "fatbin": lambda arch: ["--fatbin", f"-gencode=arch=compute_{arch[3:]},code={arch}"],
}


class KernelImages:
    """The images of one CUDA source, compiled by nvcc into ``root`` once per
    (arch, kind, defines): ``images(arch, kind="cubin", defines=())`` gives the bytes,
    ``images.path(...)`` the file. A compile error fails the test: it is our kernel."""

    def __init__(self, source: str, root: Path) -> None:
        self._root = root
        self._source = root / "kernels.cu"
        self._source.write_text(source)
        self._paths: dict[tuple[str, str, tuple[str, ...]], Path] = {}

    def path(self, arch: str, kind: str = "cubin", defines: Sequence[str] = ()) -> Path:
        key = (arch, kind, tuple(defines))
        if key not in self._paths:
            from tvm_ffi.cpp._toolchain import find_cuda_tool

            out = self._root / f"{arch}_{len(self._paths)}.{kind}"
            cmd = [str(find_cuda_tool("nvcc")), *_KIND_FLAGS[kind](arch)]
            cmd += [f"-D{define}" for define in defines]
            subprocess.run([*cmd, str(self._source), "-o", str(out)], check=True)
            self._paths[key] = out
        return self._paths[key]

    def __call__(self, arch: str, kind: str = "cubin", defines: Sequence[str] = ()) -> bytes:
        return self.path(arch, kind, defines).read_bytes()


@contextlib.contextmanager
def foreign_context() -> Iterator[SimpleNamespace]:
    """``with foreign_context() as ctx:`` makes a new context of device 0 current on this
    thread, one that is not the device's primary context (as another device's would be, for
    tests of the device guard on one GPU). ``ctx.primary``: the context current before (torch's
    primary context), ``ctx.other``: the new one, ``ctx.current()``: the current one now.
    Afterwards the new context is destroyed and the previous one is current again."""
    driver = ctypes.CDLL("libcuda.so.1")

    def current() -> int | None:
        ctx = ctypes.c_void_p()
        assert driver.cuCtxGetCurrent(ctypes.byref(ctx)) == 0
        return ctx.value

    primary, other = current(), ctypes.c_void_p()
    assert primary
    assert driver.cuCtxCreate_v2(ctypes.byref(other), 0, 0) == 0  # pushed: now current
    try:
        yield SimpleNamespace(primary=primary, other=other.value, current=current)
    finally:
        assert driver.cuCtxDestroy_v2(other) == 0
        assert driver.cuCtxSetCurrent(ctypes.c_void_p(primary)) == 0


def needs_two_gpus() -> None:
    """Skips the test unless two CUDA devices are visible."""
    import torch

    if torch.cuda.device_count() < 2:
        pytest.skip("needs 2 GPUs")
