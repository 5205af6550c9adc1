"""apache-tvm-ffi 0.1.15.post2's wheel, for the audits that compare this package with it
(tests/cpp/test_apache_std_headers.py, tests/cpp/test_apache_header_paths.py,
tests/python/test_apache_signatures.py).

Both packages are ``tvm_ffi``, so the wheel is never installed beside this one: it is unpacked
into a private folder and read (its headers), or imported by a child Python whose path starts
there (its signatures). The audits' tables are stored in tests/ and checked against this
package always; against the wheel when it is found: ``$TVM_FFI_APACHE_WHEEL``, else the first
``apache_tvm_ffi-0.1.15.post2-*.whl`` in the folders of ``$TVM_FFI_CLIENT_WHEELS`` (the client
suite's offline wheels, tests/clients/README.md). Get it with::

    pip download --no-deps --only-binary=:all: -d .whl apache-tvm-ffi==0.1.15.post2
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import tempfile
import zipfile
from pathlib import Path

VERSION = "0.1.15.post2"
WHEEL_ENV = "TVM_FFI_APACHE_WHEEL"


def find_wheel() -> Path | None:
    if os.environ.get(WHEEL_ENV):
        return Path(os.environ[WHEEL_ENV])
    for folder in filter(None, os.environ.get("TVM_FFI_CLIENT_WHEELS", "").split(os.pathsep)):
        found = sorted(Path(folder).glob(f"apache_tvm_ffi-{VERSION}-*.whl"))
        if found:
            return found[0]
    return None


@functools.cache
def unpacked(wheel: Path) -> Path:
    """The wheel's files, unpacked once per process into a folder removed at exit."""
    target = Path(tempfile.mkdtemp(prefix="apache-tvm-ffi-"))
    import atexit

    atexit.register(shutil.rmtree, target, True)
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(target)
    return target


def python_tag(wheel: Path) -> tuple[int, int] | None:
    """(3, 12) for a cp312 wheel: the Python that can import it."""
    match = re.search(r"-cp(\d)(\d+)-", wheel.name)
    return (int(match[1]), int(match[2])) if match else None


def public_headers(include: Path) -> list[str]:
    """Every header path under an include folder, as `#include <...>` names it."""
    return sorted(str(p.relative_to(include)) for p in include.rglob("*.h"))


def find_python(tag: tuple[int, int]) -> str | None:
    """A Python of that version that runs: on PATH, else one pyenv installed."""
    import subprocess

    name = f"python{tag[0]}.{tag[1]}"
    candidates = [shutil.which(name)]
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates += sorted(str(p) for p in pyenv.glob(f"{tag[0]}.{tag[1]}.*/bin/{name}"))
    for python in filter(None, candidates):
        if subprocess.run([python, "-c", ""], capture_output=True).returncode == 0:
            return python
    return None


def fetch_wheel() -> Path | None:
    """The wheel for this interpreter: find_wheel(), else downloaded once into the user's cache
    (``pip download``; None without network). The binary-compatibility tests use this; the
    audits above keep to find_wheel() so that they run only where asked."""
    import subprocess
    import sys

    found = find_wheel()
    if found is not None:
        return found
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tvm-ffi-tests"
    tag = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    existing = sorted(cache.glob(f"apache_tvm_ffi-{VERSION}-{tag}-*.whl"))
    if existing:
        return existing[0]
    cache.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q"]
    cmd += ["--dest", str(cache), f"apache-tvm-ffi=={VERSION}"]
    try:
        subprocess.run(cmd, capture_output=True, timeout=120, check=True)
    except (subprocess.SubprocessError, OSError):
        return None
    existing = sorted(cache.glob(f"apache_tvm_ffi-{VERSION}-{tag}-*.whl"))
    return existing[0] if existing else None


def build_library(wheel: Path, source: Path, output: Path, *flags: str) -> Path:
    """A shared library built as a client of apache-tvm-ffi builds it: its headers, linked
    with ``-ltvm_ffi`` against its runtime (so DT_NEEDED names libtvm_ffi.so). Loading it
    needs a libtvm_ffi.so already in the process or on the search path: apache's
    (runtime_path) or this package's."""
    import subprocess

    root = unpacked(wheel) / "tvm_ffi"
    cxx = os.environ.get("CXX", "c++")
    cmd = [cxx, "-std=c++17", "-O1", "-fPIC", "-shared", "-I", str(root / "include")]
    cmd += [str(source), "-L", str(root / "lib"), "-ltvm_ffi", "-o", str(output), *flags]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}\n{proc.stderr}")
    return output


def runtime_path(wheel: Path) -> Path:
    """apache-tvm-ffi's libtvm_ffi.so inside the unpacked wheel."""
    return unpacked(wheel) / "tvm_ffi" / "lib" / "libtvm_ffi.so"


def require_wheel() -> Path:
    """fetch_wheel(), or a pytest skip saying why: the wheel is the one input of the
    binary-compatibility tests that they cannot build themselves."""
    import pytest

    found = fetch_wheel()
    if found is None:
        pytest.skip("apache-tvm-ffi's wheel cannot be had (no network, nothing cached)")
    return found
