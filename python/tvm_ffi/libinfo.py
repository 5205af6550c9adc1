"""Where the headers and the CMake package are, under apache-tvm-ffi's names.

``find_include_path()`` and ``find_dlpack_include_path()`` give the directories to add with
``-I`` (here both are the package's one include directory, which holds ``tvm/ffi/...`` and
``dlpack/dlpack.h``). ``find_libtvm_ffi()`` gives the path of ``libtvm_ffi.so``, the runtime
on tvm-ffi's C ABI (the functions of ``tvm/ffi/c_api.h``, the registry of global functions
and object types): link with ``-L<its folder> -ltvm_ffi``; the library then records it by its
soname, and binds to the one the process already loaded (``tvm_ffi._core``'s, or
apache-tvm-ffi's).
"""

from __future__ import annotations

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
    """Path of the package's ``libtvm_ffi.so`` (the runtime; see docs/abi.md). The CuTe DSL's
    JIT resolves its generated code's TVMFFI* calls in it."""
    return config.get_libtvm_ffi_path()
