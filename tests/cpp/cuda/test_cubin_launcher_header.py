"""cubin_launcher.h without a GPU: it compiles cleanly (g++ and nvcc, -Wall -Werror) for the
guide's code and the whole API, a library using it links with nothing CUDA-specific, and
without a driver every failure is a clear error."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SOURCES = ["guide_embedded.cc", "launch_api.cc"]


@pytest.mark.slow_compile
@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_compiles_with_gxx(toolchain, source, opt, tmp_path):
    proc = toolchain.gxx(HERE / source, tmp_path / "out.o", "-c", opt)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow_compile
@pytest.mark.parametrize("source", SOURCES)
def test_compiles_with_nvcc(toolchain, source, tmp_path):
    proc = toolchain.nvcc_compile(HERE / source, tmp_path / "out.o")
    assert proc.returncode == 0, proc.stderr


def test_typed_launch_refuses_objects(toolchain, tmp_path):
    proc = toolchain.gxx(HERE / "bad_typed_launch.cc", tmp_path / "out.o", "-c")
    assert proc.returncode != 0
    assert "kernel arguments are copied bytewise" in proc.stderr


def test_library_needs_no_cuda_library(toolchain, tmp_path):
    """The guide's code plus an embedded image links with no CUDA library (only the tvm-ffi
    runtime) and loads."""
    if shutil.which("ld") is None or shutil.which("objcopy") is None:
        pytest.skip("needs binutils")
    nvcc = toolchain.nvcc
    from tvm_ffi.utils.embed_cubin import embed_cubin

    kernel = tmp_path / "k.cu"
    kernel.write_text('extern "C" __global__ void add_one(float* x, float* y, long n) {}\n')
    subprocess.run(
        [str(nvcc), "--cubin", "-arch=sm_80", str(kernel), "-o", str(tmp_path / "k.cubin")],
        check=True,
    )
    obj = tmp_path / "guide.o"
    proc = toolchain.gxx(HERE / "guide_embedded.cc", obj, "-c")
    assert proc.returncode == 0, proc.stderr
    embed_cubin(tmp_path / "k.cubin", obj, tmp_path / "merged.o", "my_kernels")
    lib = tmp_path / "libguide.so"
    subprocess.run(
        [
            toolchain.cxx,
            "-shared",
            str(tmp_path / "merged.o"),
            "-o",
            str(lib),
            "-Wl,-z,noexecstack,-z,defs",
            *toolchain.runtime_link,
        ],
        check=True,
    )
    needed = subprocess.run(["readelf", "-d", str(lib)], capture_output=True, text=True).stdout
    assert "libcuda" not in needed and "libcudart" not in needed
    ctypes.CDLL(str(lib))  # loads on a machine without a driver


@pytest.mark.parametrize("mode", ["header-only", "separate"])
def test_errors_without_a_driver(toolchain, has_driver, mode, tmp_path):
    if has_driver:
        pytest.skip("this machine has libcuda.so.1; the no-driver path is not reachable")
    exe = tmp_path / "no_driver"
    sources = []
    if mode == "separate":  # the run-once functions in their own files (launcher_linkage.h)
        for part in ("driver", "modules"):
            sources.append(tmp_path / f"{part}.cc")
            sources[-1].write_text(
                f"#include <tvm/ffi/extra/cuda/detail/launcher_definitions_{part}.h>\n"
            )
        sources.append("-DTVM_FFI_CUDA_SEPARATE_LAUNCHER")
    proc = toolchain.gxx(HERE / "no_driver.cc", exe, *map(str, sources))
    assert proc.returncode == 0, proc.stderr
    cubin = tmp_path / "fake.cubin"
    # A well-formed CUDA ELF header is all the loader checks before it needs the driver.
    header = bytearray(64)
    header[0:4] = b"\x7fELF"
    header[4], header[5], header[8] = 2, 1, 8
    header[18:20] = (190).to_bytes(2, "little")
    header[40:48] = (1024).to_bytes(8, "little")  # section table at 1024: 10 entries of 64
    header[58:60] = (64).to_bytes(2, "little")
    header[60:62] = (10).to_bytes(2, "little")
    cubin.write_bytes(bytes(header) + b"\0" * (1024 + 640 - 64))
    out = subprocess.run([str(exe), str(cubin)], capture_output=True, text=True, check=True)
    lines = out.stdout.splitlines()
    assert lines[0].startswith(
        "RuntimeError: cannot load the CUDA driver library libcuda.so.1 (libcuda.so.1: "
    )
    # Validation comes before the driver: a truncated image is a ValueError even here.
    assert lines[1] == (
        "ValueError: cannot load module <1000-byte image>: truncated or corrupt "
        "CUBIN image: the section table ends at byte 1664 but the image has "
        "1000 bytes"
    )
    assert lines[2] == (
        "ValueError: cannot load module <4-byte image>: not a CUBIN, PTX or "
        "fatbin image (first bytes: 12 34 56 78)"
    )
    assert lines[3] == (
        'RuntimeError: cannot read CUDA module file "/nonexistent/k.cubin": '
        "No such file or directory"
    )
    assert lines[4].endswith("[launch of an empty CubinKernel (default-constructed or moved-from)]")
    assert lines[4].startswith("RuntimeError: CUDA driver error (400): ")
    assert lines[5] in (
        "RuntimeError: cudaErrorInvalidValue (1): invalid argument",
        "RuntimeError: cudaError (1): no name available (libcudart is not loaded)",
    )
    assert lines[6] == "no error"
