"""Fixtures for the core tests: compiling small test libraries against the repo's headers,
and the test-only extension of tvm_ffi.cuda's driver-free launch code."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Callable

import pytest

import tvm_ffi.libinfo
from helpers import SOURCES, package, servers, tools

REPO = Path(__file__).resolve().parents[2]
INCLUDE = REPO / "include"

# The folder of the package's libtvm_ffi.so (what tvm_ffi.libinfo finds).
RUNTIME_DIR = Path(tvm_ffi.libinfo.find_libtvm_ffi()).parent

BuildLibrary = Callable[..., Path]


@pytest.fixture(scope="session")
def build_library(tmp_path_factory: pytest.TempPathFactory) -> BuildLibrary:
    """``build_library(name, source, out=None, flags=())`` compiles C++ source text with
    ``c++ -shared -fPIC -std=c++17 -O2 -I include`` linked to the package's runtime
    (``-L<lib dir> -ltvm_ffi`` with an rpath to it, as the tvm-ffi C ABI asks) and returns the
    library's path.

    A compiler error fails the test (with the compiler's output): it is our code.
    """
    cxx = os.environ.get("CXX", "c++")
    if shutil.which(cxx) is None:
        pytest.skip(f"needs a C++ compiler ({cxx} not found)")
    root = tmp_path_factory.mktemp("libs")

    def build(name: str, source: str, out: Path | None = None, flags: Sequence[str] = ()) -> Path:
        src = root / f"{name}.cc"
        src.write_text(source)
        target = out if out is not None else root / f"lib{name}.so"
        cmd = [cxx, "-shared", "-fPIC", "-std=c++17", "-O2", f"-I{INCLUDE}", *flags]
        cmd += [str(src), f"-L{RUNTIME_DIR}", "-ltvm_ffi", f"-Wl,-rpath,{RUNTIME_DIR}"]
        cmd += ["-o", str(target)]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            pytest.fail(f"compiling {name} failed:\n{' '.join(cmd)}\n{proc.stderr}")
        return target

    return build


@pytest.fixture(scope="session")
def release(tmp_path_factory: pytest.TempPathFactory) -> package.Release:
    """The sdist of a copy of the tree and the wheel built from that sdist, once for the
    package tests (test_package.py, test_package_sdist.py)."""
    return package.build_release(tmp_path_factory.mktemp("release"))


@pytest.fixture(scope="session")
def objects_lib(build_library: BuildLibrary) -> Path:
    """The library of tests/helpers/objects_lib.cc (objects and registry calls written by hand
    on c_api.h alone), built once for the tests that load it."""
    return build_library("objects_lib", (SOURCES / "objects_lib.cc").read_text())


# Two "hosts" of the remote cache tests (tests/python/cpp/test_remote_cache.py,
# tests/python/cache/test_cache_cli.py): their compiler, host B's install, a Redis server.
@pytest.fixture(scope="module")
def cxx(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cxx") / "g++"
    path.write_text(tools.LOGGING_CXX)
    path.chmod(0o755)
    return path


@pytest.fixture(scope="module")
def install_b(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A second copy of the package (headers inside it, as a wheel has them), at another
    path and with other file times: host B's install."""
    return package.second_install(tmp_path_factory.mktemp("install_b"))


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory):
    if servers.REDIS is None:
        pytest.skip("needs redis-server (Debian: apt-get install redis-server)")
    with servers.redis_server(tmp_path_factory.mktemp("redis")) as url:
        yield url
