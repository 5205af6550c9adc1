"""The new runtime's C functions, driven from C (tests/abi/runtime/c_api_driver.c, which uses
only c_api.h): the driver's output with our libtvm_ffi.so equals its output with
apache-tvm-ffi 0.1.15.post2's, and the checks where ours deliberately differs (ours_only.h)
print exactly what is written here."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from helpers import apache_wheel, next_runtime

HERE = Path(__file__).resolve().parent / "runtime"
INCLUDE = next_runtime.INCLUDE


@pytest.fixture(scope="module")
def driver(tmp_path_factory, wheel) -> Path:
    out = tmp_path_factory.mktemp("c_api") / "c_api_driver"
    apache_lib = apache_wheel.runtime_path(wheel).parent
    cmd = ["cc", "-std=c11", "-Wall", "-Werror", "-I", str(INCLUDE), str(HERE / "c_api_driver.c")]
    cmd += ["-L", str(apache_lib), "-ltvm_ffi", "-ldl", "-lpthread", "-o", str(out)]
    subprocess.run(cmd, check=True)
    return out


def run_with(runtime_dir: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, LD_LIBRARY_PATH=str(runtime_dir))
    proc = subprocess.run(args, capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_same_output_as_apache_runtime(driver, wheel):
    ours = run_with(next_runtime.build().parent, str(driver))
    apache = run_with(apache_wheel.runtime_path(wheel).parent, str(driver))
    # Each run used the runtime it was given, not whichever was found first.
    assert ours.stderr == f"runtime: {next_runtime.build()}\n"
    assert apache.stderr == f"runtime: {apache_wheel.runtime_path(wheel)}\n"
    assert ours.stdout == apache.stdout
    assert "version 0.1.16\n" in ours.stdout
    assert "last strong with a weak: deleted=1 count=100000000\n" in ours.stdout
    assert "view released: deleted=2\n" in ours.stdout


#: What ours_only.h prints; {A} is the first dynamic type index, {driver} the driver's path.
OURS_ONLY = (HERE / "ours_only.expected").read_text()


def test_where_ours_differs(driver):
    out = run_with(next_runtime.build().parent, str(driver), "ours").stdout
    _, ours = out.split("-- ours\n")
    assert ours == OURS_ONLY.format(A=128, driver=driver)
