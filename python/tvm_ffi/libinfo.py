"""Where the headers and the CMake package are, under apache-tvm-ffi's names.

``find_include_path()`` and ``find_dlpack_include_path()`` give the directories to add with
``-I`` (here both are the package's one include directory, which holds ``tvm/ffi/...`` and
``dlpack/dlpack.h``). There is no runtime library to find: ``find_libtvm_ffi()`` says so.
"""

from __future__ import annotations

import os

from . import config

__all__ = [
    "find_cmake_path",
    "find_dlpack_include_path",
    "find_include_path",
    "find_libtvm_ffi",
    "include_paths",
]


def find_include_path() -> str:
    """The directory holding ``tvm/ffi/*.h`` (``python -m tvm_ffi.config --includedir``)."""
    return config.get_include_dir()


def find_dlpack_include_path() -> str:
    """The directory holding ``dlpack/dlpack.h`` (``... config --dlpack-includedir``)."""
    return config.get_dlpack_include_dir()


def find_cmake_path() -> str:
    """The CMake package directory (``python -m tvm_ffi.config --cmakedir``)."""
    return config.get_cmake_dir()


def include_paths() -> list[str]:
    """Every directory a compile against tvm_ffi needs, without repeats."""
    return sorted({find_include_path(), find_dlpack_include_path()})


def find_libtvm_ffi() -> str:
    """apache-tvm-ffi's runtime library; this package has none, so this always raises."""
    raise RuntimeError(
        "tvm-ffi-cubin has no libtvm_ffi shared library: its C++ API is header-only, so there "
        f"is nothing to link or load (headers: {find_include_path()}{os.sep}tvm{os.sep}ffi)"
    )
