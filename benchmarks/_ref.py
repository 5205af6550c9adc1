"""apache-tvm-ffi beside this project, and the subprocess worker protocol both use.

apache-tvm-ffi installs the same import name, ``tvm_ffi``, as this project, so it can never be
imported in the benchmark's own process: its rows run in a subprocess whose PYTHONPATH starts at
its unpacked wheel. The same protocol runs this project in fresh processes (cold builds): the
worker prints one marked JSON line, the parent parses it or turns the failure into a reason.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

from _common import BENCH_DIR, REPO_ROOT

RESULT_MARKER = "@@TVM_FFI_BENCH_RESULT@@ "


def default_ref_wheel() -> Path | None:
    found = sorted((REPO_ROOT / ".whl").glob("apache_tvm_ffi-*.whl"))
    return found[-1] if found else None


def resolve_ref(args: argparse.Namespace) -> tuple[str | None, str]:
    """(directory to put first on PYTHONPATH, description) or (None, reason it is n/a).

    apache-tvm-ffi installs the same import name ``tvm_ffi`` as this project, so it can never be
    imported in the benchmark's own process: its rows always run in a subprocess.
    """
    if getattr(args, "no_ref", False):
        return None, "skipped (--no-ref)"
    if args.ref_path:
        path = Path(args.ref_path)
        if not (path / "tvm_ffi" / "__init__.py").is_file():
            return None, f"--ref-path {path} has no tvm_ffi/__init__.py"
        return str(path.resolve()), f"apache-tvm-ffi from {path}"
    wheel = Path(args.ref_wheel) if args.ref_wheel else default_ref_wheel()
    if wheel is None:
        return None, "no apache-tvm-ffi wheel (pass --ref-wheel or --ref-path)"
    if not wheel.is_file():
        return None, f"wheel {wheel} not found"
    mismatch = wheel_python_mismatch(wheel.name)
    if mismatch:
        return None, mismatch
    return unpack_wheel(wheel), f"{wheel.name}"


def wheel_python_mismatch(filename: str) -> str | None:
    """Why a wheel cannot run on this interpreter, or None.

    An extension built for another CPython fails deep in its own import (a circular-import
    error from the half-initialised package), so the tag is checked before any worker starts.
    """
    parts = filename[: -len(".whl")].split("-") if filename.endswith(".whl") else []
    if len(parts) < 5:  # name-version[-build]-python-abi-platform
        return None
    tags = parts[-3].split(".")
    here = f"cp{sys.version_info.major}{sys.version_info.minor}"
    cpython = [t for t in tags if re.fullmatch(r"cp3\d+", t)]
    if not cpython or here in tags:
        return None
    if parts[-2] == "abi3" and any(int(t[3:]) <= sys.version_info.minor for t in cpython):
        return None  # the stable ABI: built for that CPython or an earlier one
    return f"built for {', '.join(cpython)}, this interpreter is {here}: wheel {filename}"


@functools.cache
def unpack_wheel(wheel: Path) -> str:
    """Unpack a wheel (a zip file) into a fresh temp dir and return that dir."""
    target = tempfile.mkdtemp(prefix="tvm_ffi_ref_")
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(target)
    return target


def worker_env(impl: str, ref_dir: str | None, extra: dict | None = None) -> dict:
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    if impl == "ref":
        if ref_dir is None:
            raise ValueError("the ref worker needs the unpacked apache-tvm-ffi directory")
        env["PYTHONPATH"] = os.pathsep.join(p for p in (ref_dir, env.get("PYTHONPATH")) if p)
        env["TVM_FFI_BENCH_REF_DIR"] = ref_dir
    if extra:
        env.update(extra)
    return env


def run_worker(
    script: str,
    worker_args: Sequence[str],
    *,
    impl: str,
    ref_dir: str | None = None,
    extra_env: dict | None = None,
    timeout: float = 600,
) -> dict:
    """Run ``python benchmarks/<script> --worker ...`` and return the JSON it prints.

    Raises RuntimeError with the worker's last error line when it fails, so the caller can turn
    that into an n/a row.
    """
    cmd = [sys.executable, str(BENCH_DIR / script), "--worker", impl, *worker_args]
    env = worker_env(impl, ref_dir, extra_env)
    # cwd outside the repository so that no stray ./tvm_ffi shadows the package under test.
    proc = subprocess.run(
        cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=tempfile.gettempdir()
    )
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(RESULT_MARKER):
            return json.loads(line[len(RESULT_MARKER) :])
    reason = failure_reason(proc.stderr + "\n" + proc.stdout)
    raise RuntimeError(f"{impl} worker exited {proc.returncode}: {reason}")


_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit)\b.*")
_NOISE = ("Traceback", "ninja: build stopped", "collect2:", "File ")


def failure_reason(output: str) -> str:
    """The Python exception of a failed process, plus the first compiler/linker error line
    above it (a build error's exception alone, "ninja exited with status 1", says little)."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    if not lines:
        return "no output"
    exc = next((ln for ln in reversed(lines) if _EXCEPTION_LINE.match(ln)), None)
    detail = next(
        (
            ln
            for ln in lines
            if re.search(r"error|cannot|undefined reference", ln, re.IGNORECASE)
            and not _EXCEPTION_LINE.match(ln)
            and not ln.startswith(_NOISE)
        ),
        None,
    )
    if exc and detail:
        return f"{exc} | {detail}"
    return exc or detail or lines[-1]


def emit_result(payload: dict) -> None:
    """Worker side of run_worker: one marked JSON line on stdout."""
    print(RESULT_MARKER + json.dumps(payload, default=str), flush=True)


def import_impl(impl: str):
    """Import tvm_ffi in a worker and check it is the implementation that was asked for."""
    import tvm_ffi

    location = Path(tvm_ffi.__file__).resolve()
    ref_dir = os.environ.get("TVM_FFI_BENCH_REF_DIR")
    # apache-tvm-ffi's compiled core is tvm_ffi/core.*.so; this project's is tvm_ffi/_core.*.so.
    looks_ref = any(location.parent.glob("core.*.so"))
    in_ref_dir = ref_dir is not None and str(location).startswith(str(Path(ref_dir).resolve()))
    if impl == "ref" and not in_ref_dir:
        raise RuntimeError(f"asked for apache-tvm-ffi from {ref_dir} but imported {location}")
    if impl == "ours" and (looks_ref or in_ref_dir):
        raise RuntimeError(
            f"asked for this project's tvm_ffi but imported apache-tvm-ffi at {location}"
        )
    return tvm_ffi


def import_cpp():
    """tvm_ffi.cpp of whichever tvm_ffi import_impl() imported."""
    return importlib.import_module("tvm_ffi.cpp")


def impl_version(tvm_ffi) -> str:
    return str(getattr(tvm_ffi, "__version__", "?"))
