"""The C ABI's layout (staging/include/tvm/ffi/c_api.h): every size, offset and enum value that
inline code on the other side of the boundary reads, compiled as C and as C++, equals the
recorded facts (abi_layout_facts.txt), and so do apache-tvm-ffi 0.1.15.post2's own headers
(its wheel fetched by tests/helpers/apache_wheel.py).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from helpers import apache_wheel

HERE = Path(__file__).resolve().parent
STAGING = HERE.parents[1] / "include"
PROBE = HERE / "abi_layout_probe.c"
FACTS = (HERE / "abi_layout_facts.txt").read_text()


def probe(tmp_path: Path, include: Path, *compiler: str) -> str:
    exe = tmp_path / f"probe_{compiler[0].replace('+', 'x')}"
    cmd = [*compiler, "-I", str(include), str(PROBE), "-o", str(exe)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr}"
    return subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize(
    "compiler",
    [
        (os.environ.get("CC", "cc"), "-std=c11"),
        (os.environ.get("CXX", "c++"), "-x", "c++", "-std=c++17"),
    ],
    ids=["c", "c++"],
)
def test_layout_matches_the_recorded_facts(tmp_path, compiler):
    assert probe(tmp_path, STAGING, *compiler) == FACTS


def test_recorded_facts_match_apache_headers(tmp_path):
    wheel = apache_wheel.fetch_wheel()
    if wheel is None:
        pytest.skip(f"no apache-tvm-ffi wheel and no network (set {apache_wheel.WHEEL_ENV})")
    include = apache_wheel.unpacked(wheel) / "tvm_ffi" / "include"
    assert probe(tmp_path, include, os.environ.get("CC", "cc"), "-std=c11") == FACTS
