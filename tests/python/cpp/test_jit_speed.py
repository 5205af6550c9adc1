"""Issue 11: wrappers compiled by the host compiler (nvcc on refusal), the two-level cache
(a new image relinks only), and many modules built by one call. No GPU needed."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest

from helpers import tools
from tvm_ffi import cpp
from tvm_ffi.cpp import _hit_index, _host_cuda, _keys, _toolchain

needs_nvcc = pytest.mark.skipif(not tools.has_nvcc(), reason="needs the CUDA toolkit (nvcc)")

# A launcher wrapper as the guide writes it: host code only.
WRAPPER = textwrap.dedent(
    """
    #include <tvm/ffi/string.h>
    extern "C" const char __tvm_ffi__cubin_blob[];
    extern "C" const char __tvm_ffi__cubin_blob_end[];
    tvm::ffi::Bytes blob() {
      cudaStream_t stream = nullptr;  // cuda_runtime.h comes first, as under nvcc
      (void)stream;
      return tvm::ffi::Bytes(__tvm_ffi__cubin_blob,
                             __tvm_ffi__cubin_blob_end - __tvm_ffi__cubin_blob);
    }
    """
)


def _ptx(tag: str) -> bytes:
    return f"// {tag}\n.version 8.0\n.target sm_90\n.address_size 64\n".encode()


def _entries(cache_dir: Path, pattern: str) -> set[str]:
    return {p.name for p in cache_dir.glob(pattern)}


def _compiled_by_nvcc(obj: Path) -> bool:
    # nvcc registers the device code of a .cu with the runtime; a host compile cannot.
    symbols = subprocess.run(["nm", str(obj)], capture_output=True, text=True, check=True).stdout
    return "__cudaRegisterLinkedBinary" in symbols or "__cudaRegisterFatBinary" in symbols


@pytest.fixture(autouse=True)
def one_cuda_arch(monkeypatch):
    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", "9.0")


def test_host_flags_take_flags_both_compilers_read_and_refuse_the_rest():
    prelude = ["-include", "tvm/ffi/function.h"]
    flags = [*prelude, "-DX=1", "-O3", "-Xcompiler", "-Wall,-g"]
    assert _host_cuda.host_flags("int f();", flags) == [
        *prelude, "-DX=1", "-O3", "-Wall", "-g",
    ]  # fmt: skip
    assert _host_cuda.host_flags("int f();", ["--use_fast_math"]) is None
    assert _host_cuda.host_flags("int f();", ["-Xcompiler"]) is None
    for device_code in ("__global__ void k() {}", "k<<<1, 1>>>();", "__shared__ int s;",
                        "int i = threadIdx.x;", '#include "kernels.cuh"'):  # fmt: skip
        assert _host_cuda.host_flags(device_code, []) is None, device_code


@needs_nvcc
def test_wrapper_in_cuda_sources_is_compiled_by_the_host_compiler(cache_dir, capfd):
    mod = cpp.load_inline(
        "jit_host_wrapper", cuda_sources=WRAPPER, functions=["blob"],
        embed_cubin={"blob": _ptx("one")}, verbose=True,
    )  # fmt: skip
    assert bytes(mod.blob()) == _ptx("one")
    out = capfd.readouterr().err
    assert "\ntvm_ffi.cpp: cuda.cu needs nvcc\n" not in out
    (objects,) = cache_dir.glob("objects_*")
    # One source: its object is the entry's output, with no merge step.
    assert "build obj/objects.o: cudahost cuda.cu" in (objects / "build.ninja").read_text()
    assert not _compiled_by_nvcc(objects / "objects.o")


@needs_nvcc
def test_device_code_the_scan_misses_falls_back_to_nvcc(cache_dir, tmp_path, capfd):
    # The kernel hides in a header: the scan sees no device code, the host compile meets
    # the poisoned __global__ and fails, and the same step builds the source with nvcc.
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "kernels.h").write_text(
        "__global__ void hidden_kernel(float* x) { x[threadIdx.x] += 1.0f; }\n"
    )
    source = '#include "kernels.h"\nint answer() { return 42; }\n'
    assert _host_cuda.host_flags(source, []) == []
    mod = cpp.load_inline(
        "jit_fallback", cuda_sources=source, functions=["answer"],
        extra_include_paths=[str(tmp_path / "inc")], verbose=True,
    )  # fmt: skip
    assert mod.answer() == 42
    assert "\ntvm_ffi.cpp: cuda.cu needs nvcc\n" in capfd.readouterr().err
    (entry,) = cache_dir.glob("jit_fallback_*")
    assert _compiled_by_nvcc(entry / "obj" / "cuda.o")


@needs_nvcc
def test_source_with_a_kernel_goes_to_nvcc_directly(cache_dir):
    source = "__global__ void k(float* x) { x[threadIdx.x] = 1.0f; }\nint one() { return 1; }\n"
    assert cpp.load_inline("jit_kernel_src", cuda_sources=source, functions=["one"]).one() == 1
    (entry,) = cache_dir.glob("jit_kernel_src_*")
    assert "build obj/cuda.o: nvcc cuda.cu" in (entry / "build.ninja").read_text()


CPP_WRAPPER = WRAPPER.replace("cudaStream_t stream", "void* stream")


def _build(name: str, image: bytes, **kwargs) -> str:
    return cpp.build_inline(
        name, cpp_sources=CPP_WRAPPER, functions=["blob"], embed_cubin={"blob": image}, **kwargs
    )


def _object_stamp(cache_dir: Path) -> dict[str, int]:
    # Object entries are shared by module names: each test has a cache of its own.
    return {p.parent.name: p.stat().st_mtime_ns for p in cache_dir.glob("objects_*/objects.o")}


def test_new_image_relinks_without_recompiling(cache_dir):
    first = _build("jit_two_level", _ptx("one"))
    objects = _object_stamp(cache_dir)
    assert len(objects) == 1
    second = _build("jit_two_level", _ptx("two"))
    assert second != first
    assert _object_stamp(cache_dir) == objects  # not rebuilt, not touched
    assert len(_entries(cache_dir, "jit_two_level_*")) == 2  # one link entry per image
    assert _build("jit_two_level", _ptx("one")) == first  # the first entry is a hit


def test_flags_rebuild_the_objects(cache_dir):
    _build("jit_keys", _ptx("one"))
    _build("jit_keys", _ptx("one"), extra_cflags=["-DKEYS=1"])
    assert len(_object_stamp(cache_dir)) == 2
    assert len(_entries(cache_dir, "jit_keys_*")) == 2


def test_modules_of_one_wrapper_share_its_object(cache_dir):
    _build("jit_variant_a", _ptx("a"))
    objects = _object_stamp(cache_dir)
    _build("jit_variant_b", _ptx("b"))  # another module name, another image: a relink
    assert _object_stamp(cache_dir) == objects
    assert len(_entries(cache_dir, "jit_variant_*")) == 2


def test_ldflags_relink_only(cache_dir):
    _build("jit_ld", _ptx("one"))
    _build("jit_ld", _ptx("one"), extra_ldflags=["-Wl,--as-needed"])
    assert len(_object_stamp(cache_dir)) == 1
    assert len(_entries(cache_dir, "jit_ld_*")) == 2


def test_header_change_rebuilds_objects_and_link(cache_dir, monkeypatch):
    _build("jit_hdr", _ptx("one"))
    monkeypatch.setattr(_hit_index, "package_fingerprint", lambda include_dir: "edited")
    # The module key takes the headers' content (the fingerprint above sends the hit index
    # the full way; this stands for the edited bytes).
    monkeypatch.setattr(_keys, "package_digest", lambda root: "edited")
    _build("jit_hdr", _ptx("one"))
    assert len(_object_stamp(cache_dir)) == 2
    assert len(_entries(cache_dir, "jit_hdr_*")) == 2


def test_compiler_change_rebuilds_objects_and_link(cache_dir, install_cxx):
    _build("jit_cxx", _ptx("one"))
    log = install_cxx("wrapped-c++", '#!/bin/sh\necho "$@" >> "$JIT_LOG"\nexec c++ "$@"\n')
    _build("jit_cxx", _ptx("one"))
    assert len(_object_stamp(cache_dir)) == 2
    assert len(_entries(cache_dir, "jit_cxx_*")) == 2
    commands = log.read_text()
    assert " -c main.cpp -o obj/objects.o.tmp\n" in commands and "-shared " in commands


def test_invalid_image_is_a_build_error_naming_it():
    with pytest.raises(cpp.BuildError, match=r"^cannot embed 'blob': not a CUBIN, PTX or fatbin"):
        _build("jit_bad_image", b"\x01\x02junk")


def test_many_modules_in_one_call_in_order_with_errors_per_module(monkeypatch):
    monkeypatch.setenv("MAX_JOBS", "2")
    modules = [
        {"name": f"jit_many_{i}", "cpp_sources": f"int f(int a) {{ return a + {i}; }}",
         "functions": ["f"]}
        for i in range(4)
    ]  # fmt: skip
    assert [m.f(10) for m in cpp.load_inline_many(modules)] == [10, 11, 12, 13]
    broken = [*modules[:2], {"name": "jit_many_bad", "cpp_sources": "int f( {"}, {"name": 3}]
    with pytest.raises(cpp.ManyBuildError, match=r"^2 of 4 modules failed to build:\n") as info:
        cpp.load_inline_many(broken)
    assert sorted(info.value.errors) == [2, 3]
    assert isinstance(info.value.errors[2], cpp.BuildError)
    assert isinstance(info.value.errors[3], TypeError)
    assert [m.f(1) for m in info.value.results[:2]] == [1, 2]
    assert info.value.results[2:] == [None, None]


def test_max_jobs_must_be_a_positive_int(monkeypatch):
    monkeypatch.setenv("MAX_JOBS", "0")
    with pytest.raises(ValueError, match=r"^MAX_JOBS must be a positive integer \(got '0'\)$"):
        cpp.build_inline_many([{"name": "x", "cpp_sources": "int f();"}])
    with pytest.raises(ValueError, match=r"^build_inline_many: max_jobs must be an int >= 1"):
        cpp.build_inline_many([], max_jobs=0)


HIT_SCRIPT = """
import sys
before = set(sys.modules)
from tvm_ffi import cpp
mod = cpp.load_inline("jit_fresh_hit", cpp_sources="int add(int a, int b) { return a + b; }",
                      functions="add")
assert mod.add(2, 3) == 5
print(sorted(m for m in sys.modules if m.startswith("tvm_ffi")))
# Modules of the standard library that only a build needs (what site imported is not ours).
build_only = {"dataclasses", "fcntl", "hashlib", "logging", "pathlib", "re", "shlex", "threading",
              "typing"}
print(sorted(build_only & (set(sys.modules) - before)))
"""

# Exactly what a cache hit imports of ours: no tool discovery (_toolchain, _arch, _cuda_toolkit,
# _ninja, _cached_build), no load_module checks for foreign libraries (_old_abi) and no
# logging glue (_log); tvm_ffi.module comes with the Module class the core gives the library.
HIT_MODULES = (
    "['tvm_ffi', 'tvm_ffi._core', 'tvm_ffi._elf', 'tvm_ffi._private_dir', "
    "'tvm_ffi._version', 'tvm_ffi.config', 'tvm_ffi.cpp', 'tvm_ffi.cpp._cache', "
    "'tvm_ffi.cpp._hit_index', 'tvm_ffi.cpp._inline', 'tvm_ffi.cpp._spec', 'tvm_ffi.module']"
)


def _run_fresh(script: str, *, bare: bool = False, **env: str) -> list[str]:
    """Run ``script`` in a new interpreter; ``bare``: without site (-S), so that nothing
    but the interpreter's own start has imported a module before the script."""
    import os
    import sys

    import tvm_ffi

    options = []
    if bare:
        options = ["-S"]
        env["PYTHONPATH"] = os.path.dirname(os.path.dirname(tvm_ffi.__file__))
    proc = subprocess.run(
        [sys.executable, *options, "-c", script],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_cache_hit_in_a_fresh_process_finds_no_tools(cache_dir):
    first = _run_fresh(HIT_SCRIPT)  # builds: the full way, which leaves the index record
    assert "'tvm_ffi.cpp._cached_build'" in first[0]
    assert "'tvm_ffi.cpp._toolchain'" in first[0]
    (record,) = (cache_dir / "hits").iterdir()
    library = cache_dir / record.read_text().split("\n", 1)[0]  # the record names the entry
    assert library.name == "jit_fresh_hit.so" and library.is_file()
    assert _run_fresh(HIT_SCRIPT, bare=True) == [HIT_MODULES, "[]"]
    assert _run_fresh(HIT_SCRIPT) == [HIT_MODULES, "[]"]
    assert [p.name for p in (cache_dir / "hits").iterdir()] == [record.name]


CUDA_HIT_SCRIPT = r'''
import sys
from tvm_ffi import cpp
wrapper = """
#include <tvm/ffi/string.h>
extern "C" const char __tvm_ffi__cubin_blob[];
extern "C" const char __tvm_ffi__cubin_blob_end[];
tvm::ffi::Bytes blob() {
  return tvm::ffi::Bytes(__tvm_ffi__cubin_blob, __tvm_ffi__cubin_blob_end - __tvm_ffi__cubin_blob);
}
"""
image = b"// fresh\n.version 8.0\n.target sm_90\n.address_size 64\n"
mod = cpp.load_inline("jit_fresh_cuda_hit", cuda_sources=wrapper, functions="blob",
                      embed_cubin={"blob": image}, arch=ARCH)
assert bytes(mod.blob()).startswith(image), bytes(mod.blob())
print(sorted(m for m in sys.modules if m.startswith("tvm_ffi.cpp")))
'''


@needs_nvcc
@pytest.mark.parametrize("arch", [None, "9.0"])
def test_cuda_wrapper_hit_in_a_fresh_process(cache_dir, arch):
    # The guide's case: a wrapper in cuda_sources and an embedded image. The hit takes the
    # index (the architectures come from TVM_FFI_CUDA_ARCH_LIST, or arch=, not a GPU).
    script = CUDA_HIT_SCRIPT.replace("ARCH", repr(arch))
    first = _run_fresh(script, TVM_FFI_CUDA_ARCH_LIST="9.0")
    assert "'tvm_ffi.cpp._cached_build'" in first[0]
    (record,) = (cache_dir / "hits").iterdir()
    hit = _run_fresh(script, TVM_FFI_CUDA_ARCH_LIST="9.0")
    assert "'tvm_ffi.cpp._cached_build'" not in hit[0]
    # arch= is checked by _arch: that module comes with it, and only then.
    assert ("'tvm_ffi.cpp._arch'" in hit[0]) == (arch is not None)
    assert [p.name for p in (cache_dir / "hits").iterdir()] == [record.name]


def test_index_sees_a_changed_compiler_at_the_same_path(cache_dir, install_cxx, tmp_path):
    script = '#!/bin/sh\necho "$@" >> "$JIT_LOG"\nexec c++ "$@"\n'
    log = install_cxx("c++", script)
    cpp.build_inline("jit_same_path", cpp_sources="int f() { return 1; }")
    assert log.read_text().count("--version") == 1
    _toolchain._identity_memo.clear()  # as in a fresh process
    cpp.build_inline("jit_same_path", cpp_sources="int f() { return 1; }")
    assert log.read_text().count("--version") == 1  # the index answered
    (tmp_path / "bin" / "c++").write_text(script + "# upgraded\n")  # same path, new binary
    cpp.build_inline("jit_same_path", cpp_sources="int f() { return 1; }")
    # The record's stamp of the compiler no longer matches: the full way asks it who it
    # is; the same --version text, but a script's text is part of its identity (issue 20,
    # item 6): a new entry, compiled.
    assert log.read_text().count("--version") == 2
    assert log.read_text().count(" -c main.cpp ") == 2


@pytest.mark.parametrize("damage", ["empty", "elsewhere", "link", "outside"])
def test_a_bad_index_record_sends_the_lookup_the_full_way(cache_dir, damage):
    source = "int f() { return 7; }"
    cpp.build_inline("jit_record", cpp_sources=source, functions=["f"])
    (record,) = (cache_dir / "hits").iterdir()
    if damage == "empty":  # a record torn by a crash (records are not synced)
        record.write_text("")
    elif damage == "elsewhere":  # an entry that no longer holds its library
        record.write_text("jit_record_gone/jit_record.so\n" + record.read_text().split("\n", 1)[1])
    elif damage == "link":  # never followed
        target = cache_dir / "elsewhere"
        target.write_text(record.read_text())
        record.unlink()
        record.symlink_to(target)
    else:  # a path out of the cache is not taken
        record.write_text("../outside.so\n" + record.read_text().split("\n", 1)[1])
    assert cpp.load_inline("jit_record", cpp_sources=source, functions=["f"]).f() == 7
    assert not record.is_symlink() and record.read_text().startswith("jit_record_")
