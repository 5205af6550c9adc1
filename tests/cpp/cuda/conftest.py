"""The toolchain the CUDA header tests compile with: the C++ compiler, the CUDA toolkit's
headers and nvcc, each test's flags (-std=c++17 -Wall -Wextra -Werror), and the runtime a linked
program or library binds to (libtvm_ffi.so built by helpers.next_runtime: the headers' errors
and functions call it). A missing tool skips; a compile error is returned for the test to judge
(it is our code)."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from helpers import next_runtime

HERE = Path(__file__).resolve().parent
INCLUDE = HERE.parents[2] / "include"
WARNINGS = ["-Wall", "-Wextra", "-Werror"]


def _cuda_home() -> Path:
    try:
        from tvm_ffi.cpp._toolchain import find_cuda_home

        return Path(find_cuda_home())
    except (ImportError, RuntimeError):
        home = Path("/usr/local/cuda")
        if not (home / "include" / "cuda.h").is_file():
            pytest.skip("needs the CUDA toolkit headers")
        return home


@dataclass(frozen=True)
class Toolchain:
    cxx: str
    cuda_home: Path

    @property
    def nvcc(self) -> Path:
        nvcc = self.cuda_home / "bin" / "nvcc"
        if not nvcc.is_file():
            pytest.skip("needs nvcc")
        return nvcc

    @property
    def runtime_link(self) -> list[str]:
        """``-L <dir> -ltvm_ffi -Wl,-rpath,<dir>``: what a link of code using the headers adds."""
        folder = next_runtime.build().parent
        return [f"-L{folder}", "-ltvm_ffi", f"-Wl,-rpath,{folder}"]

    def gxx(self, source: Path, out: Path, *extra: str, pic: bool = True):
        """``c++ -std=c++17 -Wall -Wextra -Werror [-fPIC] -I include -I <cuda>/include``, and
        the runtime's link flags unless ``-c`` is among ``extra``."""
        cmd = [self.cxx, "-std=c++17", *WARNINGS, *(["-fPIC"] if pic else [])]
        cmd += [f"-I{INCLUDE}", f"-I{self.cuda_home / 'include'}", *extra, str(source)]
        link = [] if "-c" in extra else self.runtime_link
        return subprocess.run([*cmd, "-o", str(out), *link], capture_output=True, text=True)

    def nvcc_compile(self, source: Path, out: Path, *extra: str):
        """``nvcc -x cu -c`` with the same warnings as errors, host and device side."""
        cmd = [str(self.nvcc), "-std=c++17", "-x", "cu", "-c", "-Xcompiler", ",".join(WARNINGS)]
        cmd += ["-Werror", "all-warnings", f"-I{INCLUDE}", *extra, str(source)]
        return subprocess.run([*cmd, "-o", str(out)], capture_output=True, text=True)


@pytest.fixture(scope="session")
def toolchain() -> Toolchain:
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("needs a C++ compiler")
    return Toolchain(cxx, _cuda_home())


@pytest.fixture(scope="session")
def has_driver() -> bool:
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True
