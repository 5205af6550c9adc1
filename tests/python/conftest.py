"""Fixtures for the core tests: compiling small test libraries against the repo's headers."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Callable

import pytest

REPO = Path(__file__).resolve().parents[2]
INCLUDE = REPO / "include"

BuildLibrary = Callable[..., Path]


@pytest.fixture(scope="session")
def build_library(tmp_path_factory: pytest.TempPathFactory) -> BuildLibrary:
    """``build_library(name, source, out=None, flags=())`` compiles C++ source text with
    ``c++ -shared -fPIC -std=c++17 -O2 -I include`` and returns the library's path.

    A compiler error fails the test (with the compiler's output): it is our code.
    """
    cxx = os.environ.get("CXX", "c++")
    if shutil.which(cxx) is None:
        pytest.skip(f"needs a C++ compiler ({cxx} not found)")
    root = tmp_path_factory.mktemp("libs")

    def build(name: str, source: str, out: Path | None = None, flags: Sequence[str] = ()) -> Path:
        src = root / f"{name}.cc"
        src.write_text(source)
        target = out if out is not None else root / f"lib{name}.so"
        cmd = [cxx, "-shared", "-fPIC", "-std=c++17", "-O2", f"-I{INCLUDE}", *flags]
        cmd += [str(src), "-o", str(target)]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            pytest.fail(f"compiling {name} failed:\n{' '.join(cmd)}\n{proc.stderr}")
        return target

    return build
