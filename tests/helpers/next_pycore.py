"""Builds the Python core on the tvm-ffi C ABI (staging/python_core) as the module
``_core_next``, linked with ``-ltvm_ffi`` against a given runtime folder.

The module never sits beside the installed ``tvm_ffi``: tests import it in a child Python that
has loaded the runtime first (``child_prelude``), so the child's ``libtvm_ffi.so`` is the one
asked for and the parent's package is untouched. Builds are cached per process (and on disk by a
digest of the sources, flags and runtime), written to a temporary name and renamed, so an
interrupted build never leaves a module behind.
"""

from __future__ import annotations

import functools
import hashlib
import os
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from helpers import cxx_runtime

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "src" / "python" / "core"
CUDA_SOURCES = ROOT / "src" / "python" / "cuda"  # tvm_ffi.cuda, registered by the core's init
INCLUDE = ROOT / "include"
FLAGS = (
    "-DTVM_FFI_PYCORE_NAME=_core_next",
    "-std=c++17",
    "-O3",
    "-fPIC",
    "-shared",
    "-fvisibility=hidden",
    "-Wall",
    "-Werror",
)


def _command(runtime_dir: Path, output: Path) -> list[str]:
    import pybind11

    cxx = os.environ.get("CXX", "c++")
    # setup.py's include folders for _core: cuda_decls' cuda.h stands in for the toolkit's.
    cmd = [cxx, *FLAGS, "-I", str(ROOT / "src" / "python" / "cuda_decls")]
    cmd += ["-I", str(ROOT / "src" / "python"), "-I", str(INCLUDE), "-I", pybind11.get_include()]
    cmd += ["-I", sysconfig.get_paths()["include"]]
    cmd += sorted(str(p) for p in [*SOURCES.glob("*.cc"), *CUDA_SOURCES.glob("*.cc")])
    cmd += ["-L", str(runtime_dir), "-ltvm_ffi", "-o", str(output)]
    # Linked as setup.py links _core: static archives private, and its version script (for
    # this module's init name), which keeps inline functions' unique symbols unexported.
    core_map = (SOURCES / "_core.map").read_text().replace("PyInit__core;", "PyInit__core_next;")
    map_path = output.with_name(output.name + ".map")
    map_path.write_text(core_map)
    return [*cmd, "-Wl,--exclude-libs,ALL", f"-Wl,--version-script={map_path}"]


def _digest(runtime_dir: Path) -> str:
    h = hashlib.sha256()
    headers = [*sorted(INCLUDE.rglob("*.h")), ROOT / "src" / "lib" / "frame_api.h"]
    for path in sorted([*SOURCES.glob("*"), *CUDA_SOURCES.glob("*")]) + headers:
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    lib = runtime_dir / "libtvm_ffi.so"
    h.update(str(lib.resolve()).encode() + str(lib.stat().st_mtime_ns).encode())
    h.update(" ".join(FLAGS).encode() + os.environ.get("CXX", "c++").encode())
    return h.hexdigest()[:16]


@functools.cache
def build(runtime_dir: Path) -> Path:
    """The folder holding ``_core_next`` built against ``runtime_dir/libtvm_ffi.so``."""
    runtime_dir = Path(runtime_dir)
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tvm-ffi-tests"
    folder = cache / "pycore" / _digest(runtime_dir)
    name = "_core_next" + sysconfig.get_config_var("EXT_SUFFIX")
    target = folder / name
    if target.exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".so.tmp")
    os.close(fd)
    try:
        proc = subprocess.run(_command(runtime_dir, Path(tmp)), capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"building _core_next failed:\n{proc.stderr}")
        cxx_runtime.check(Path(tmp), f"_core_next (for {target})")  # before it is cached
        os.replace(tmp, target)
    finally:
        for leftover in (tmp, tmp + ".map"):
            if os.path.exists(leftover):
                os.unlink(leftover)
    return folder


def child_prelude(runtime: Path, core_dir: Path) -> str:
    """Python source that loads the runtime globally, then imports ``_core_next`` as ``core``."""
    return (
        "import ctypes, sys\n"
        f"ctypes.CDLL({str(runtime)!r}, mode=ctypes.RTLD_GLOBAL)\n"
        f"sys.path.insert(0, {str(core_dir)!r})\n"
        "import _core_next as core\n"
    )


def run_child(runtime: Path, core_dir: Path, code: str, timeout: float = 120) -> str:
    """Runs ``code`` after the prelude in a fresh Python; its stdout, or AssertionError with
    the child's output when it fails."""
    script = child_prelude(runtime, core_dir) + code
    # From a file, so that a failing assert's traceback shows its line.
    with tempfile.NamedTemporaryFile("w", suffix=".py", prefix="pycore-child-") as f:
        f.write(script)
        f.flush()
        proc = subprocess.run(
            [sys.executable, f.name], capture_output=True, text=True, timeout=timeout
        )
    if proc.returncode != 0:
        raise AssertionError(f"child failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


# Helpers every child script gets: exact-message checks.
CHILD_HELPERS = """
def raises(exc, message, fn, *args):
    try:
        fn(*args)
    except exc as e:
        assert str(e) == message, f"{type(e).__name__}: {str(e)!r} != {message!r}"
        return e
    raise AssertionError(f"expected {exc.__name__}: {message}")
"""


#: The runtimes the core is tested on: apache-tvm-ffi's libtvm_ffi.so and ours (staging/runtime).
RUNTIMES = ("apache", "ours")


@functools.cache
def _libraries() -> tuple[Path, Path] | None:
    """The test library built as apache's clients build theirs (its DT_NEEDED libtvm_ffi.so is
    whichever runtime the child loaded first) and a C library of raw safe calls; None without
    the wheel."""
    import atexit
    import shutil

    from helpers import apache_wheel

    wheel = apache_wheel.fetch_wheel()
    if wheel is None:
        return None
    out = Path(tempfile.mkdtemp(prefix="pycore-libs-"))
    atexit.register(shutil.rmtree, out, True)
    sources = ROOT / "tests" / "abi" / "pycore"
    lib = apache_wheel.build_library(wheel, sources / "echo_lib.cc", out / "libpycore_echo.so")
    raw = out / "libpycore_raw.so"
    cc = os.environ.get("CC", "cc")
    cmd = [cc, "-O1", "-fPIC", "-shared", "-I", str(INCLUDE), str(sources / "raw_calls.c")]
    proc = subprocess.run([*cmd, "-o", str(raw)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}\n{proc.stderr}")
    return lib, raw


@functools.cache
def setup(runtime_name: str) -> tuple[Path, Path, Path, Path] | None:
    """(the runtime named "apache" or "ours", the folder of ``_core_next`` built against it, the
    test library, the raw safe-call library), or None without apache's wheel."""
    from helpers import apache_wheel, next_runtime

    if runtime_name not in RUNTIMES:
        raise ValueError(f"runtime must be one of {RUNTIMES} (got {runtime_name!r})")
    libs = _libraries()
    if libs is None:
        return None
    if runtime_name == "apache":
        wheel = apache_wheel.fetch_wheel()
        assert wheel is not None
        runtime = apache_wheel.runtime_path(wheel)
    else:
        runtime = next_runtime.build()
    return runtime, build(runtime.parent), *libs


def run_core_child(runtime_name: str, code: str, timeout: float = 120) -> str:
    """Runs ``code`` in a child on the named runtime, with ``core`` (_core_next), ``RUNTIME``
    ("apache" or "ours"), ``LIB`` (the echo library's path), ``RAW`` (the raw safe-call
    library's path) and ``raises``."""
    import pytest

    found = setup(runtime_name)
    if found is None:
        pytest.skip("apache-tvm-ffi's wheel cannot be had (no network, no cached wheel)")
    runtime, core, lib, raw = found
    head = f"RUNTIME = {runtime_name!r}\nLIB = {str(lib)!r}\nRAW = {str(raw)!r}\n"
    return run_child(runtime, core, head + CHILD_HELPERS + code, timeout)
