"""tools/abi_evidence: a wheel cut in two for two carries comes back whole or not at all, a
missing wheel names the folder to carry, and jax-tvm-ffi's prebuilt library runs here."""

from __future__ import annotations

import glob
import os
import subprocess
import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "tools" / "abi_evidence"
NAME = "demo-1.0-py3-none-any.whl"


def _split(tmp_path: Path, data: bytes) -> Path:
    """split_wheel.sh on a file of ``data``; the parts and the sha256 staged as a call would."""
    src = tmp_path / "src" / NAME
    src.parent.mkdir()
    src.write_bytes(data)
    dest = tmp_path / "cute"
    env = {**os.environ, "SPLIT_DEST": str(dest)}
    subprocess.run(
        ["bash", str(TOOLS / "split_wheel.sh"), str(src)], env=env, check=True, capture_output=True
    )
    wheels = tmp_path / "root" / "wheels"
    wheels.mkdir(parents=True)
    for part in dest.glob("part*/*"):
        (wheels / part.name).write_bytes(part.read_bytes())
    return wheels


def _join(tmp_path: Path) -> subprocess.CompletedProcess:
    script = f'source "{TOOLS / "common.sh"}"; join_parts {NAME} .client-wheels/cute'
    env = {**os.environ, "EVID_ROOT": str(tmp_path / "root"), "EVID_NAME": "demo"}
    return subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True)


def test_split_then_join_gives_the_wheel_back(tmp_path: Path) -> None:
    data = os.urandom(1001)  # odd: the halves differ in size
    wheels = _split(tmp_path, data)
    assert sorted(p.name for p in wheels.iterdir()) == [
        f"{NAME}.part1",
        f"{NAME}.part2",
        f"{NAME}.sha256",
    ]
    assert (wheels / f"{NAME}.part1").stat().st_size == 501
    proc = _join(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (wheels / NAME).read_bytes() == data
    assert proc.stdout.startswith(f"joined {NAME} (sha256 ")


def test_a_corrupt_part_leaves_no_wheel(tmp_path: Path) -> None:
    wheels = _split(tmp_path, os.urandom(1000))
    part2 = wheels / f"{NAME}.part2"
    part2.write_bytes(b"x" + part2.read_bytes()[1:])
    proc = _join(tmp_path)
    assert proc.returncode == 1
    want = (wheels / f"{NAME}.sha256").read_text().split()[0]
    assert f"expected {want})" in proc.stdout
    assert proc.stdout.startswith(f"SUMMARY demo: FAIL (joined {NAME}: sha256 ")
    assert not (wheels / NAME).exists() and not (wheels / f"{NAME}.partial").exists()


def test_a_missing_part_names_the_folder_to_carry(tmp_path: Path) -> None:
    wheels = _split(tmp_path, os.urandom(10))
    (wheels / f"{NAME}.part2").unlink()
    proc = _join(tmp_path)
    assert proc.returncode == 1
    assert proc.stdout == (
        f"SUMMARY demo: FAIL (no wheel {NAME}.part2 in {wheels}: carry .client-wheels/cute/part2 "
        "in this call (or in the call just before, machine still warm))\n"
    )


def test_jax_tvm_ffi_prebuilt_library_runs_here() -> None:
    wheels = glob.glob("/tmp/abi_wheels/jax_tvm_ffi-0.1.3-*.whl")
    if not wheels:
        pytest.skip("no jax_tvm_ffi-0.1.3 wheel in /tmp/abi_wheels (the GPU run carries it)")
    proc = subprocess.run(
        [sys.executable, str(TOOLS / "jax_tvm_ffi_load.py"), wheels[0]],
        capture_output=True,
        text=True,
    )
    assert proc.stdout.splitlines()[-1] == "SUMMARY jax-tvm-ffi load: PASS (7/7 checks)", (
        proc.stdout + proc.stderr
    )
