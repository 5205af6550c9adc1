"""Each example in examples/cubin_launcher/ runs as a user would run it and reports OK."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "cubin_launcher"

# What each example needs beyond torch with CUDA, nvcc and the test extra (cuda-bindings is in
# it): packages that are truly optional.
NEEDS = {
    "example_nvrtc_cubin": [],
    "example_dynamic_cubin": [],
    "example_triton_cubin": ["triton"],
    "example_embedded_cubin": [],
}


def _missing(modules: list[str]) -> list[str]:
    out = []
    for name in modules:
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            out.append(name)
    return out


def test_every_example_is_listed():
    assert sorted(p.stem for p in EXAMPLES.glob("example_*.py")) == sorted(NEEDS)


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_example(name, tmp_path):
    missing = _missing(NEEDS[name])
    if missing:
        pytest.skip(f"{name} needs {', '.join(missing)}")
    import tvm_ffi

    env = dict(os.environ)
    env["TVM_FFI_CACHE_DIR"] = str(tmp_path / "cache")  # a cold build, as a new user gets
    # The example imports the same tvm_ffi as this test (installed or from a checkout).
    package_root = str(Path(tvm_ffi.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / f"{name}.py")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = f"--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}"
    assert proc.returncode == 0, output
    assert proc.stdout.strip().splitlines()[-1] == f"{name}: OK", output
