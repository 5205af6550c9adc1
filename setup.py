"""Builds the one compiled extension, ``tvm_ffi._core``, and ships the C++ headers and CMake
files inside the package (``tvm_ffi/include``, ``tvm_ffi/share/cmake/tvm_ffi``).

Everything else is declared in pyproject.toml.
"""

from __future__ import annotations

import os
import shutil
from glob import glob

from pybind11.setup_helpers import Pybind11Extension
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = os.path.dirname(os.path.abspath(__file__))

# Source trees copied into the package at build time: (folder in the repo, folder in the
# package). Walked at build time, so files added later are picked up without editing this.
DATA_TREES = [
    ("include", os.path.join("tvm_ffi", "include")),
    ("cmake", os.path.join("tvm_ffi", "share", "cmake", "tvm_ffi")),
]


def _tree_files(folder: str) -> list[str]:
    """Files under ``folder`` (relative to the repo root), sorted, no symlinks followed."""
    out = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, folder)):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
        for name in sorted(filenames):
            if not name.startswith("."):
                out.append(os.path.relpath(os.path.join(dirpath, name), ROOT))
    return out


class BuildPyWithData(build_py):
    """build_py that also copies the header and CMake trees into the built package."""

    def run(self) -> None:
        super().run()
        for src_folder, dst_folder in DATA_TREES:
            for rel in _tree_files(src_folder):
                target = os.path.join(self.build_lib, dst_folder, os.path.relpath(rel, src_folder))
                self.mkpath(os.path.dirname(target))
                # copyfile: real copies (no symlinks, no permission surprises).
                shutil.copyfile(os.path.join(ROOT, rel), target)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        outputs = list(super().get_outputs(include_bytecode))
        for src_folder, dst_folder in DATA_TREES:
            for rel in _tree_files(src_folder):
                outputs.append(
                    os.path.join(self.build_lib, dst_folder, os.path.relpath(rel, src_folder))
                )
        return outputs


def _cuda_include_dir() -> str | None:
    """The CUDA toolkit's include folder (for cuda.h), or None: then ``tvm_ffi.cuda`` is
    built without its launch half and says so when used."""
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    for root in roots:
        if root and os.path.isfile(os.path.join(root, "include", "cuda.h")):
            return os.path.join(root, "include")
    return None


CUDA_INCLUDE = _cuda_include_dir()

ext = Pybind11Extension(
    "tvm_ffi._core",
    sorted(glob("src/python/*.cc")),
    include_dirs=["include", *([CUDA_INCLUDE] if CUDA_INCLUDE else [])],
    define_macros=[("TVM_FFI_PY_WITH_CUDA", "1" if CUDA_INCLUDE else "0")],
    depends=sorted(glob("src/python/*.h")) + _tree_files("include"),
    cxx_std=17,
    extra_compile_args=["-O3", "-fvisibility=hidden"],
    libraries=["dl"],
)

# ---- libtvm_ffi.so: the process-wide registry (src/lib), a plain C++ shared library ----
# Shipped as tvm_ffi/lib/libtvm_ffi.so so that `-L<dir> -ltvm_ffi` links against it; the soname
# lets a library that lists it as DT_NEEDED reuse the copy tvm_ffi._core already loaded.
LIBTVM_FFI = "tvm_ffi.lib.libtvm_ffi"
libtvm_ffi = Extension(
    LIBTVM_FFI,
    sorted(glob("src/lib/*.cc")),
    include_dirs=["include"],
    depends=["include/tvm/ffi/c_api.h", os.path.join("src", "lib", "libtvm_ffi.map")],
    language="c++",  # linked by the C++ driver: it needs libstdc++
    extra_compile_args=["-std=c++17", "-O2", "-fvisibility=hidden"],
    extra_link_args=[
        "-Wl,-soname,libtvm_ffi.so",
        f"-Wl,--version-script={os.path.join(ROOT, 'src', 'lib', 'libtvm_ffi.map')}",
    ],
)


class BuildExtWithLib(build_ext):
    """build_ext that names libtvm_ffi plainly (an extension module gets a cpython suffix)."""

    def get_ext_filename(self, fullname: str) -> str:
        # Asked with the full dotted name or, by get_ext_fullpath, with its last part only.
        parts = fullname.split(".")
        if parts[-1] == LIBTVM_FFI.rsplit(".", 1)[-1]:
            return os.path.join(*parts) + ".so"
        return super().get_ext_filename(fullname)


setup(
    ext_modules=[ext, libtvm_ffi],
    cmdclass={"build_py": BuildPyWithData, "build_ext": BuildExtWithLib},
)
