"""The new runtime (staging/runtime, libtvm_ffi.so on the tvm-ffi C ABI), built for tests.

Each source file compiles to an object named by the hash of its text, the headers it may
include and the flags, so editing one file recompiles only that file; the objects and the
linked library live in a cache folder (``$TVM_FFI_NEXT_RUNTIME_CACHE``, else
``~/.cache/tvm-ffi-tests/next-runtime``). Every output is written under a temporary name and
renamed into place, so an interrupted build leaves nothing half-written behind.
"""

from __future__ import annotations

import functools
import hashlib
import os
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from helpers import cxx_runtime

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "src" / "lib"
INCLUDE = ROOT / "include"
CXXFLAGS = ["-std=c++17", "-O2", "-fPIC", "-fvisibility=hidden", "-fvisibility-inlines-hidden"]
CXXFLAGS += ["-Wall", "-Wextra", "-Werror"]
#: The version script keeps the TVMFFI* C functions and hides the rest (no symbol versions);
#: --exclude-libs keeps static archives' symbols out; libstdc++ stays a shared dependency.
LDFLAGS = ["-shared", "-Wl,-soname,libtvm_ffi.so", "-Wl,--exclude-libs,ALL", "-Wl,--no-undefined"]
LDFLAGS += [f"-Wl,--version-script={SOURCES / 'libtvm_ffi.map'}", "-ldl", "-lpthread"]


def cache_dir() -> Path:
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tvm-ffi-tests"
    return Path(os.environ.get("TVM_FFI_NEXT_RUNTIME_CACHE", default / "next-runtime"))


def _digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()[:24]


def _headers_digest() -> bytes:
    files = sorted(SOURCES.glob("*.h")) + sorted(INCLUDE.rglob("*.h"))
    return b"".join(str(p).encode() + p.read_bytes() for p in files)


def _run(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"building the runtime failed:\n{' '.join(cmd)}\n{proc.stderr}")


def _publish(tmp: Path, final: Path) -> Path:
    os.replace(tmp, final)
    return final


def _compile(cxx: str, source: Path, headers: bytes, objects: Path) -> Path:
    key = _digest(cxx.encode(), " ".join(CXXFLAGS).encode(), source.read_bytes(), headers)
    out = objects / f"{source.stem}-{key}.o"
    if out.exists():
        return out
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        _run([cxx, *CXXFLAGS, "-I", str(INCLUDE), "-c", str(source), "-o", str(tmp)])
        return _publish(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)


@functools.cache
def build() -> Path:
    """The path of the runtime built from the current sources (once per process)."""
    cxx = os.environ.get("CXX", "c++")
    cache = cache_dir()
    objects = cache / "objects"
    objects.mkdir(parents=True, exist_ok=True)
    headers = _headers_digest()
    sources = sorted(SOURCES.glob("*.cc"))
    with ThreadPoolExecutor(max_workers=2) as pool:
        objs = list(pool.map(lambda s: _compile(cxx, s, headers, objects), sources))
    map_text = (SOURCES / "libtvm_ffi.map").read_bytes()
    key = _digest(" ".join(LDFLAGS).encode(), map_text, *(o.name.encode() for o in objs))
    folder = cache / key
    lib = folder / "libtvm_ffi.so"
    if lib.exists():
        return lib
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as tmpdir:
        tmp = Path(tmpdir) / "libtvm_ffi.so"
        _run([cxx, *map(str, objs), "-o", str(tmp), *LDFLAGS])
        cxx_runtime.check(tmp, f"the test runtime linked by {cxx}")  # before it is cached
        return _publish(tmp, lib)
