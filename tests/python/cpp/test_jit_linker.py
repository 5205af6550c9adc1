"""The faster linker the package chose is checked where it is used: when it cannot tell its
version or fails a link, the build links with the compiler's default linker, says so once,
and the process keeps to the default. A linker named in TVM_FFI_LINKER is never replaced."""

from __future__ import annotations

import os
import re
import shutil
import warnings
from pathlib import Path

import pytest

from helpers.launcher_cases import ninja_value
from tvm_ffi import cpp
from tvm_ffi.cpp import _prebuilt, _toolchain

SOURCE = "int one() { return 1; }\n"

# Fake ld.gold programs, first on PATH. Each logs its arguments to the file beside it.
FAKES = {
    # gold's bus error on a FUSE-backed cache
    "crashes": 'case "$1" in --version) echo "GNU gold (fake) 1.16"; exit 0;; esac\nkill -BUS $$\n',
    "fails": 'case "$1" in --version) echo "GNU gold (fake) 1.16"; exit 0;; esac\n'
    'echo "ld.gold: fatal error: cannot map obj/main.o: Bad address" >&2\nexit 1\n',
    "no-version": 'echo "ld.gold: unrecognized option $1" >&2\nexit 1\n',
}


@pytest.fixture
def fake_gold(tmp_path, monkeypatch):
    """``fake_gold(kind)``: puts a fake ld.gold first on PATH, makes gold the package's
    choice for this compiler (as a package build that linked with it records), and gives
    this test a process that has not fallen back yet. Returns the fake's path."""

    def install(kind: str) -> Path:
        folder = tmp_path / "linker"
        folder.mkdir()
        fake = folder / "ld.gold"
        fake.write_text(f'#!/bin/sh\necho "$@" >> {folder}/log\n{FAKES[kind]}')
        fake.chmod(0o755)
        monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
        return fake

    monkeypatch.setattr(_prebuilt, "linker", lambda compiler: "gold")
    monkeypatch.setattr(_toolchain, "_fallen_back", set())
    monkeypatch.delenv("CXX", raising=False)
    return install


def _entry(cache_dir: Path, name: str) -> Path:
    (entry,) = [p for p in cache_dir.iterdir() if p.name.startswith(f"{name}_")
                and (p / f"{name}.so").exists()]  # fmt: skip
    return entry


def _expected(fake: Path, reason: str) -> str:
    return (
        rf"tvm_ffi\.cpp: the linker gold \({re.escape(str(fake))}\) failed \({reason}\); this "
        r"process links with the compiler's default linker instead \(TVM_FFI_LINKER=bfd "
        r"skips gold; TVM_FFI_LINKER=gold makes its failure an error\)"
    )


@pytest.mark.parametrize(
    ("kind", "headline"),
    [
        ("crashes", r".*Bus error.*"),
        ("fails", r"ld\.gold: fatal error: cannot map obj/main\.o: Bad address"),
    ],
)
def test_a_failing_automatic_linker_falls_back_once(cache_dir, fake_gold, kind, headline):
    """Every build failed where gold crashed (a FUSE-backed cache) or a broken ld.gold came
    first on PATH, although the compiler's default linker links them."""
    fake = fake_gold(kind)
    with pytest.warns(RuntimeWarning) as record:
        assert cpp.load_inline("jit_ld_a", cpp_sources=SOURCE, functions=["one"]).one() == 1
    assert len(record) == 1
    assert re.fullmatch(_expected(fake, f"linking 'jit_ld_a': {headline}"), str(record[0].message))
    assert "-fuse-ld" not in ninja_value(_entry(cache_dir, "jit_ld_a"), "ldflags")
    links = (fake.parent / "log").read_text()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once: the process keeps to the default
        assert cpp.load_inline("jit_ld_b", cpp_sources=SOURCE, functions=["one"]).one() == 1
    assert "-fuse-ld" not in ninja_value(_entry(cache_dir, "jit_ld_b"), "ldflags")
    assert (fake.parent / "log").read_text() == links  # not tried again


def test_a_linker_without_version_is_not_used(cache_dir, fake_gold):
    """Its --version keys the link: a build once failed with "ld.gold --version failed"."""
    fake = fake_gold("no-version")
    with pytest.warns(RuntimeWarning) as record:
        assert cpp.load_inline("jit_ld_a", cpp_sources=SOURCE, functions=["one"]).one() == 1
    reason = (
        rf"it cannot tell its version: {re.escape(str(fake))} --version failed with exit "
        r"code 1: ld\.gold: unrecognized option --version"
    )
    assert [str(w.message) for w in record] == [str(record[0].message)]
    assert re.fullmatch(_expected(fake, reason), str(record[0].message))
    assert (fake.parent / "log").read_text() == "--version\n"  # never asked to link


def test_a_build_directory_falls_back_too(tmp_path, fake_gold):
    fake_gold("crashes")
    with pytest.warns(RuntimeWarning, match=r"^tvm_ffi\.cpp: the linker gold "):
        mod = cpp.load_inline("jit_ld_a", cpp_sources=SOURCE, functions=["one"],
                              build_directory=tmp_path / "build")  # fmt: skip
    assert mod.one() == 1
    assert "-fuse-ld" not in (tmp_path / "build" / "build.ninja").read_text()


def test_a_linker_named_in_tvm_ffi_linker_is_not_replaced(fake_gold, monkeypatch):
    fake = fake_gold("fails")
    monkeypatch.setenv("TVM_FFI_LINKER", "gold")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(cpp.BuildError) as info:
            cpp.build_inline("jit_ld_a", cpp_sources=SOURCE, functions=["one"])
    assert str(info.value).splitlines()[0] == (
        "ld.gold: fatal error: cannot map obj/main.o: Bad address"
    )
    assert "-fuse-ld=gold" in info.value.command
    assert (fake.parent / "log").exists()


@pytest.mark.skipif(shutil.which("ld.gold") is None, reason="needs binutils' ld.gold")
def test_an_error_of_the_code_is_not_the_linkers(fake_gold):
    """An undefined symbol fails with any linker: the default's error is raised, without a
    warning, and the process keeps the faster linker."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(cpp.BuildError) as info:
            cpp.build_inline("jit_ld_a", cpp_sources="int g();\nint one() { return g(); }\n",
                             functions=["one"])  # fmt: skip
    assert str(info.value).splitlines()[0] == (
        "undefined symbol g() (referenced from main.cpp): define it, or link the library "
        "that does (extra_ldflags)"
    )
    assert "-fuse-ld" not in info.value.command  # the retry's, with the default linker
    assert _toolchain._fallen_back == set()
