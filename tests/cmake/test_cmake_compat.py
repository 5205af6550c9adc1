"""CMake code written for apache-tvm-ffi builds against this package unchanged:
add_tvm_ffi_cubin / add_tvm_ffi_fatbin + tvm_ffi_embed_bin_into (projects/apache_style),
the "Option 1" block of its launcher documentation (projects/option1), tvm_ffi::shared,
tvm_ffi_DLPACK_INCLUDE_DIR and <dlpack/dlpack.h> through every target. Running the
kernels needs a GPU: see test_consumers_gpu.py."""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import tvm_ffi.libinfo

REPO = Path(__file__).resolve().parents[2]
PROJECTS = Path(__file__).resolve().parent / "projects"
EM_CUDA = 190
FATBIN_MAGIC = bytes.fromhex("50ed55ba")
MODES = ["source", "installed", "pip"]


def _object_of(build: Path, target: str) -> Path:
    """The one object file of an OBJECT library target (what $<TARGET_OBJECTS:...> names)."""
    objects = sorted((build / "CMakeFiles" / f"{target}.dir").rglob("*.o"))
    assert len(objects) == 1, objects
    return objects[0]


def _arch_of(elf) -> int:
    # CUDA ELF keeps the SM number in e_flags: bits 8-15 in current toolkits, 0-7 before.
    return (elf.flags >> 8) & 0xFF if elf.flags & 0xFF00 else elf.flags & 0xFF


def _links_nothing_more(elf) -> None:
    """No driver at link time, and the runtime (tvm_ffi::shared) by its soname only."""
    needed = elf.needed()
    assert not [n for n in needed if n.startswith("libcuda.so")], needed
    assert [n for n in needed if "tvm_ffi" in n] in ([], ["libtvm_ffi.so"]), needed


# ---- add_tvm_ffi_cubin / add_tvm_ffi_fatbin / tvm_ffi_embed_bin_into --------------------


@pytest.mark.slow_compile
@pytest.mark.parametrize("mode", MODES)
def test_apache_style_library(mode, built, elf):
    """A fatbin compiled by CMake's CUDA language, embedded from $<TARGET_OBJECTS:...>."""
    build = built(PROJECTS / "apache_style", mode)
    fatbin = _object_of(build, "kernels_fatbin").read_bytes()
    assert fatbin[:4] == FATBIN_MAGIC
    library = elf(build / "liblib_embedded.so")
    library.assert_embedded("env", fatbin)
    assert not library.stack_is_executable()
    _links_nothing_more(library)
    lib = ctypes.CDLL(str(build / "liblib_embedded.so"))
    lib.lib_embedded_image_size.restype = ctypes.c_size_t
    assert lib.lib_embedded_image_size() == len(fatbin)


@pytest.mark.slow_compile
@pytest.mark.parametrize("mode", MODES)
def test_apache_style_program(mode, built, elf, test_arch):
    """A CUBIN from $<TARGET_OBJECTS:...> and a fatbin from a file in one program."""
    build = built(PROJECTS / "apache_style", mode)
    cubin_path = _object_of(build, "kernels_cubin")
    cubin = elf(cubin_path)
    # CMAKE_CUDA_ARCHITECTURES "90" asks for machine code and PTX; the CUBIN keeps the first.
    assert cubin.machine == EM_CUDA
    assert _arch_of(cubin) == int(test_arch.removeprefix("sm_"))
    default = (build / "add_one_default.fatbin").read_bytes()
    assert default[:4] == FATBIN_MAGIC  # no ARCH: CMAKE_CUDA_ARCHITECTURES, code and PTX
    program = elf(build / "apache_exe")
    program.assert_embedded("cubin_env", cubin_path.read_bytes())
    program.assert_embedded("from_file", default)
    assert not program.stack_is_executable()
    _links_nothing_more(program)
    proc = subprocess.run(
        [str(build / "apache_exe"), "--sizes"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"cubin_env={len(cubin_path.read_bytes())} from_file={len(default)}\n"


def test_apache_style_rebuilds_after_a_kernel_change(cuda_cmake, package_args, elf, tmp_path):
    """Editing the kernel recompiles the object libraries and re-embeds their objects."""
    source = tmp_path / "src"
    shutil.copytree(PROJECTS / "apache_style", source)
    build = tmp_path / "build"
    cuda_cmake.configure(source, build, *package_args("source"))
    cuda_cmake.build(build)
    before = _object_of(build, "kernels_fatbin").read_bytes()
    time.sleep(1.1)  # coarse file-system timestamps
    kernel = source / "add_one.cu"
    kernel.write_text(kernel.read_text().replace("1.0f", "2.0f"))
    cuda_cmake.build(build)
    after = _object_of(build, "kernels_fatbin").read_bytes()
    assert after != before
    elf(build / "liblib_embedded.so").assert_embedded("env", after)
    elf(build / "apache_exe").assert_embedded(
        "cubin_env", _object_of(build, "kernels_cubin").read_bytes()
    )
    result = cuda_cmake.build(build)
    assert "checking the image" not in result.stdout  # nothing changed: nothing re-embedded


# ---- the "Option 1" block ---------------------------------------------------------------


def test_option1_block_is_verbatim():
    text = (PROJECTS / "option1" / "CMakeLists.txt").read_text()
    assert (
        "add_library(mylib SHARED ${CMAKE_CURRENT_BINARY_DIR}/mycode_with_cubin.o)\n"
        "target_link_libraries(mylib PRIVATE tvm_ffi_header CUDA::cudart)\n"
    ) in text
    assert "LINKER_LANGUAGE" not in text


@pytest.mark.slow_compile
@pytest.mark.parametrize(
    ("mode", "generator"),
    [*((mode, None) for mode in MODES), ("source", "Unix Makefiles")],
)
def test_option1_block_builds(mode, generator, built, elf):
    build = built(PROJECTS / "option1", mode, generator=generator)
    library = elf(build / "libmylib.so")
    library.assert_embedded("my_kernels", (build / "kernel.cubin").read_bytes())
    assert not library.stack_is_executable()
    # The block links the headers only: the library's runtime calls bind to a libtvm_ffi.so
    # the process holds globally, as a process that imported apache-tvm-ffi does.
    ctypes.CDLL(tvm_ffi.libinfo.find_libtvm_ffi(), mode=ctypes.RTLD_GLOBAL)
    lib = ctypes.CDLL(str(build / "libmylib.so"))
    lib.mylib_image_size.restype = ctypes.c_size_t
    assert lib.mylib_image_size() == (build / "kernel.cubin").stat().st_size


# ---- tvm_ffi::shared, tvm_ffi_DLPACK_INCLUDE_DIR, <dlpack/dlpack.h> ----------------------

# One library per target the package hands out, each compiling a file that includes
# DLPack by its reference spelling (and the core header that builds on it).
TARGETS = ["tvm_ffi_header", "tvm_ffi::header", "tvm_ffi_shared", "tvm_ffi::shared"]
DLPACK_SOURCE = """\
#include <dlpack/dlpack.h>
#include <tvm/ffi/c_api.h>

static_assert(DLPACK_MAJOR_VERSION >= 1, "the DLPack header");

extern "C" int dlpack_probe() { return static_cast<int>(sizeof(DLTensor)); }
"""


def _dlpack_project(tmp_path: Path, find: str) -> Path:
    source = tmp_path / "src"
    source.mkdir()
    (source / "probe.cc").write_text(DLPACK_SOURCE)
    libraries = "".join(
        f"add_library(probe_{i} SHARED probe.cc)\n"
        f"target_link_libraries(probe_{i} PRIVATE {target})\n"
        for i, target in enumerate(TARGETS)
    )
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\nproject(dlpack_probe LANGUAGES CXX)\n"
        f"{find}\n"
        'if(NOT EXISTS "${tvm_ffi_DLPACK_INCLUDE_DIR}/dlpack/dlpack.h")\n'
        '  message(FATAL_ERROR "no dlpack/dlpack.h in [${tvm_ffi_DLPACK_INCLUDE_DIR}]")\n'
        "endif()\n"
        'message(STATUS "dlpack_dir=${tvm_ffi_DLPACK_INCLUDE_DIR}")\n'
        f"{libraries}"
    )
    return source


@pytest.mark.slow_compile
@pytest.mark.parametrize("mode", ["source", "source-dir", "installed", "wheel", "pip"])
def test_shared_target_and_dlpack(mode, cmake, package_args, elf, tmp_path):
    if shutil.which(os.environ.get("CXX", "c++")) is None:
        pytest.skip("no C++ compiler (c++) on PATH")
    source = _dlpack_project(tmp_path, "find_package(tvm_ffi CONFIG REQUIRED)")
    build = tmp_path / "build"
    result = cmake.configure(source, build, *package_args(mode))
    dlpack_dir = Path(re.search(r"^-- dlpack_dir=(.*)$", result.stdout, re.M)[1])
    assert (dlpack_dir / "dlpack" / "dlpack.h").is_file()
    cmake.build(build)
    for i in range(len(TARGETS)):
        _links_nothing_more(elf(build / f"libprobe_{i}.so"))


RUNTIME_SOURCE = """\
#include <tvm/ffi/c_api.h>

extern "C" int runtime_major() {
  TVMFFIVersion v;
  TVMFFIGetVersion(&v);
  return static_cast<int>(v.major) + 100;
}
"""


@pytest.mark.parametrize("mode", ["source", "wheel", "pip"])
def test_shared_target_is_the_runtime(mode, cmake, package_args, elf, tmp_path):
    """tvm_ffi::shared links libtvm_ffi.so: a library that calls the C ABI records it by its
    soname and, loaded once tvm_ffi has loaded its runtime, binds to that one."""
    if shutil.which(os.environ.get("CXX", "c++")) is None:
        pytest.skip("no C++ compiler (c++) on PATH")
    source = tmp_path / "src"
    source.mkdir()
    (source / "probe.cc").write_text(RUNTIME_SOURCE)
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\nproject(runtime_probe LANGUAGES CXX)\n"
        "find_package(tvm_ffi CONFIG REQUIRED)\n"
        "add_library(probe SHARED probe.cc)\n"
        "target_link_libraries(probe PRIVATE tvm_ffi::shared)\n"
    )
    build = tmp_path / "build"
    cmake.configure(source, build, *package_args(mode))
    cmake.build(build)
    library = build / "libprobe.so"
    assert "libtvm_ffi.so" in elf(library).needed()
    code = (
        "import ctypes, tvm_ffi.libinfo\n"
        "ctypes.CDLL(tvm_ffi.libinfo.find_libtvm_ffi(), mode=ctypes.RTLD_GLOBAL)\n"
        f"print(ctypes.CDLL({str(library)!r}).runtime_major())\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert (proc.returncode, proc.stdout) == (0, "100\n"), proc.stderr


def test_shared_target_through_add_subdirectory(cmake, elf, tmp_path):
    """A project that vendors the repository gets the same targets and variable."""
    if shutil.which(os.environ.get("CXX", "c++")) is None:
        pytest.skip("no C++ compiler (c++) on PATH")
    source = _dlpack_project(tmp_path, f'add_subdirectory("{REPO}" tvm_ffi)')
    build = tmp_path / "build"
    result = cmake.configure(source, build)
    assert re.search(r"^-- dlpack_dir=(.*)$", result.stdout, re.M)[1] == str(REPO / "include")
    cmake.build(build)
    for i in range(len(TARGETS)):
        _links_nothing_more(elf(build / f"libprobe_{i}.so"))
