"""benchmarks/abi_call_overhead.py runs in its short mode and prints its table (no timing is
asserted)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers import apache_wheel

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "abi_call_overhead.py"


def test_abi_call_overhead_prints_its_table(tmp_path: Path) -> None:
    apache_wheel.require_wheel()
    env = dict(os.environ, TVM_FFI_CACHE_DIR=str(tmp_path / "cache"))
    argv = [sys.executable, str(SCRIPT), "--samples", "2", "--iters", "10", "--rounds", "1"]
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == [
        "us",
        "per",
        "call",
        "(median)",
        "next",
        "next-ours",
        "apache",
        "today",
    ]
    assert [line[:24].strip() for line in lines[1:4]] == [
        "no-arg call",
        "3 CPU torch tensors",
        "3 ints",
    ]
    assert all(len(line.split()) >= 6 for line in lines[1:4])
