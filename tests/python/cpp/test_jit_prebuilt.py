"""What a cold build takes from the package instead of compiling it: the CUDA launcher's
run-once code (tvm_ffi/lib/jit/cuda_launcher.o), the precompiled prelude (prelude.h.gch,
GCC), and the fastest linker the package build could link with. No GPU needed: the calls
fail before the driver."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from helpers.launcher_cases import (
    BAD_IMAGE,
    DEFINE,
    PTX,
    WRAPPER,
    entries,
    has_cuda_headers,
    ninja_value,
)
from tvm_ffi import cpp
from tvm_ffi.cpp import _prebuilt, _spec, _toolchain

needs_cuda_headers = pytest.mark.skipif(not has_cuda_headers(), reason="needs the CUDA headers")


def _is_gcc() -> bool:
    proc = subprocess.run(
        [str(_toolchain.find_cxx()), "-x", "c++", "-E", "-dM", "-"],
        input="", capture_output=True, text=True,
    )  # fmt: skip
    return "#define __GNUC__ " in proc.stdout and "__clang__" not in proc.stdout


@pytest.fixture(autouse=True)
def one_cuda_arch(monkeypatch):
    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", "9.0")
    monkeypatch.delenv("CXX", raising=False)  # the compiler the package was built with


def ninja_text(entry: Path) -> str:
    return (entry / "build.ninja").read_text()


def test_the_installed_package_has_current_prebuilt_files():
    """The package build left the files for the headers the package has: otherwise every
    cold build would silently compile the launcher again."""
    found = _prebuilt.current()
    assert found is not None, "tvm_ffi/lib/jit/prebuilt.json is missing or for other headers"
    folder, stamp = found
    assert (folder / _prebuilt.LAUNCHER_OBJECT).is_file()
    prelude = _prebuilt.prelude_text(_spec.PRELUDE_INCLUDES)
    assert (folder / _prebuilt.PCH_HEADER).read_text() == prelude
    assert stamp["flags"] == list(_prebuilt.BASE_FLAGS)
    if _is_gcc():  # built by the compiler the JIT uses here: its precompiled prelude fits
        assert _prebuilt.pch_header(_toolchain.find_cxx()) == folder / _prebuilt.PCH_HEADER


@needs_cuda_headers
@pytest.mark.parametrize("kind", ["cpp_sources", "cuda_sources"])
def test_default_flags_link_the_prebuilt_launcher(cache_dir, kind):
    mod = cpp.load_inline(
        "jit_pre", **{kind: WRAPPER}, functions=["load_bytes"], embed_cubin={"kernels": PTX}
    )
    with pytest.raises(ValueError) as info:
        mod.load_bytes(b"\x12\x34\x56\x78")
    assert str(info.value).splitlines()[0] == BAD_IMAGE
    assert entries(cache_dir, "cuda_launcher") == []  # nothing compiled for the launcher
    folder, _ = _prebuilt.current()
    (link,) = entries(cache_dir, "jit_pre")
    assert f" {folder / _prebuilt.LAUNCHER_OBJECT}" in ninja_value(link, "ldflags")
    (objects,) = entries(cache_dir, "objects")
    flags = "cflags" if kind == "cpp_sources" else "cuda_host_cflags"
    assert ninja_value(objects, flags).endswith(f" {DEFINE}")


@needs_cuda_headers
@pytest.mark.parametrize(
    ("flags", "prebuilt"),
    [
        (["-O3", "-g", "-Wall", "-DMY_TILE=4", "-std=c++20"], True),
        (["-D_GLIBCXX_USE_CXX11_ABI=0"], False),  # another std::string
        (["-DTVM_FFI_DEBUG_WITH_ABI_CHANGE"], False),  # a macro the headers may read
        (["-fno-strict-aliasing"], False),  # code generation
    ],
)
def test_flags_that_may_change_the_launcher_compile_it(cache_dir, flags, prebuilt):
    cpp.build_inline(
        "jit_pre", cpp_sources=WRAPPER, functions=["load_bytes"], embed_cubin={"kernels": PTX},
        extra_cflags=flags,
    )  # fmt: skip
    assert (entries(cache_dir, "cuda_launcher") == []) is prebuilt


def test_flags_fit_for_the_prebuilt_launcher():
    fits = _prebuilt.launcher_flags_fit
    assert fits([])
    assert fits(["-O3", "-g3", "-w", "-Wextra", "-Wno-unused", "-std=gnu++20", "-fPIC"])
    assert fits(["-DMY_MACRO", "-D", "OTHER=1", "-UMINE"])
    assert not fits(["-D", "_GLIBCXX_ASSERTIONS"])
    assert not fits(["-DTVM_FFI_ANYTHING=1"])
    assert not fits(["-DCUDA_API_PER_THREAD_DEFAULT_STREAM"])
    assert not fits(["-Wl,--no-undefined"])
    assert not fits(["-fno-rtti"])
    assert not fits(["-m32"])
    assert not fits(["-include", "mine.h"])


@needs_cuda_headers
def test_an_include_path_with_package_headers_compiles_the_launcher(cache_dir, tmp_path):
    # A copy of the package's headers first on the path may differ from those the object
    # was built from.
    shadow = tmp_path / "shadow"
    (shadow / "tvm" / "ffi").mkdir(parents=True)
    cpp.build_inline(
        "jit_pre", cpp_sources=WRAPPER, functions=["load_bytes"], embed_cubin={"kernels": PTX},
        extra_include_paths=[str(shadow)],
    )  # fmt: skip
    assert len(entries(cache_dir, "cuda_launcher")) == 1


@needs_cuda_headers
def test_headers_changed_since_the_package_build(cache_dir, monkeypatch):
    """An editable checkout whose headers were edited: the prebuilt files are for the old
    ones, so the launcher is compiled and the prelude parsed as it is now."""
    monkeypatch.setattr(_prebuilt, "_current", [])
    monkeypatch.setattr(_prebuilt, "headers_digest", lambda include: "edited")
    cpp.build_inline(
        "jit_pre", cpp_sources=WRAPPER, functions=["load_bytes"], embed_cubin={"kernels": PTX}
    )
    assert _prebuilt.current() is None
    assert len(entries(cache_dir, "cuda_launcher")) == 1
    (objects,) = entries(cache_dir, "objects")
    assert "prelude.h" not in ninja_text(objects)


def test_headers_digest_follows_contents(tmp_path):
    (tmp_path / "a" / "tvm").mkdir(parents=True)
    header = tmp_path / "a" / "tvm" / "x.h"
    header.write_text("int x;\n")
    first = _prebuilt.headers_digest(tmp_path / "a")
    shutil.copytree(tmp_path / "a", tmp_path / "b")  # another place, same files
    assert _prebuilt.headers_digest(tmp_path / "b") == first
    header.write_text("int y;\n")
    assert _prebuilt.headers_digest(tmp_path / "a") != first


@pytest.mark.skipif(not _is_gcc(), reason="the precompiled prelude is GCC's")
def test_the_precompiled_prelude_is_used(cache_dir, capfd):
    """-H prints the headers a compile reads; a precompiled header it used is marked '!'."""
    source = "int answer() { return tvm::ffi::Optional<int>(42).value(); }\n"
    cpp.load_inline("jit_pch", cpp_sources=source, functions=["answer"], extra_cflags=["-H"],
                    verbose=True)  # fmt: skip
    folder, _ = _prebuilt.current()
    (entry,) = entries(cache_dir, "jit_pch")
    cflags = ninja_value(entry, "cflags").split()
    assert cflags[cflags.index("-include") + 1] == str(folder / _prebuilt.PCH_HEADER)
    assert cflags.count("-include") == 1  # the five prelude headers are in it
    err = capfd.readouterr()
    assert f"! {folder / _prebuilt.PCH_HEADER}.gch" in err.out + err.err


def test_no_precompiled_prelude_through_a_compiler_cache(cache_dir, tmp_path, monkeypatch):
    launcher = tmp_path / "bin" / "mycache"
    launcher.parent.mkdir()
    launcher.write_text('#!/bin/sh\ncase "$1" in --version) echo mycache 1;; *) exec "$@";; esac\n')
    launcher.chmod(0o755)
    monkeypatch.setenv("TVM_FFI_COMPILER_LAUNCHER", str(launcher))
    cpp.build_inline("jit_pch", cpp_sources="int one() { return 1; }\n", functions=["one"])
    (entry,) = entries(cache_dir, "jit_pch")
    assert "prelude.h" not in ninja_value(entry, "cflags")
    assert "-include tvm/ffi/function.h" in ninja_value(entry, "cflags")


@pytest.mark.parametrize("choice", ["bfd", "gold", "lld", "mold"])
def test_linker_choice(cache_dir, monkeypatch, choice):
    monkeypatch.setenv("TVM_FFI_LINKER", choice)
    binary = {"gold": "ld.gold", "lld": "ld.lld", "mold": "mold"}.get(choice)
    if binary is not None and shutil.which(binary) is None:
        with pytest.raises(RuntimeError, match=f"TVM_FFI_LINKER='{choice}': {binary} not found"):
            cpp.build_inline("jit_ld", cpp_sources="int one() { return 1; }\n", functions=["one"])
        return
    mod = cpp.load_inline("jit_ld", cpp_sources="int one() { return 1; }\n", functions=["one"])
    assert mod.one() == 1
    (entry,) = entries(cache_dir, "jit_ld")
    ldflags = ninja_value(entry, "ldflags")
    if choice == "bfd":
        assert "-fuse-ld" not in ldflags
    else:
        assert ldflags.startswith(f"-fuse-ld={choice} ")


def test_default_linker_is_the_one_the_package_build_linked_with(cache_dir, monkeypatch):
    monkeypatch.delenv("TVM_FFI_LINKER", raising=False)
    cpp.build_inline("jit_ld", cpp_sources="int one() { return 1; }\n", functions=["one"])
    (entry,) = entries(cache_dir, "jit_ld")
    name = _prebuilt.linker(_toolchain.find_cxx())
    ldflags = ninja_value(entry, "ldflags")
    if name is None:
        assert "-fuse-ld" not in ldflags
    else:
        assert ldflags.startswith(f"-fuse-ld={name} ")


def test_another_compiler_links_with_its_default(cache_dir, install_cxx, monkeypatch):
    """The linker was tried with the compiler that built the package; another compiler
    (here a script in front of it) keeps its own default."""
    monkeypatch.delenv("TVM_FFI_LINKER", raising=False)
    install_cxx("c++", f'#!/bin/sh\nexec {_toolchain.find_cxx()} "$@"\n')
    mod = cpp.load_inline("jit_ld", cpp_sources="int one() { return 1; }\n", functions=["one"])
    assert mod.one() == 1
    (entry,) = entries(cache_dir, "jit_ld")
    assert "-fuse-ld" not in ninja_value(entry, "ldflags")


def test_unknown_linker_is_an_error(cache_dir, monkeypatch):
    monkeypatch.setenv("TVM_FFI_LINKER", "ld.fast")
    with pytest.raises(RuntimeError) as info:
        cpp.build_inline("jit_ld", cpp_sources="int one() { return 1; }\n", functions=["one"])
    assert str(info.value) == (
        "TVM_FFI_LINKER='ld.fast' is not a linker this package knows: use one of mold, lld, "
        "gold, or bfd (the compiler's default)"
    )


def test_builds_without_ninja_launch(cache_dir, monkeypatch):
    """An install without the ninja_launch program starts ninja through Python instead."""
    monkeypatch.setattr(_prebuilt, "ninja_launch", lambda: None)
    mod = cpp.load_inline("jit_py_launch", cpp_sources="int two() { return 2; }\n",
                          functions=["two"])  # fmt: skip
    assert mod.two() == 2


def test_linker_options_of_the_user_keep_the_default_linker(cache_dir, monkeypatch):
    """-Wl options are written for the compiler's default linker (gold has no -z undefs)."""
    monkeypatch.delenv("TVM_FFI_LINKER", raising=False)
    cpp.build_inline("jit_ld", cpp_sources="int one() { return 1; }\n", functions=["one"],
                     extra_ldflags=["-Wl,-z,undefs"])  # fmt: skip
    (entry,) = entries(cache_dir, "jit_ld")
    assert "-fuse-ld" not in ninja_value(entry, "ldflags")
