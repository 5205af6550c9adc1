"""examples/quickstart.py, the README's first command, runs on a machine like CI's: every step
but the launch without a GPU (saying so in its last line), all of it with one."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart.py"
SKIP_LINE = "launch skipped: no CUDA GPU visible to torch (the launch needs both)"
LAUNCH_LINE = "launched add_one on the GPU: y == x + 1"


def _has_nvcc() -> bool:
    home = os.environ.get("CUDA_HOME", "")
    candidates = [os.path.join(home, "bin", "nvcc"), shutil.which("nvcc") or ""]
    return any(os.path.isfile(p) for p in [*candidates, "/usr/local/cuda/bin/nvcc"])


def _torch_sees_gpu() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return torch.cuda.is_available()


def _run(prelude: str, tmp_path: Path) -> list[str]:
    env = dict(os.environ, TVM_FFI_CACHE_DIR=str(tmp_path / "cache"))
    code = f"{prelude}import runpy; runpy.run_path({str(QUICKSTART)!r}, run_name='__main__')"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout.splitlines()


@pytest.mark.skipif(not _has_nvcc(), reason="needs nvcc (the wrapper is built with it)")
@pytest.mark.parametrize("compiler", ["NVRTC", "nvcc"])
def test_quickstart(compiler, tmp_path):
    # A None entry in sys.modules makes `import cuda...` fail: the nvcc route a user without
    # the bindings takes.
    prelude = "import sys; sys.modules['cuda'] = None; " if compiler == "nvcc" else ""
    lines = _run(prelude, tmp_path)
    gpu = _torch_sees_gpu()
    arch = r"sm_\d+" if gpu else "sm_80"
    assert len(lines) == 3, lines
    assert re.fullmatch(
        rf"compiled add_one with {compiler} for {arch}: \d+ bytes of CUBIN", lines[0]
    ), lines[0]
    assert lines[1] == "built and loaded the wrapper: add_one(Tensor, Tensor) -> None"
    assert lines[2] == (LAUNCH_LINE if gpu else SKIP_LINE)
