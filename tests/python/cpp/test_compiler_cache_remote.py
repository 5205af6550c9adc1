"""Compiler caches shared through remote storage, for real: a redis-server on 127.0.0.1 stands
for the store a cluster shares. A module is built on a first host (the package under test, its
own tvm_ffi cache directory and local compiler cache), then on a second host whose install of
the package, tvm_ffi cache and local compiler cache all sit at other paths (a copy of the
package; fresh, empty directories): every compile must come from the store. The compile
commands are the same on both (relative sources, the include directories through links in the
build directory), so the caches' keys are too.

ccache: host code and nvcc's device code both hit. sccache: host code hits; of nvcc's device
steps, cudafe++ and cicc hit only where the build directory has the same path (a host that
is a copy of the first): nvcc hands them the source's absolute path, which sccache hashes
(see the JIT guide's "Compiler caches")."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from helpers import compiler_cache, package, servers, tools
from helpers.launcher_cases import has_cuda_headers

needs_redis = pytest.mark.skipif(
    servers.REDIS is None, reason="needs redis-server (Debian: apt-get install redis-server)"
)
KINDS = [
    "host",
    pytest.param("device", marks=pytest.mark.skipif(not tools.has_nvcc(), reason="needs nvcc")),
]


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    """A private, memory-only redis-server; its URL without a database number (as the
    compiler caches' settings write it)."""
    with servers.redis_server(tmp_path_factory.mktemp("redis")) as url:
        yield url.rsplit("/", 1)[0]


@pytest.fixture(scope="module")
def install_b(tmp_path_factory):
    """The second host's install: a copy of the package at another path."""
    return package.second_install(tmp_path_factory.mktemp("install_b"))


def _hosts(tool, kind, redis_url, tmp_path, install_b, env=({}, {})):
    """(first host's build, second host's build), sharing a store private to this test;
    ``env``: each host's own variables."""
    tools.declared_script(tool, compiler_cache.PACKAGES[tool])
    store = f"{redis_url}|{tmp_path.name}"
    first = compiler_cache.build(tool, kind, tmp_path / "a", None, store, **env[0])
    second = compiler_cache.build(tool, kind, tmp_path / "elsewhere" / "b", install_b, store,
                                  **env[1])  # fmt: skip
    assert second.package.startswith(str(install_b))
    # The same commands, naming neither install nor cache directory.
    assert first.ninja == second.ninja
    assert str(tmp_path) not in first.ninja and str(install_b) not in second.ninja
    return first, second


@needs_redis
@pytest.mark.parametrize("kind", KINDS)
def test_ccache_hits_from_another_install_and_cache_path(kind, redis_url, tmp_path, install_b):
    """Issue 30, item 4: the commands named the install's include directory, so a second
    host with its venv elsewhere missed every object."""
    first, second = _hosts("ccache", kind, redis_url, tmp_path, install_b)
    assert (first.misses, first.hits) == (1, 0)
    assert (second.misses, second.hits) == (0, 1)


def _headers_only_cuda(home: Path) -> str:
    """A CUDA_HOME at ``home`` holding the headers of the CUDA found (links to them)."""
    from tvm_ffi import _cuda_toolkit

    real = _cuda_toolkit.find_cuda(nvcc=False, cudart=False).include_dirs[0]
    (home / "include").mkdir(parents=True)
    for entry in real.iterdir():
        (home / "include" / entry.name).symlink_to(entry)
    return str(home)


@needs_redis
@pytest.mark.skipif(not has_cuda_headers(), reason="needs the CUDA headers")
def test_ccache_hits_with_cuda_headers_at_another_path(redis_url, tmp_path, install_b):
    """CUDA's include directory is named through a link too: a host whose CUDA sits
    elsewhere (a pip CUDA wheel in another venv) hits."""
    homes = [_headers_only_cuda(tmp_path / place / "cuda") for place in ("x", "y/deeper")]
    env = ({"CUDA_HOME": homes[0]}, {"CUDA_HOME": homes[1]})
    first, second = _hosts("ccache", "cuda_headers", redis_url, tmp_path, install_b, env)
    assert (first.misses, first.hits) == (1, 0)
    assert (second.misses, second.hits) == (0, 1)
    for host, home in (("a", homes[0]), ("elsewhere/b", homes[1])):
        (link,) = (tmp_path / host / "tvm-ffi").glob("cross_path_cuda_headers_*/inc/cuda")
        assert os.readlink(link) == f"{home}/include"


@needs_redis
def test_sccache_hits_host_code_from_another_install_and_cache_path(redis_url, tmp_path, install_b):
    first, second = _hosts("sccache", "host", redis_url, tmp_path, install_b)
    assert (first.misses, first.hits) == (1, 0)
    assert (second.misses, second.hits) == (0, 1)


@needs_redis
@pytest.mark.skipif(not tools.has_nvcc(), reason="needs nvcc")
def test_sccache_device_code(redis_url, tmp_path, install_b):
    """nvcc as sccache splits it: the host compile, cudafe++, cicc and ptxas (one
    architecture). A host at the same paths hits all four; a host elsewhere the host
    compile and ptxas only."""
    first, elsewhere = _hosts("sccache", "device", redis_url, tmp_path, install_b)
    assert (first.misses, first.hits) == (4, 0)
    assert (elsewhere.misses, elsewhere.hits) == (2, 2)
    shutil.rmtree(tmp_path / "a")  # a copy of the first host: the same paths, empty caches
    same = compiler_cache.build("sccache", "device", tmp_path / "a", None,
                                f"{redis_url}|{tmp_path.name}")  # fmt: skip
    assert (same.misses, same.hits) == (0, 4)
