"""tvm_ffi.cpp's build.ninja: what a caller passes (flags, paths, the cache directory) is
written escaped, or refused before anything is written; never read as ninja statements."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from helpers.launcher_cases import PTX, WRAPPER, has_cuda_headers
from tvm_ffi import cpp
from tvm_ffi.cpp import _toolchain

needs_cuda_headers = pytest.mark.skipif(not has_cuda_headers(), reason="needs the CUDA headers")

SOURCE = textwrap.dedent(
    """
    #include <tvm/ffi/function.h>
    #include "answer.h"
    int answer() { return ANSWER; }
    TVM_FFI_DLL_EXPORT_TYPED_FUNC(answer, answer);
    """
)

# Every character ninja or the shell reads specially, in one directory name.
ODD = "odd $x:y|z 'q' \"d\" \\w #h"


def _payload(marker: Path) -> str:
    """A flag that, written as it is, adds a rule, a step and a default to build.ninja: the
    build would run `touch marker` (the last line takes the closing quote of the flag)."""
    return f"-O2\nrule pwn\n  command = touch {marker}\nbuild pwned: pwn\ndefault pwned\nx = y"


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """A directory holding the source and the include directory of SOURCE."""
    folder = tmp_path / "src"
    (folder / "include").mkdir(parents=True)
    (folder / "include" / "answer.h").write_text("#define ANSWER 42\n")
    (folder / "answer.cpp").write_text(SOURCE)
    return folder


# ---------------------------------------------------------------- a flag's newline


@pytest.mark.parametrize("api", ["load_inline", "build_inline", "build", "load"])
@pytest.mark.parametrize("label", ["extra_cflags", "extra_ldflags", "extra_cuda_cflags"])
def test_a_flag_with_a_newline_is_refused_and_nothing_runs(api, label, files, tmp_path, cache_dir):
    """Issue 28, item 1: a newline in one flag started ninja statements of the caller's
    text, and ninja ran them (here: a rule that creates the marker file)."""
    marker = tmp_path / "marker"
    flag = _payload(marker)
    kwargs = {label: ["-DA=1", flag], "extra_include_paths": [str(files / "include")]}
    if api.endswith("_inline"):
        kwargs["cpp_sources"] = SOURCE
    else:
        kwargs["sources"] = files / "answer.cpp"
    with pytest.raises(ValueError) as info:
        getattr(cpp, api)("jit_inject", **kwargs)
    assert (
        str(info.value)
        == f"{api}: {label}[1] holds a newline (got {flag!r:.80}); a compiler flag never does"
    )
    assert not marker.exists()
    assert not cache_dir.exists() or not any(cache_dir.glob("jit_inject*"))


@pytest.mark.parametrize(
    ("char", "name"), [("\r", "a carriage return"), ("\0", "a NUL byte"), ("\n", "a newline")]
)
def test_a_flag_string_with_a_line_break_or_nul_is_refused(char, name):
    """A str of flags is split as a shell would: a quoted newline stays in one flag."""
    flags = f"-O2 '-DA=1{char}2'"
    with pytest.raises(ValueError) as info:
        cpp.build_inline("jit_inject", cpp_sources="int f();", extra_ldflags=flags)
    flag = f"-DA=1{char}2"
    assert str(info.value) == (
        f"build_inline: extra_ldflags holds {name} (got {flag!r}); a compiler flag never does"
    )


def test_a_path_with_a_newline_is_refused(files, tmp_path):
    odd = tmp_path / "a\nb"
    odd.mkdir()
    shutil.copy(files / "answer.cpp", odd / "answer.cpp")
    with pytest.raises(ValueError) as info:
        cpp.build("jit_path", [files / "answer.cpp", odd / "answer.cpp"])
    shown = repr(str(odd / "answer.cpp"))
    assert str(info.value) == (
        f"build: sources[1] holds a newline (got {shown:.80}); build.ninja cannot name such a path"
    )
    with pytest.raises(ValueError) as info:
        cpp.load_inline("jit_path", cpp_sources=SOURCE, extra_include_paths=[str(odd)])
    assert str(info.value) == (
        f"load_inline: extra_include_paths[0] holds a newline (got {str(odd)!r:.80}); "
        "build.ninja cannot name such a path"
    )


def test_paths_with_ninja_and_shell_characters_build(files, tmp_path):
    """Issue 28, item 10: every path reaches build.ninja escaped the same way ("|" once
    split a build line: ninja has no escape for it)."""
    odd = tmp_path / ODD
    shutil.copytree(files, odd)
    mod = cpp.load("jit_odd_paths", odd / "answer.cpp", extra_include_paths=[str(odd / "include")])
    assert mod.answer() == 42


# ---------------------------------------------------------------- include directories


@needs_cuda_headers
def test_commands_name_the_package_and_cuda_headers_through_links(cache_dir):
    """Issue 30, item 4: the compile commands named the package's and CUDA's include
    directories by their absolute paths, so a compiler cache shared by hosts whose venvs
    (or checkouts, or CUDA wheels) sit elsewhere never hit. They name links in the build
    directory instead, which point at those directories."""
    from tvm_ffi import config

    source = "#include <cuda.h>\nint version() { return CUDA_VERSION; }"
    path = cpp.build_inline("jit_linked_includes", cpp_sources=source, functions="version")
    build_dir = Path(path).parent
    ninja = (build_dir / "build.ninja").read_text()
    assert "-Iinc/tvm_ffi -Iinc/cuda " in ninja
    include = config.get_include_dir()
    assert f"-I{include}" not in ninja
    assert os.readlink(build_dir / "inc" / "tvm_ffi") == include
    cuda = Path(os.readlink(build_dir / "inc" / "cuda"))
    assert cuda.is_absolute() and (cuda / "cuda_runtime.h").is_file()
    assert f"-I{cuda}" not in ninja


def test_sources_and_include_paths_are_named_through_links(files, tmp_path, monkeypatch):
    """The caller's sources and include paths too: the same files at two places, built in
    two caches, give the same commands; a source still finds its neighbours and ../ ."""
    (files / "sub").mkdir()
    (files / "sub" / "one.h").write_text('#include "../include/answer.h"\n#define ONE 1\n')
    (files / "answer.cpp").write_text(
        '#include "sub/one.h"\n' + SOURCE.replace("ANSWER;", "ANSWER * ONE;")
    )
    ninjas = []
    for place in ("a", "b/deeper"):
        copy = tmp_path / place / "src"
        shutil.copytree(files, copy)
        monkeypatch.setenv("TVM_FFI_CACHE_DIR", str(tmp_path / place / "cache"))
        mod = cpp.load(
            "jit_moved", copy / "answer.cpp", extra_include_paths=[str(copy / "include")]
        )
        assert mod.answer() == 42
        build_dir = Path(mod.path).parent
        assert os.readlink(build_dir / "src" / "0") == str(copy)
        assert os.readlink(build_dir / "inc" / "0") == str(copy / "include")
        ninjas.append((build_dir / "build.ninja").read_text())
    assert ninjas[0] == ninjas[1]
    assert str(tmp_path) not in ninjas[0]
    assert "build obj/0_answer.o: cxx src/0/answer.cpp\n" in ninjas[0]


def test_an_error_in_a_source_or_include_path_names_its_real_path(files, cache_dir):
    (files / "include" / "answer.h").write_text("#define ANSWER 42\nint broken = ;\n")
    with pytest.raises(cpp.BuildError) as info:
        cpp.load("jit_broken", files / "answer.cpp", extra_include_paths=[str(files / "include")])
    assert str(info.value).startswith(
        f"{files}/include/answer.h:2:14: error: expected primary-expression before ';' token\n"
    )
    assert f"In file included from {files}/answer.cpp:3:" in str(info.value)


def test_an_error_in_a_package_header_names_its_real_path(cache_dir):
    """The compiler names a package header through the link (inc/tvm_ffi/...); the error
    gives the path a user can open."""
    from tvm_ffi import config

    with pytest.raises(cpp.BuildError) as info:
        cpp.build_inline("jit_header_error", cpp_sources="int one() { return 1; }",
                         functions="one", extra_cflags=["-DTVMFFIObject=1"])  # fmt: skip
    include = re.escape(config.get_include_dir())
    assert re.match(rf"{include}/tvm/ffi/\S+\.h:\d+:\d+: error: ", str(info.value))
    assert "inc/tvm_ffi/" not in str(info.value)  # the command keeps -Iinc/tvm_ffi
    assert "inc/tvm_ffi/tvm/ffi/" in info.value.log  # the log is the compiler's, as it was


# ---------------------------------------------------------------- the cache directory


@needs_cuda_headers
def test_cache_dir_with_ninja_and_shell_characters_builds_images(tmp_path, monkeypatch):
    """Issue 28, item 10: a module with images links objects of another cache entry by
    path, which broke on characters ninja reads specially; a plain module never did."""
    root = tmp_path / ODD
    monkeypatch.setenv("TVM_FFI_CACHE_DIR", str(root))
    plain = cpp.load_inline("jit_odd_root", cpp_sources="int one() { return 1; }", functions="one")
    assert plain.one() == 1
    mod = cpp.load_inline("jit_odd_root_images", cpp_sources=WRAPPER, embed_cubin={"kernels": PTX})
    assert Path(mod.path).parent.parent == root
    assert PTX in Path(mod.path).read_bytes()


def test_cache_dir_with_a_newline_is_refused(tmp_path, monkeypatch):
    """A newline cannot be written in build.ninja, where a module with images names files
    of other entries: refused for every module, before anything is made, naming the setting
    (rather than a cache where only modules without images build)."""
    root = tmp_path / "cache\nnext"
    monkeypatch.setenv("TVM_FFI_CACHE_DIR", str(root))
    with pytest.raises(ValueError) as info:
        cpp.load_inline("jit_newline_root", cpp_sources="int f() { return 1; }")
    assert str(info.value) == (
        f"TVM_FFI_CACHE_DIR holds a newline or a carriage return (got {str(root)!r}); "
        "choose a cache directory without one"
    )
    assert not root.exists()


# ---------------------------------------------------------------- a long link line


def _empty_objects(folder: Path, count: int) -> list[Path]:
    """``count`` copies of an object that defines nothing."""
    folder.mkdir(parents=True)
    first = folder / "o0.o"
    subprocess.run(
        [str(_toolchain.find_cxx()), "-x", "c++", "-c", "-fPIC", "/dev/null", "-o", str(first)],
        check=True,
    )
    copies = [first]
    for index in range(1, count):
        copies.append(folder / f"o{index}.o")
        os.link(first, copies[-1])
    return copies


@pytest.mark.parametrize("output", ["x.so", "x.o"])
def test_a_link_of_inputs_over_128_kib_links(files, tmp_path, output):
    """Issue 28, item 11: `posix_spawn: Argument list too long` once a link's inputs passed
    the 128 KiB that one argument (sh -c's command) may have; they go in a response file."""
    objects = _empty_objects(tmp_path / ("long" * 50 + " $x:y|z 'q' \\w"), 600)
    assert sum(len(str(path)) + 1 for path in objects) > 128 * 1024
    sources = [files / "answer.cpp", *objects]
    include = [str(files / "include")]
    if output == "x.so":
        assert cpp.load("jit_long_link", sources, extra_include_paths=include).answer() == 42
        return
    built = Path(cpp.build("jit_long_link", sources, extra_include_paths=include,
                           output=tmp_path / output))  # fmt: skip
    symbols = subprocess.run(["nm", str(built)], capture_output=True, text=True, check=True)
    assert "__tvm_ffi_answer" in symbols.stdout


@needs_cuda_headers
def test_an_embed_step_of_inputs_over_128_kib_runs(files, tmp_path):
    """The embed tool of a relocatable output takes one object: the many are merged first."""
    objects = _empty_objects(tmp_path / ("long" * 50), 700)
    built = cpp.build(
        "jit_long_embed",
        [files / "answer.cpp", *objects],
        extra_include_paths=[str(files / "include")],
        embed_cubin={"kernels": PTX},
        output=tmp_path / "x.o",
    )
    symbols = subprocess.run(["nm", built], capture_output=True, text=True, check=True).stdout
    assert "__tvm_ffi_answer" in symbols and "__tvm_ffi__cubin_kernels" in symbols
