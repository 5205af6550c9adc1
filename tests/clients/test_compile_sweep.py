"""The host-side compile sweep (compile_sweep.py): every unit of FlashInfer 0.7.2.post1 and
sglang 0.5.23 that reaches a tvm/ffi header and compiles against apache-tvm-ffi's headers
compiles against ours. CI compiles the first 10 units of the sweep's spread; the whole sweep
(about 1300 units, each twice) runs with TVM_FFI_CLIENTS_SWEEP=1, or by itself with
``python tests/clients/compile_sweep.py``, which prints the summary line."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import client_env
import compile_sweep
import pytest

from helpers import apache_wheel

pytestmark = [pytest.mark.clients, pytest.mark.slow_compile]

SWEEP_ENV = "TVM_FFI_CLIENTS_SWEEP"
SAMPLE = 10


def test_units_apache_compiles_compile_here(tmp_path):
    cuda_bin = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin")
    if shutil.which("nvcc", path=cuda_bin) is None:
        pytest.skip("the sweep compiles .cu units with nvcc (set CUDA_HOME)")
    wheel = apache_wheel.find_wheel()
    if wheel is None:
        pytest.skip(f"no apache-tvm-ffi wheel (set {apache_wheel.WHEEL_ENV})")
    try:
        sources = compile_sweep.client_sources()
    except RuntimeError as missing:  # the client wheels are an input like the apache wheel
        pytest.skip(str(missing))
    units = compile_sweep.spread([u for folder in sources for u in compile_sweep.units(folder)])
    assert {u.client for u in units} == {"flashinfer", "sglang"}
    chosen = units if os.environ.get(SWEEP_ENV) == "1" else units[:SAMPLE]
    env = client_env.child_env(tmp_path, tmp_path)
    ours = Path(__file__).resolve().parents[2] / "include"
    apache = apache_wheel.unpacked(wheel) / "tvm_ffi" / "include"
    result = compile_sweep.sweep(chosen, ours, apache, env)
    print(result["summary"])
    behind = [f"{u.label}: {o.error}" for u, o, a in result["rows"] if a.ok and not o.ok]
    assert behind == []
