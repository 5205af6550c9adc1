"""Where the installed headers and CMake package live, for build systems.

``python -m tvm_ffi.config --includedir`` prints the directory to add with ``-I``;
``--cmakedir`` the one to give CMake as ``tvm_ffi_DIR`` (or in ``CMAKE_PREFIX_PATH``);
``--version`` the package version. Each prints exactly one line.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from ._version import __version__

__all__ = ["get_cmake_dir", "get_include_dir", "main"]

_PACKAGE = Path(__file__).resolve().parent
# A source checkout (or an editable install) has no copies in the package: the repo's
# top-level folders are the real thing.
_REPO = _PACKAGE.parent.parent


def get_include_dir() -> str:
    """Absolute path of the folder holding ``tvm/ffi/c_api.h``."""
    for candidate in (_PACKAGE / "include", _REPO / "include"):
        if (candidate / "tvm" / "ffi" / "c_api.h").is_file():
            return str(candidate)
    raise RuntimeError(f"tvm_ffi headers not found next to {_PACKAGE}; reinstall tvm-ffi-cubin")


def get_cmake_dir() -> str:
    """Absolute path of the CMake package folder (``find_package(tvm_ffi CONFIG)``)."""
    for candidate in (_PACKAGE / "share" / "cmake" / "tvm_ffi", _REPO / "cmake"):
        if candidate.is_dir():
            return str(candidate)
    raise RuntimeError(f"tvm_ffi CMake files not found next to {_PACKAGE}; reinstall tvm-ffi-cubin")


def main(argv: Sequence[str] | None = None) -> int:
    import argparse  # only the command line needs it; keeps `import tvm_ffi.config` cheap

    parser = argparse.ArgumentParser(
        prog="python -m tvm_ffi.config", description="Print where tvm_ffi is installed."
    )
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--includedir", action="store_true", help="the C++ include directory")
    group.add_argument("--cmakedir", action="store_true", help="the CMake package directory")
    group.add_argument("--version", action="store_true", help="the package version")
    args = parser.parse_args(argv)
    if args.includedir:
        print(get_include_dir())
    elif args.cmakedir:
        print(get_cmake_dir())
    else:
        print(__version__)
    return 0


if __name__ == "__main__":
    sys.exit(main())
