"""Fixtures for the JIT tests: a private cache per test, and compiler scripts as $CXX."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets a fresh, private cache, quiet builds and the default lock timeout,
    whatever the environment running the tests sets."""
    path = tmp_path / "cache"
    monkeypatch.setenv("TVM_FFI_CACHE_DIR", str(path))
    monkeypatch.delenv("TVM_FFI_BUILD_VERBOSE", raising=False)
    monkeypatch.delenv("TVM_FFI_BUILD_LOCK_TIMEOUT", raising=False)
    monkeypatch.delenv("TVM_FFI_COMPILER_LAUNCHER", raising=False)
    monkeypatch.delenv("MAX_JOBS", raising=False)
    return path


@pytest.fixture
def install_cxx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str, str], Path]:
    """``install_cxx(name, script)`` writes the shell script as ``tmp_path/bin/<name>``, makes
    it $CXX and points $JIT_LOG at a new empty log, whose path it returns."""

    def install(name: str, script: str) -> Path:
        path = tmp_path / "bin" / name
        path.parent.mkdir()
        path.write_text(script)
        path.chmod(0o755)
        log = tmp_path / "compiler.log"
        log.touch()
        monkeypatch.setenv("CXX", str(path))
        monkeypatch.setenv("JIT_LOG", str(log))
        return log

    return install
