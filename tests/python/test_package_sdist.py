"""The sdist: it holds every file a build reads, and what pip builds from it installs into a
fresh virtual environment where examples/quickstart.py runs, from outside the tree.

The wheel is the one the ``release`` fixture builds from the sdist with pip (what
``pip install <sdist>`` does; built once for test_package.py's wheel checks too). The venv
sees the base environment's packages (``--system-site-packages``: torch, ninja, cuda
bindings where installed) and installs ours offline, without dependencies."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from helpers import package, tools

REPO = Path(__file__).resolve().parents[2]


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def test_sdist_holds_every_source_file(release):
    top = release.sdist.name.removesuffix(".tar.gz")
    with tarfile.open(release.sdist) as tf:
        names = {m.name.removeprefix(f"{top}/") for m in tf.getmembers() if m.isfile()}
        pkg_info = tf.extractfile(f"{top}/PKG-INFO").read().decode()
    assert set(package.TOP_FILES) <= names
    # The trees setup.py compiles or copies, whole: a file added to them ships without
    # anyone editing MANIFEST.in.
    for folder in ("src", "include", "cmake", "python/tvm_ffi"):
        shipped = {n.removeprefix(f"{folder}/") for n in names if n.startswith(f"{folder}/")}
        assert sorted(_files(release.src / folder) - shipped) == [], f"{folder}/ not shipped"
    assert "src/jit/ninja_launch.c" in names  # the JIT's ninja launcher builds from it
    assert "License-Expression: Apache-2.0" in pkg_info


def _venv_python(venv: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    return venv / "bin" / "python"


@pytest.mark.slow_compile
def test_sdist_installs_into_a_fresh_venv_and_runs_the_quickstart(release, tmp_path):
    if not tools.has_nvcc():
        pytest.skip("needs nvcc (the quickstart compiles its kernel and wrapper with CUDA)")
    python = _venv_python(tmp_path / "venv")
    # --ignore-installed: the venv sees the test environment's own install (CI's is a
    # regular one) and would otherwise call the requirement satisfied.
    install = [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index"]
    install.append("--ignore-installed")
    proc = subprocess.run([*install, str(release.wheel)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # Nothing of the tree or of the test run may reach the child: its own cwd, no PYTHONPATH.
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(REPO / "examples" / "quickstart.py", run / "quickstart.py")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TVM_FFI_CACHE_DIR"] = str(tmp_path / "cache")
    code = (
        "import tvm_ffi, tvm_ffi.config as c; print(tvm_ffi.__file__); print(c.get_include_dir())"
    )
    proc = subprocess.run([python, "-c", code], cwd=run, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    site = tmp_path / "venv" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    where, include = proc.stdout.splitlines()
    assert where == str(site / "site-packages" / "tvm_ffi" / "__init__.py")
    assert include == str(site / "site-packages" / "tvm_ffi" / "include")

    proc = subprocess.run(
        [python, "quickstart.py"], cwd=run, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 3, lines
    assert re.fullmatch(
        r"compiled add_one with (NVRTC|nvcc) for sm_\d+a?: \d+ bytes of CUBIN", lines[0]
    )
    assert lines[1] == "built and loaded the wrapper: add_one(Tensor, Tensor) -> None"
    assert lines[2].startswith(("launch skipped: ", "launched add_one on the GPU: ")), lines[2]
