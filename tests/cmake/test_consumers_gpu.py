"""The example consumer projects, built for this machine's GPU and run: the C++-only
program, the program that loads its image from a file, and the Python script that
calls the library with the embedded image. Each checks its own results and says OK."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "cubin_launcher"
# The GPU this runs on is the one to build for (nvcc -arch=native).
ARCH = "native"


def _run(cmd: list[str], **kwargs) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kwargs)
    assert proc.returncode == 0, (
        f"{' '.join(cmd)} exited with {proc.returncode}\n"
        f"--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}"
    )
    return proc.stdout


@pytest.mark.parametrize("mode", ["source", "installed"])
def test_cpp_only_runs(mode, built):
    build = built(EXAMPLES / "cpp_only", mode, arch=ARCH)
    assert _run([str(build / "cpp_only")]) == "cpp_only: OK (1048576 elements)\n"


def test_cpp_only_runs_a_fatbin(built):
    build = built(EXAMPLES / "cpp_only", "source", arch="sm_80;sm_90")
    assert _run([str(build / "cpp_only")]) == "cpp_only: OK (1048576 elements)\n"


def test_dynamic_cubin_runs(built):
    build = built(EXAMPLES / "dynamic_cubin", "source", arch=ARCH)
    out = _run([str(build / "dynamic_cubin"), str(build / "scale_add.cubin")])
    assert out == "dynamic_cubin: OK (1000003 elements)\n"


def test_embedded_cubin_python_script_runs(built):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch was built without CUDA")
    import tvm_ffi

    build = built(EXAMPLES / "embedded_cubin", "source", arch=ARCH)
    env = dict(os.environ)
    # The script imports the same tvm_ffi as this test (installed or from a checkout).
    package_root = str(Path(tvm_ffi.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    script = EXAMPLES / "embedded_cubin" / "run.py"
    out = _run([sys.executable, str(script), str(build / "libadd_one.so")], env=env)
    assert out == "embedded_cubin: OK (1000003 elements)\n"
