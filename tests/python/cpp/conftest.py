"""Fixtures for the JIT tests: a private cache per test, and compiler scripts as $CXX."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Callable

import pytest


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets a fresh, private cache, the default build settings (output, lock
    timeout, job count) whatever the environment running the tests sets."""
    path = tmp_path / "cache"
    monkeypatch.setenv("TVM_FFI_CACHE_DIR", str(path))
    monkeypatch.delenv("TVM_FFI_BUILD_VERBOSE", raising=False)
    monkeypatch.delenv("TVM_FFI_BUILD_QUIET", raising=False)
    monkeypatch.delenv("TVM_FFI_BUILD_JOB_MEMORY", raising=False)
    monkeypatch.delenv("TVM_FFI_BUILD_LOCK_TIMEOUT", raising=False)
    monkeypatch.delenv("TVM_FFI_COMPILER_LAUNCHER", raising=False)
    monkeypatch.delenv("TVM_FFI_LINKER", raising=False)
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


@pytest.fixture
def fake_nvcc(tmp_path, monkeypatch):
    """A CUDA_HOME whose nvcc records its arguments (one JSON list a line) and compiles an
    empty object; headers and libcudart are the real toolkit's. Returns the log path."""
    real = Path(os.environ.get("CUDA_HOME") or "/usr/local/cuda")
    lib = next((real / sub for sub in ("lib64", "lib") if (real / sub).is_dir()), None)
    if not (real / "include" / "cuda_runtime.h").is_file() or lib is None:
        pytest.skip("needs the CUDA headers and libcudart (CUDA_HOME or /usr/local/cuda)")
    home = tmp_path / "cuda"
    (home / "bin").mkdir(parents=True)
    (home / "include").symlink_to(real / "include")
    (home / "nvvm").symlink_to(real / "nvvm")  # a toolkit's nvcc has its device compiler
    (home / lib.name).symlink_to(lib)
    log = tmp_path / "nvcc.log"
    log.touch()
    nvcc = home / "bin" / "nvcc"
    nvcc.write_text(
        f"#!{sys.executable}\n"
        "import json, subprocess, sys\n"
        "args = sys.argv[1:]\n"
        "if args == ['--version']: sys.exit(print('fake nvcc'))\n"
        f"with open({str(log)!r}, 'a') as f: f.write(json.dumps(args) + '\\n')\n"
        "out, dep = args[args.index('-o') + 1], args[args.index('-MF') + 1]\n"
        "open(dep, 'w').write(out + ':\\n')\n"
        "subprocess.run(['c++', '-x', 'c++', '-c', '/dev/null', '-o', out], check=True)\n"
    )
    nvcc.chmod(0o755)
    monkeypatch.setenv("CUDA_HOME", str(home))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.delenv("TVM_FFI_CUDA_ARCH_LIST", raising=False)
    return log
