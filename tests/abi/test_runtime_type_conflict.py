"""Two apache-built libraries that register one type key with different object sizes (D6):
apache's runtime ends the process while loading the second; ours refuses the second library
with a TypeError naming the key, both libraries and both sizes, and the process goes on (the
first library, loaded again, still works)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from helpers import apache_wheel, next_runtime

HERE = Path(__file__).resolve().parent / "runtime"


@pytest.fixture(scope="module")
def built(tmp_path_factory, wheel):
    folder = tmp_path_factory.mktemp("conflict")
    source = HERE / "shared_type_lib.cc"
    first = apache_wheel.build_library(wheel, source, folder / "libfirst.so", "-DSHARED_PAD=1")
    second = apache_wheel.build_library(wheel, source, folder / "libsecond.so", "-DSHARED_PAD=2")
    driver = folder / "load_driver"
    cmd = ["cc", "-std=c11", "-Wall", "-Werror", "-I", str(next_runtime.INCLUDE)]
    cmd += [str(HERE / "load_driver.c"), "-L", str(apache_wheel.runtime_path(wheel).parent)]
    subprocess.run([*cmd, "-ltvm_ffi", "-o", str(driver)], check=True)
    return first, second, driver


def run(driver, runtime: Path, *libs: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, LD_LIBRARY_PATH=str(runtime.parent))
    args = [str(driver), *map(str, libs)]
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=60)


def test_ours_refuses_the_second_library(built):
    first, second, driver = built
    proc = run(driver, next_runtime.build(), first, second, first)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (
        f"load {first}: rc=0\n"
        f"load {second}: rc=-1\n"
        f"  TypeError: cannot load library '{second}': type key 'client.Shared' was registered "
        f"with 40-byte objects by '{first}'; '{second}' declares 48\n"
        f"load {first}: rc=0\n"
    )


def test_apache_ends_the_process(built, wheel):
    first, second, driver = built
    proc = run(driver, apache_wheel.runtime_path(wheel), first, second)
    assert proc.returncode != 0
    assert proc.stdout == f"load {first}: rc=0\n"
    assert "Overriding client.Shared" in proc.stderr
