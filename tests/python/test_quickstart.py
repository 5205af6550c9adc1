"""examples/quickstart.py, the README's first command, runs on a machine like CI's: every step
but the launch without a GPU (saying in its last line why), all of it with one. It finds nvcc
where the package's own builds find it, and says what that search says when there is none."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import tools

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart.py"
LAUNCH_LINE = "launched add_one on the GPU: y == x + 1"
NO_TORCH_LINE = (
    "launch skipped: torch is not installed (the launch takes its GPU memory from torch)"
)
# A None entry in sys.modules makes `import cuda...` fail: the nvcc route a user without the
# bindings takes.
NO_NVRTC = "import sys; sys.modules['cuda'] = None; "

pytestmark = pytest.mark.skipif(
    not tools.has_nvcc(), reason="needs nvcc (the wrapper is built with the CUDA headers)"
)


def _last_line() -> str:
    """The quickstart's last line in this environment."""
    if importlib.util.find_spec("torch") is None:
        return NO_TORCH_LINE
    import torch

    if torch.version.cuda is None:
        return (
            f"launch skipped: torch {torch.__version__} is a CPU-only build (the launch needs CUDA)"
        )
    if not torch.cuda.is_available():
        return "launch skipped: no CUDA GPU visible to torch (the launch needs both)"
    return LAUNCH_LINE


def _run(prelude: str, tmp_path: Path, **env_vars: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, TVM_FFI_CACHE_DIR=str(tmp_path / "cache"), **env_vars)
    code = f"{prelude}import runpy; runpy.run_path({str(QUICKSTART)!r}, run_name='__main__')"
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )


def _lines(proc: subprocess.CompletedProcess) -> list[str]:
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout.splitlines()


@pytest.mark.parametrize("compiler", ["NVRTC", "nvcc"])
def test_quickstart(compiler, tmp_path):
    lines = _lines(_run(NO_NVRTC if compiler == "nvcc" else "", tmp_path))
    gpu = _last_line() == LAUNCH_LINE
    arch = r"sm_\d+" if gpu else "sm_80"
    assert len(lines) == 3, lines
    assert re.fullmatch(
        rf"compiled add_one with {compiler} for {arch}: \d+ bytes of CUBIN", lines[0]
    ), lines[0]
    assert lines[1] == "built and loaded the wrapper: add_one(Tensor, Tensor) -> None"
    assert lines[2] == _last_line()


def test_quickstart_without_torch_says_torch_is_not_installed(tmp_path):
    """Issue 30, item 6: it once blamed a GPU that torch did not see."""
    lines = _lines(_run("import sys; sys.modules['torch'] = None; ", tmp_path))
    assert lines[-1] == NO_TORCH_LINE


def test_quickstart_uses_the_packages_nvcc(tmp_path, monkeypatch):
    """Issue 30, item 6: the quickstart had its own search (CUDA_HOME, PATH,
    /usr/local/cuda), which missed the nvcc the package finds (pip's CUDA wheels, CUDA_PATH)
    and reported `nvcc not found`. Here CUDA_PATH names a toolkit whose nvcc leaves a trace."""
    from tvm_ffi.cpp._toolchain import find_cuda_home

    real = find_cuda_home().resolve()
    root = tmp_path / "cuda"
    (root / "bin").mkdir(parents=True)
    for entry in real.iterdir():
        if entry.name != "bin":
            (root / entry.name).symlink_to(entry)
    for tool in (real / "bin").iterdir():
        if tool.name != "nvcc":
            (root / "bin" / tool.name).symlink_to(tool)
    trace = tmp_path / "nvcc_calls"
    nvcc = root / "bin" / "nvcc"
    nvcc.write_text(f'#!/bin/sh\necho "$*" >> "{trace}"\nexec "{real}/bin/nvcc" "$@"\n')
    nvcc.chmod(0o755)
    monkeypatch.delenv("CUDA_HOME", raising=False)
    lines = _lines(_run(NO_NVRTC, tmp_path, CUDA_PATH=str(root)))
    assert re.fullmatch(r"compiled add_one with nvcc for sm_\d+: \d+ bytes of CUBIN", lines[0])
    # The kernel's compile (load_inline's own nvcc calls come from the same search).
    assert any(call.startswith("--cubin -arch=sm_") for call in trace.read_text().splitlines())


def test_quickstart_without_nvcc_says_what_the_package_searched(tmp_path, monkeypatch):
    from tvm_ffi import _cuda_toolkit
    from tvm_ffi.cpp._toolchain import find_cuda_tool

    empty = tmp_path / "no_cuda"
    empty.mkdir()
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.setenv("CUDA_PATH", str(empty))
    try:
        with pytest.raises(RuntimeError) as info:
            find_cuda_tool("nvcc")
    finally:
        _cuda_toolkit._search.cache_clear()
    proc = _run(NO_NVRTC, tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [f"quickstart: {info.value}"]
