"""Fixtures for the embedding tests: small kernels compiled with nvcc (no GPU needed)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

KERNEL_SOURCE = r"""
extern "C" __global__ void add_one(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + 1.0f;
}
extern "C" __global__ void mul_two(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}
"""


def _nvcc() -> str:
    for candidate in (shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if candidate and Path(candidate).is_file():
            return candidate
    pytest.skip("needs nvcc to compile test kernels")


@pytest.fixture(scope="session")
def compile_kernel(tmp_path_factory):
    """compile_kernel("sm_80") -> cubin bytes; compile_kernel("compute_90", ptx=True) -> PTX."""
    nvcc = _nvcc()
    root = tmp_path_factory.mktemp("kernels")
    source = root / "kernel.cu"
    source.write_text(KERNEL_SOURCE)
    cache: dict[tuple[str, bool], bytes] = {}

    def build(arch: str, ptx: bool = False) -> bytes:
        if (arch, ptx) not in cache:
            out = root / f"{arch}.{'ptx' if ptx else 'cubin'}"
            mode = "--ptx" if ptx else "--cubin"
            subprocess.run([nvcc, mode, f"-arch={arch}", str(source), "-o", str(out)], check=True)
            cache[(arch, ptx)] = out.read_bytes()
        return cache[(arch, ptx)]

    return build


@pytest.fixture(scope="session")
def binutils():
    for tool in ("ld", "objcopy", "readelf", "nm"):
        if shutil.which(tool) is None:
            pytest.skip(f"needs binutils ({tool} not found)")


@pytest.fixture(scope="session")
def cxx():
    for name in ("g++", "c++"):
        if shutil.which(name):
            return shutil.which(name)
    pytest.skip("needs a C++ compiler")


# A TU that hands back the bytes embedded under `blob`, as one using TVM_FFI_EMBED_CUBIN(blob)
# would see them.
READER_SOURCE = r"""
#include <cstddef>
extern "C" __attribute__((visibility("hidden"))) const char __tvm_ffi__cubin_blob[];
extern "C" __attribute__((visibility("hidden"))) const char __tvm_ffi__cubin_blob_end[];
extern "C" const char* embedded_blob(size_t* size) {
  *size = static_cast<size_t>(__tvm_ffi__cubin_blob_end - __tvm_ffi__cubin_blob);
  return __tvm_ffi__cubin_blob;
}
"""


@pytest.fixture
def compile_reader(cxx):
    """compile_reader(directory) -> directory/reader.o, READER_SOURCE compiled with -fPIC."""

    def build(directory: Path) -> Path:
        source = directory / "reader.cc"
        source.write_text(READER_SOURCE)
        obj = directory / "reader.o"
        subprocess.run([cxx, "-fPIC", "-c", str(source), "-o", str(obj)], check=True)
        return obj

    return build
