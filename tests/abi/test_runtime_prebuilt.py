"""A client library nobody here built: jax-tvm-ffi 0.1.3's jax_tvm_ffi.so (built by its
project against apache-tvm-ffi, no RPATH: it finds libtvm_ffi.so only because the runtime is
already loaded) loads in our runtime and its CPU-side functions answer as in apache's."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from helpers import apache_wheel, next_runtime

HERE = Path(__file__).resolve().parent / "runtime"
JAX_TVM_FFI = "jax-tvm-ffi==0.1.3"


def jax_tvm_ffi_library(folder: Path) -> Path | None:
    """jax_tvm_ffi.so from the wheel, downloaded once into the user's cache (None offline)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tvm-ffi-tests"
    found = sorted(cache.glob("jax_tvm_ffi-0.1.3-*.whl"))
    if not found:
        cache.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q"]
        try:
            subprocess.run(
                [*cmd, "--dest", str(cache), JAX_TVM_FFI],
                capture_output=True,
                timeout=120,
                check=True,
            )
        except (subprocess.SubprocessError, OSError):
            return None
        found = sorted(cache.glob("jax_tvm_ffi-0.1.3-*.whl"))
    if not found:
        return None
    with zipfile.ZipFile(found[0]) as zf:
        zf.extract("jax_tvm_ffi/jax_tvm_ffi.so", folder)
    return folder / "jax_tvm_ffi" / "jax_tvm_ffi.so"


def test_jax_tvm_ffi_loads_and_answers(tmp_path):
    wheel = apache_wheel.fetch_wheel()
    lib = jax_tvm_ffi_library(tmp_path)
    if wheel is None or lib is None:
        pytest.skip("the apache-tvm-ffi or jax-tvm-ffi wheel cannot be had (offline)")
    driver = tmp_path / "load_driver"
    cmd = ["cc", "-std=c11", "-Wall", "-Werror", "-I", str(next_runtime.INCLUDE)]
    cmd += [str(HERE / "load_driver.c"), "-L", str(apache_wheel.runtime_path(wheel).parent)]
    subprocess.run([*cmd, "-ltvm_ffi", "-o", str(driver)], check=True)
    args = [str(driver), str(lib), "call=registered_count", "call=get_last_workspace_peak"]
    outputs = []
    for runtime in (next_runtime.build(), apache_wheel.runtime_path(wheel)):
        env = dict(os.environ, LD_LIBRARY_PATH=str(runtime.parent))
        proc = subprocess.run(args, capture_output=True, text=True, env=env, timeout=60)
        assert proc.returncode == 0, proc.stderr
        outputs.append(proc.stdout)
    assert outputs[0] == outputs[1]
    assert outputs[0].startswith(f"load {lib}: rc=0\ncall registered_count: rc=0 int 0\n")
