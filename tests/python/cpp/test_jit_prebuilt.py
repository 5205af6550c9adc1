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
    DEFINE,
    PTX,
    WRAPPER,
    bad_image,
    entries,
    has_cuda_headers,
    ninja_value,
    raised,
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
        gch = folder / f"{_prebuilt.PCH_HEADER}.gch"
        identity = _prebuilt.pch_identity(prelude, gch.stat().st_size)
        assert {key: stamp[key] for key in identity} == identity


@needs_cuda_headers
@pytest.mark.parametrize("kind", ["cpp_sources", "cuda_sources"])
def test_default_flags_link_the_prebuilt_launcher(cache_dir, kind):
    mod = cpp.load_inline(
        "jit_pre", **{kind: WRAPPER}, functions=["load_bytes"], embed_cubin={"kernels": PTX}
    )
    with pytest.raises(ValueError) as info:
        mod.load_bytes(b"\x12\x34\x56\x78")
    assert raised(info.value) == bad_image(mod.path)
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
        (["-O3", "-g", "-Wall", "-std=c++20"], True),
        (["-DMY_TILE=4"], False),  # a macro may rename what the launcher defines
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
    assert fits(["-O3", "-g3", "-w", "-Wextra", "-Wno-unused", "-std=gnu++20", "-fPIC", "-H"])
    assert not fits(["-DMY_MACRO"])  # an allow-list: no macro of the user's is known safe
    assert not fits(["-D", "OTHER=1"])
    assert not fits(["-UMINE"])
    assert not fits(["-Dtvm=tvm_v2"])
    assert not fits(["-D", "_GLIBCXX_ASSERTIONS"])
    assert not fits(["-DTVM_FFI_ANYTHING=1"])
    assert not fits(["-DCUDA_API_PER_THREAD_DEFAULT_STREAM"])
    assert not fits(["-Wl,--no-undefined"])
    assert not fits(["-fno-rtti"])
    assert not fits(["-m32"])
    assert not fits(["-include", "mine.h"])
    assert not fits(["-I/somewhere"])
    assert not fits(["-fpack-struct=1"])
    assert not fits(["--some-flag-new-to-us"])


def test_flags_fit_for_the_precompiled_prelude():
    """GCC checks macros and -m options against the .gch (and then reads prelude.h); a
    layout option it does not check must keep the .gch out."""
    fits = _prebuilt.pch_flags_fit
    assert fits(["-O3", "-w", "-Wall", "-DMY_TILE=4", "-D", "X", "-UY", "-fPIC", "-H"])
    for flag in ["-fpack-struct", "-fpack-struct=1", "-malign-double", "-mms-bitfields",
                 "-fshort-enums", "-fshort-wchar", "-funsigned-char", "-fsigned-char",
                 "-fno-exceptions", "-I/elsewhere", "-isystem", "-include", "-m32",
                 "-fvisibility=default", "--some-flag-new-to-us"]:  # fmt: skip
        assert not fits([flag]), flag


@needs_cuda_headers
def test_a_macro_that_renames_the_launcher_builds_and_loads(cache_dir):
    """-Dtvm=tvm_v2 renames every name the wrapper asks of the launcher: the prebuilt
    object (built without it) was once linked, and the link failed with an undefined
    tvm_v2::ffi::CubinModule::Load."""
    mod = cpp.load_inline(
        "jit_renamed", cpp_sources=WRAPPER, functions=["load_bytes"],
        embed_cubin={"kernels": PTX}, extra_cflags=["-Dtvm=tvm_v2"],
    )  # fmt: skip
    with pytest.raises(ValueError) as info:
        mod.load_bytes(b"\x12\x34\x56\x78")
    assert raised(info.value) == bad_image(mod.path)
    (runtime,) = entries(cache_dir, "cuda_launcher")
    assert "-Dtvm=tvm_v2" in ninja_value(runtime, "cflags").split()


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


LAYOUT_PROBES = {
    # flag: (source, what a build without the precompiled prelude gives; None: c_api.h's
    # layout assertions refuse it, which a prelude taken from the .gch would not)
    "-fpack-struct=1": ("int64_t probe() { return alignof(DLTensor); }\n", None),
    "-funsigned-char": (
        "#include <limits>\nint64_t probe() { return std::numeric_limits<char>::is_signed; }\n",
        0,
    ),
}


@pytest.mark.skipif(not _is_gcc(), reason="the precompiled prelude is GCC's")
@pytest.mark.parametrize("flag", sorted(LAYOUT_PROBES))
def test_a_layout_flag_gcc_does_not_check_keeps_the_precompiled_prelude_out(cache_dir, flag):
    """GCC took the .gch under -fpack-struct=1 (or -funsigned-char): the prelude's types
    had the layout of the default flags (alignof(DLTensor) 8, not 1), unlike the same
    build without it (which c_api.h's layout assertions now refuse)."""
    source, expected = LAYOUT_PROBES[flag]
    if expected is None:
        with pytest.raises(cpp.BuildError) as info:
            cpp.load_inline("jit_layout", cpp_sources=source, functions=["probe"],
                            extra_cflags=[flag])  # fmt: skip
        assert "error: static assertion failed: TVMFFIFieldInfo is 120 bytes" in info.value.log
    else:
        mod = cpp.load_inline("jit_layout", cpp_sources=source, functions=["probe"],
                              extra_cflags=[flag])  # fmt: skip
        assert mod.probe() == expected
    (entry,) = entries(cache_dir, "jit_layout")
    assert "prelude.h" not in ninja_value(entry, "cflags")


@pytest.mark.skipif(not _is_gcc(), reason="the precompiled prelude is GCC's")
def test_a_precompiled_prelude_of_another_text_is_not_used(tmp_path, monkeypatch):
    """GCC takes prelude.h.gch for prelude.h by its name: prebuilt.json says which text
    (and what size of .gch) the package build compiled, and anything else is refused."""
    _, stamp = _prebuilt.current()
    cxx = _toolchain.find_cxx()
    fake = tmp_path / "jit"
    fake.mkdir()
    text = _prebuilt.prelude_text(_spec.PRELUDE_INCLUDES)
    (fake / _prebuilt.PCH_HEADER).write_text(text)
    gch = fake / f"{_prebuilt.PCH_HEADER}.gch"
    gch.write_bytes(bytes(stamp["pch_size"]))
    monkeypatch.setattr(_prebuilt, "_current", [(fake, stamp)])
    assert _prebuilt.pch_header(cxx) == fake / _prebuilt.PCH_HEADER
    gch.write_bytes(bytes(stamp["pch_size"] + 8))  # a .gch compiled from another text
    assert _prebuilt.pch_header(cxx) is None
    gch.write_bytes(bytes(stamp["pch_size"]))
    (fake / _prebuilt.PCH_HEADER).write_text(text + "#include <vector>\n")
    assert _prebuilt.pch_header(cxx) is None
    (fake / _prebuilt.PCH_HEADER).write_text(text)
    # The prelude changed since the package build (an editable checkout): its text is not
    # the one the .gch holds.
    includes = _spec.PRELUDE_INCLUDES
    monkeypatch.setattr(_spec, "PRELUDE_INCLUDES", (*includes, "tvm/ffi/any.h"))
    assert _prebuilt.pch_header(cxx) is None
    monkeypatch.setattr(_spec, "PRELUDE_INCLUDES", includes)
    older = {key: value for key, value in stamp.items() if key != "pch_source"}
    monkeypatch.setattr(_prebuilt, "_current", [(fake, older)])  # a build that did not say
    assert _prebuilt.pch_header(cxx) is None


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
