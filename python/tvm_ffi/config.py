"""Where the installed headers, CMake package and libraries live, for build systems.

``tvm-ffi-config`` (also ``python -m tvm_ffi.config`` and ``python -m tvm_ffi``) takes
apache-tvm-ffi's flags: ``--includedir`` prints the directory to add with ``-I``,
``--cmakedir`` the one to give CMake as ``tvm_ffi_DIR``; ``--dlpack-includedir``,
``--cxxflags``, ``--cflags``, ``--libdir``, ``--libfiles``, ``--libs``, ``--ldflags``,
``--sourcedir`` and ``--cython-lib-path`` as there (the library flags name ``libtvm_ffi.so``,
the process-wide registry; linking it is optional, libraries reach it through weak symbols;
``--cython-lib-path`` has no meaning here and fails saying so), and ``--version``. Each flag
prints one line; several flags (not ``--version``) print one line each, in apache-tvm-ffi's
order. No flag prints the help.
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

# os.path, not pathlib: a JIT cache hit asks for the include directory (see cpp._hit_index).
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


def _cxxflags() -> str:
    return " ".join(dict.fromkeys([f"-I{get_include_dir()}", f"-I{get_dlpack_include_dir()}"]))


def get_libtvm_ffi_path() -> str:
    """Absolute path of ``libtvm_ffi.so``, the process-wide registry (docs/abi.md). Here, and
    libinfo forwards to it, because tvm_ffi._core asks for it on a JIT cache hit, which imports
    only this module."""
    path = os.path.join(_PACKAGE, "lib", "libtvm_ffi.so")
    if not os.path.isfile(path):
        raise RuntimeError(
            f"libtvm_ffi.so is missing from this tvm_ffi installation (looked for {path}); "
            "reinstall the package: `pip install --force-reinstall tvm-ffi-cubin`"
        )
    return path


def _libs() -> str:
    get_libtvm_ffi_path()  # the library must be there to link against
    return "-ltvm_ffi"


def _source_dir() -> str:
    # A source checkout: the package sits in <repo>/python/tvm_ffi beside <repo>/src.
    if os.path.isdir(os.path.join(_REPO, "src")) and os.path.isfile(
        os.path.join(_REPO, "pyproject.toml")
    ):
        return _REPO
    raise RuntimeError(
        "tvm-ffi-cubin is installed without its sources (the wheel ships headers and the CMake "
        "package only): use --includedir or --cmakedir, or a source checkout"
    )


def _no_cython() -> str:
    raise RuntimeError(
        "tvm-ffi-cubin has no Cython module (its compiled core, tvm_ffi._core, is a private "
        "extension with no API to compile against)"
    )


# flag -> (what it prints, help), in the order apache-tvm-ffi prints them when given together.
_FLAGS = {
    "includedir": (get_include_dir, "the C++ include directory"),
    "dlpack_includedir": (get_dlpack_include_dir, "the folder of dlpack/dlpack.h"),
    "cmakedir": (get_cmake_dir, "the CMake package directory"),
    "libdir": (lambda: os.path.dirname(get_libtvm_ffi_path()), "the folder of libtvm_ffi.so"),
    "libfiles": (lambda: get_libtvm_ffi_path(), "the full path of libtvm_ffi.so"),
    "sourcedir": (_source_dir, "the source checkout (not in an installed wheel)"),
    "cython_lib_path": (_no_cython, "no meaning here: tvm-ffi-cubin has no Cython module"),
    "cxxflags": (lambda: f"{_cxxflags()} -std=c++17", "flags to compile C++ against tvm_ffi"),
    "cflags": (_cxxflags, "include flags for C"),
    "libs": (_libs, "the library to link: -ltvm_ffi"),
    "ldflags": (lambda: f"-L{os.path.dirname(get_libtvm_ffi_path())}", "link flags: -L<libdir>"),
}


def _prog() -> str:
    if os.path.basename(sys.argv[0]) == "tvm-ffi-config":
        return "tvm-ffi-config"
    return "python -m tvm_ffi.config"


def main(argv: Sequence[str] | None = None) -> int:
    """The ``tvm-ffi-config`` command line; returns the exit status."""
    import argparse  # only the command line needs it; keeps `import tvm_ffi.config` cheap

    prog = _prog()
    parser = argparse.ArgumentParser(prog=prog, description="Print where tvm_ffi is installed.")
    for name, (_, text) in _FLAGS.items():
        parser.add_argument("--" + name.replace("_", "-"), action="store_true", help=text)
    parser.add_argument("--version", action="store_true", help="the package version")
    args = parser.parse_args(argv)
    chosen = [name for name in _FLAGS if getattr(args, name)]
    if args.version:
        if chosen:
            parser.error("--version cannot be combined with other flags")
        print(__version__)
        return 0
    if not chosen:
        parser.print_help()
        return 0
    lines = []
    for name in chosen:
        try:
            lines.append(_FLAGS[name][0]())
        except RuntimeError as e:
            flag = "--" + name.replace("_", "-")
            print(f"{prog}: error: {flag}: {e}", file=sys.stderr)
            return 1
    for line in lines:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
