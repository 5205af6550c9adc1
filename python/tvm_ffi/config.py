"""Where the installed headers and CMake package live, for build systems.

``python -m tvm_ffi.config --includedir`` prints the directory to add with ``-I``;
``--cmakedir`` the one to give CMake as ``tvm_ffi_DIR`` (or in ``CMAKE_PREFIX_PATH``);
``--version`` the package version. apache-tvm-ffi's flags work too: ``--dlpack-includedir``,
``--cxxflags``, ``--cflags``, ``--libdir``, ``--libfiles``, ``--ldflags`` and ``--libs`` (the
last four name ``libtvm_ffi.so``, the process-wide registry; linking it is optional, libraries
reach it through weak symbols). Each flag prints one line; several flags (not ``--version``)
print one line each, in apache-tvm-ffi's order.
"""

from __future__ import annotations

import os
import sys

from ._version import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "get_cmake_dir",
    "get_dlpack_include_dir",
    "get_include_dir",
    "get_libtvm_ffi_path",
    "main",
]

# os.path, not pathlib: a JIT cache hit asks for the include directory (see cpp._hits).
_PACKAGE = os.path.dirname(os.path.realpath(__file__))
# A source checkout (or an editable install) has no copies in the package: the repo's
# top-level folders are the real thing.
_REPO = os.path.dirname(os.path.dirname(_PACKAGE))


def get_include_dir() -> str:
    """Absolute path of the folder holding ``tvm/ffi/c_api.h``."""
    for candidate in (os.path.join(_PACKAGE, "include"), os.path.join(_REPO, "include")):
        if os.path.isfile(os.path.join(candidate, "tvm", "ffi", "c_api.h")):
            return candidate
    raise RuntimeError(f"tvm_ffi headers not found next to {_PACKAGE}; reinstall tvm-ffi-cubin")


def get_dlpack_include_dir() -> str:
    """Absolute path of the folder holding ``dlpack/dlpack.h`` (the include directory)."""
    include = get_include_dir()
    if not os.path.isfile(os.path.join(include, "dlpack", "dlpack.h")):
        raise RuntimeError(f"dlpack/dlpack.h not found in {include}; reinstall tvm-ffi-cubin")
    return include


def get_cmake_dir() -> str:
    """Absolute path of the CMake package folder (``find_package(tvm_ffi CONFIG)``)."""
    for candidate in (
        os.path.join(_PACKAGE, "share", "cmake", "tvm_ffi"),
        os.path.join(_REPO, "cmake"),
    ):
        if os.path.isdir(candidate):
            return candidate
    raise RuntimeError(f"tvm_ffi CMake files not found next to {_PACKAGE}; reinstall tvm-ffi-cubin")


def get_libtvm_ffi_path() -> str:
    """Absolute path of ``libtvm_ffi.so``, the process-wide registry (docs/abi.md). Here, not in
    libinfo, because tvm_ffi._core asks for it on a JIT cache hit, which imports only this."""
    path = os.path.join(_PACKAGE, "lib", "libtvm_ffi.so")
    if not os.path.isfile(path):
        raise RuntimeError(
            f"libtvm_ffi.so is missing from this tvm_ffi installation (looked for {path}); "
            "reinstall the package: `pip install --force-reinstall tvm-ffi-cubin`"
        )
    return path


def _cxxflags() -> str:
    return " ".join(dict.fromkeys([f"-I{get_include_dir()}", f"-I{get_dlpack_include_dir()}"]))


# flag -> what it prints, in the order apache-tvm-ffi prints them when given together.
_PRINTERS = {
    "includedir": get_include_dir,
    "dlpack_includedir": get_dlpack_include_dir,
    "cmakedir": get_cmake_dir,
    "libdir": lambda: os.path.dirname(get_libtvm_ffi_path()),
    "libfiles": get_libtvm_ffi_path,
    "cxxflags": lambda: f"{_cxxflags()} -std=c++17",
    "cflags": _cxxflags,
    "libs": lambda: "-ltvm_ffi",
    "ldflags": lambda: f"-L{os.path.dirname(get_libtvm_ffi_path())}",
}


def main(argv: Sequence[str] | None = None) -> int:
    import argparse  # only the command line needs it; keeps `import tvm_ffi.config` cheap

    parser = argparse.ArgumentParser(
        prog="python -m tvm_ffi.config", description="Print where tvm_ffi is installed."
    )
    add = parser.add_argument
    add("--includedir", action="store_true", help="the C++ include directory")
    add("--dlpack-includedir", action="store_true", help="the folder of dlpack/dlpack.h")
    add("--cmakedir", action="store_true", help="the CMake package directory")
    add("--cxxflags", action="store_true", help="flags to compile C++ against tvm_ffi")
    add("--cflags", action="store_true", help="include flags for C")
    add("--libdir", action="store_true", help="the folder of libtvm_ffi.so (the registry)")
    add("--libfiles", action="store_true", help="the path of libtvm_ffi.so")
    add("--libs", action="store_true", help="libraries to link: -ltvm_ffi (optional)")
    add("--ldflags", action="store_true", help="link flags: -L<libdir>")
    add("--version", action="store_true", help="the package version")
    args = parser.parse_args(argv)
    chosen = [name for name in _PRINTERS if getattr(args, name)]
    if args.version:
        if chosen:
            parser.error("--version cannot be combined with other flags")
        print(__version__)
        return 0
    if not chosen:
        parser.error("give at least one flag (see --help)")
    for name in chosen:
        print(_PRINTERS[name]())
    return 0


if __name__ == "__main__":
    sys.exit(main())
