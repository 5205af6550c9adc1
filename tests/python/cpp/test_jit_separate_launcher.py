"""A module whose sources include the launcher is compiled with
TVM_FFI_CUDA_SEPARATE_LAUNCHER and linked with the launcher's run-once code. Here the
package's prebuilt object is set aside (as when the headers changed since the package was
built, or the flags change the launcher: test_jit_prebuilt.py covers that choice), so the
code lives in a cache entry of its own (cuda_launcher_<key>/cuda_launcher.o) shared by every
module built with the same compiler and flags. No GPU needed: the calls below fail before
the driver."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
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
from tvm_ffi.cpp import _prebuilt, _toolchain

pytestmark = pytest.mark.skipif(not has_cuda_headers(), reason="needs the CUDA headers")


@pytest.fixture(autouse=True)
def one_cuda_arch(monkeypatch):
    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", "9.0")


@pytest.fixture(autouse=True)
def no_prebuilt(monkeypatch):
    monkeypatch.setattr(_prebuilt, "_current", [None])


def build(name: str, source: str = WRAPPER, kind: str = "cuda_sources", **kwargs) -> str:
    kwargs.setdefault("embed_cubin", {"kernels": PTX})
    return cpp.build_inline(name, **{kind: source}, functions=["load_bytes"], **kwargs)


def nm(obj: Path) -> str:
    if shutil.which("nm") is None:
        pytest.skip("needs binutils (nm)")
    return subprocess.run(["nm", "-C", str(obj)], capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize(
    ("kind", "flags"), [("cpp_sources", "cflags"), ("cuda_sources", "cuda_host_cflags")]
)
def test_module_links_the_shared_runtime(cache_dir, kind, flags):
    mod = cpp.load_inline(
        "jit_sep", **{kind: WRAPPER}, functions=["load_bytes"], embed_cubin={"kernels": PTX}
    )
    with pytest.raises(ValueError) as info:
        mod.load_bytes(b"\x12\x34\x56\x78")
    assert raised(info.value) == bad_image(mod.path)  # then where it was raised
    (runtime,) = entries(cache_dir, "cuda_launcher")
    assert sorted(p.name for p in runtime.glob("*.cc")) == [
        "launcher_part1.cc",
        "launcher_part2.cc",
    ]
    # The runtime sees neither the prelude nor the module's sources; it runs once: -O1.
    assert ninja_value(runtime, "cflags").endswith(f" -Iinc/tvm_ffi -Iinc/cuda -O1 {DEFINE}")
    (objects,) = entries(cache_dir, "objects")
    assert ninja_value(objects, flags).endswith(f" {DEFINE}")

    # The runtime sees the module's headers: the same include directories, CUDA's included.
    def includes(entry: Path, variable: str) -> list[str]:
        return [flag for flag in ninja_value(entry, variable).split() if flag.startswith("-I")]

    # (Named through links in each build directory: see cpp._dir_links.)
    assert includes(runtime, "cflags") == includes(objects, flags)
    for flag in includes(runtime, "cflags"):
        assert os.readlink(runtime / flag[2:]) == os.readlink(objects / flag[2:])
    assert (runtime / "inc" / "cuda" / "cuda.h").is_file()
    (link,) = entries(cache_dir, "jit_sep")
    assert f" {runtime / 'cuda_launcher.o'} " in (link / "build.ninja").read_text()
    # The module's object calls the run-once functions; the runtime object defines them.
    wrapper, defined = nm(objects / "objects.o"), nm(runtime / "cuda_launcher.o")
    assert " U tvm::ffi::CubinModule::Load(" in wrapper
    for name in (
        "CubinModule::Load(",
        "CubinModule::GetKernel(",
        "details::InspectImage(",
        "details::CubinArch",
        "details::DriverApi::Load()",
        "details::DriverErrorText",
    ):
        assert f" T tvm::ffi::{name}" in defined, name
        assert f" T tvm::ffi::{name}" not in wrapper and f" W tvm::ffi::{name}" not in wrapper


def test_second_module_reuses_the_runtime(cache_dir):
    build("jit_sep_a")
    (runtime,) = entries(cache_dir, "cuda_launcher")
    before = (runtime / "cuda_launcher.o").stat()
    other = WRAPPER + "int other() { return 2; }\n"
    path = cpp.build_inline(
        "jit_sep_b", cpp_sources=other, functions=["load_bytes", "other"], embed_cubin={"k": PTX}
    )
    assert entries(cache_dir, "cuda_launcher") == [runtime]
    after = (runtime / "cuda_launcher.o").stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    (link,) = entries(cache_dir, "jit_sep_b")
    assert Path(path) == link / "jit_sep_b.so"
    assert f" {runtime / 'cuda_launcher.o'} " in (link / "build.ninja").read_text()


def test_cflags_key_the_runtime(cache_dir):
    build("jit_sep")
    build("jit_sep", extra_cuda_cflags=["-DJIT_ABI_CHOICE=1"])
    first, second = entries(cache_dir, "cuda_launcher")
    flags = {ninja_value(entry, "cflags").rsplit("-Iinc/cuda ", 1)[1] for entry in (first, second)}
    assert flags == {f"-O1 {DEFINE}", f"-O1 -DJIT_ABI_CHOICE=1 {DEFINE}"}
    assert len(entries(cache_dir, "jit_sep")) == 2


@pytest.mark.parametrize("case", ["object", "build_directory", "no_launcher", "mixed_flags"])
def test_header_only_where_separate_does_not_apply(cache_dir, case, tmp_path):
    if case == "object":
        build("jit_ho", output=tmp_path / "wrapper.o")
        entry = entries(cache_dir, "objects")[0]
    elif case == "build_directory":
        build("jit_ho", build_directory=tmp_path / "build")
        entry = tmp_path / "build"
    elif case == "no_launcher":  # the launcher through a header of the user's: not seen
        (tmp_path / "inc").mkdir()
        (tmp_path / "inc" / "mine.h").write_text("#include <tvm/ffi/extra/cuda/cubin_launcher.h>\n")
        source = WRAPPER.replace("tvm/ffi/extra/cuda/cubin_launcher.h", "mine.h")
        build("jit_ho", source, extra_include_paths=[str(tmp_path / "inc")])
        entry = entries(cache_dir, "objects")[0]
    else:  # C++ and CUDA sources with other flags: no one set of flags for the runtime
        cpp.build_inline(
            "jit_ho",
            cpp_sources=WRAPPER,
            cuda_sources="int cuda_side() { return 1; }\n",
            functions=["load_bytes"],
            extra_cflags=["-DJIT_ONLY_CXX=1"],
            embed_cubin={"kernels": PTX},
        )
        entry = entries(cache_dir, "objects")[0]
    assert entries(cache_dir, "cuda_launcher") == []
    assert DEFINE not in (entry / "build.ninja").read_text()


def test_runtime_compile_error_is_a_build_error(cache_dir, install_cxx, tmp_path):
    refuse = tmp_path / "refuse"
    refuse.touch()
    install_cxx(
        "c++",
        "#!/bin/sh\n"
        f'case "$*" in *launcher_part2.cc*) if [ -e {refuse} ]; then\n'
        '  echo "launcher_part2.cc:2:1: error: part 2 refused" >&2; exit 1; fi;; esac\n'
        'exec c++ "$@"\n',
    )
    with pytest.raises(cpp.BuildError) as info:
        build("jit_sep")
    lines = str(info.value).splitlines()
    assert lines[0] == "launcher_part2.cc:2:1: error: part 2 refused"
    (runtime,) = entries(cache_dir, "cuda_launcher")
    assert lines[1] == (
        f"building module 'jit_sep (its CUDA launcher runtime)' in {runtime} failed"
    )
    # Nothing was published: neither the runtime nor the module that needs it.
    assert not (runtime / "cuda_launcher.o").exists()
    assert not any(entry.glob("*.so") for entry in entries(cache_dir, "jit_sep"))
    refuse.unlink()  # the same compiler, so the same entries: cleaned and built again
    build("jit_sep")
    assert (runtime / "cuda_launcher.o").is_file()
    assert entries(cache_dir, "cuda_launcher") == [runtime]


HIT_SCRIPT = f"""
import sys
from tvm_ffi import cpp
mod = cpp.load_inline("jit_sep_hit", cuda_sources={WRAPPER!r}, functions=["load_bytes"],
                      embed_cubin={{"kernels": {PTX!r}}})
try:
    mod.load_bytes(b"\\x12\\x34\\x56\\x78")
except ValueError as err:
    print(str(err).splitlines()[0])
    print(err.__notes__[-1].splitlines()[-1])
print(sorted(m for m in sys.modules if m in ("tvm_ffi.cpp._cached_build", "tvm_ffi.cpp._launcher")))
"""


def test_cache_hit_in_a_fresh_process(cache_dir):
    def run() -> list[str]:
        env = {**os.environ, "TVM_FFI_CUDA_ARCH_LIST": "9.0"}
        proc = subprocess.run(
            [sys.executable, "-c", HIT_SCRIPT], capture_output=True, text=True, env=env
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.splitlines()

    first = run()
    (link,) = entries(cache_dir, "jit_sep_hit")
    message = bad_image(link / "jit_sep_hit.so")
    assert first == [*message, "['tvm_ffi.cpp._cached_build', 'tvm_ffi.cpp._launcher']"]
    assert run() == [*message, "[]"]  # the index answered: no build code imported
    (record,) = (cache_dir / "hits").iterdir()
    lines = record.read_text().splitlines()
    assert lines[0] == f"{link.name}/jit_sep_hit.so"
    cxx = os.path.realpath(_toolchain.find_cxx())
    # The compiler is checked: path as found, resolved path, size, mtime.
    assert any(line.split("\t")[1] == cxx for line in lines[2:])


def test_modules_built_at_once_share_one_runtime(cache_dir):
    paths = cpp.build_inline_many(
        [
            {
                "name": f"jit_sep_{i}",
                "cuda_sources": WRAPPER + f"int tag() {{ return {i}; }}\n",
                "functions": ["load_bytes", "tag"],
                "embed_cubin": {"kernels": PTX},
            }
            for i in range(2)
        ]
    )
    (runtime,) = entries(cache_dir, "cuda_launcher")
    for i, path in enumerate(paths):
        (link,) = entries(cache_dir, f"jit_sep_{i}")
        assert Path(path) == link / f"jit_sep_{i}.so"
        assert f" {runtime / 'cuda_launcher.o'} " in (link / "build.ninja").read_text()
