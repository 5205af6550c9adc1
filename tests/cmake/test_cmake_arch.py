"""The architecture grammar of tvm_ffi_generate_cubin's ARCH, and its default from
CMAKE_CUDA_ARCHITECTURES: checked on the nvcc command each call writes into the build
file (configure only: a stand-in nvcc is never run)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _gencode(*archs: str) -> str:
    parts = []
    for arch in archs:
        number = arch.split("_", 1)[1]
        code = f"sm_{number}" if arch.startswith("sm_") else f"compute_{number}"
        parts.append(f"-gencode arch=compute_{number},code={code}")
    return "--fatbin " + " ".join(parts)


# (what the call says before OUTPUT/SOURCE: an ARCH or a CMAKE_CUDA_ARCHITECTURES, the
# nvcc mode it must produce)
CASES = {
    "number": ("ARCH 90", "--cubin -arch=sm_90"),
    "dotted": ("ARCH 9.0", "--cubin -arch=sm_90"),
    "sm": ("ARCH sm_90", "--cubin -arch=sm_90"),
    "number-a": ("ARCH 90a", "--cubin -arch=sm_90a"),
    "dotted-a": ("ARCH 9.0a", "--cubin -arch=sm_90a"),
    "sm-a": ("ARCH sm_90a", "--cubin -arch=sm_90a"),
    "family": ("ARCH 10.0f", "--cubin -arch=sm_100f"),
    "native": ("ARCH native", "--cubin -arch=native"),
    "compute": ("ARCH compute_90", _gencode("compute_90")),
    "plus-ptx": ("ARCH 9.0+PTX", _gencode("sm_90", "compute_90")),
    "list": ("ARCH sm_80 9.0", _gencode("sm_80", "sm_90")),
    "comma-string": ('ARCH "8.0,9.0+PTX"', _gencode("sm_80", "sm_90", "compute_90")),
    "space-string": ('ARCH "80 90a"', _gencode("sm_80", "sm_90a")),
    "same-twice": ("ARCH 9.0 sm_90 90", "--cubin -arch=sm_90"),
    "semicolon-string": ('ARCH "8.0;9.0a"', _gencode("sm_80", "sm_90a")),
    "number-a-ptx": ("ARCH 90a+PTX", _gencode("sm_90a", "compute_90a")),
    "lower-ptx": ("ARCH sm_90+ptx", _gencode("sm_90", "compute_90")),
    "compute-ptx": ("ARCH compute_90+PTX", _gencode("compute_90")),
    "family-list": ('ARCH "10.0f, 12.0a"', _gencode("sm_100f", "sm_120a")),
    # No ARCH: CMAKE_CUDA_ARCHITECTURES in CMake's meaning ("90" is machine code + PTX).
    "cmake-plain": ("CMAKE 90", _gencode("sm_90", "compute_90")),
    "cmake-real": ("CMAKE 90-real", "--cubin -arch=sm_90"),
    "cmake-mixed": ("CMAKE 80-real;90a-real;90-virtual", _gencode("sm_80", "sm_90a", "compute_90")),
    "cmake-native": ("CMAKE native", "--cubin -arch=native"),
    "cmake-off": ("CMAKE OFF", "--cubin -arch=native"),
    "nothing": ("", "--cubin -arch=native"),
    "arch-wins": ("CMAKE 80 ARCH 90", "--cubin -arch=sm_90"),
}


@pytest.fixture(scope="module")
def nvcc_commands(cmake, tmp_path_factory) -> dict[str, str]:
    """Every case configured in one project; the nvcc mode written for each output."""
    if shutil.which("ninja") is None:
        pytest.skip("ninja is not on PATH (the build file is read)")
    root = tmp_path_factory.mktemp("arch")
    source = root / "src"
    source.mkdir()
    (source / "k.cu").write_text('extern "C" __global__ void k() {}\n')
    calls = []
    for case, (spec, _) in CASES.items():
        cmake_archs = re.search(r"CMAKE (\S+)", spec)
        arch = re.search(r"ARCH (.+)$", spec)
        # A function per case keeps its CMAKE_CUDA_ARCHITECTURES to itself.
        function = "call_" + case.replace("-", "_")
        calls.append(
            f"function({function})\n"
            + (f'  set(CMAKE_CUDA_ARCHITECTURES "{cmake_archs[1]}")\n' if cmake_archs else "")
            + f"  tvm_ffi_generate_cubin(OUTPUT {case}.img SOURCE k.cu"
            + (f" ARCH {arch[1]}" if arch else "")
            + f")\nendfunction()\n{function}()\n"
        )
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\nproject(arch LANGUAGES NONE)\n"
        "find_package(tvm_ffi CONFIG REQUIRED)\n"
        "add_custom_target(images ALL DEPENDS "
        + " ".join(f"${{CMAKE_CURRENT_BINARY_DIR}}/{case}.img" for case in CASES)
        + ")\n"
        + "".join(calls)
    )
    fake = root / "fake-nvcc"
    fake.write_text("#!/bin/sh\nexit 1\n")
    build = root / "build"
    cmake.configure(
        source,
        build,
        f"-Dtvm_ffi_ROOT={REPO}",
        f"-DTVM_FFI_NVCC_EXECUTABLE={fake}",
        generator="Ninja",
    )
    text = (build / "build.ninja").read_text()
    out = {}
    for line in text.splitlines():
        found = re.search(rf"{re.escape(str(fake))} (.*?) -MD -MF \S+/(\S+)\.img\.d", line)
        if found:
            out[found[2]] = found[1]
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_arch_grammar(case, nvcc_commands):
    assert nvcc_commands[case] == CASES[case][1]
