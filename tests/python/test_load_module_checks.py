"""tvm_ffi.load_module on files it must not hand to the dynamic loader as they are.

Each case once crashed (SIGBUS), blocked, misreported or silently cut the path; each now
ends in a clear error naming the file, or works. Loads that could crash run in a child
process, so a regression fails the test instead of killing the test run.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import tvm_ffi

SOURCE = r"""
#include <tvm/ffi/c_api.h>
extern "C" __attribute__((visibility("default"))) int __tvm_ffi_version(
    const TVMFFICallContext*, const TVMFFIAny*, int32_t n, TVMFFIResult* r) {
  static TVMFFIFunctionInfo info = {TVM_FFI_ABI_VERSION, 0, "version", "version() -> int"};
  r->owner = 0;
  if (n == TVM_FFI_QUERY_INFO) {
    r->value.type_code = kTVMFFIOpaquePtr;
    r->value.v_ptr = &info;
    return 0;
  }
  r->value.type_code = kTVMFFIInt;
  r->value.v_int64 = VERSION;
  return 0;
}
// Bulk, so that the library is larger than every truncation below.
extern "C" __attribute__((visibility("default"))) const char padding[32768] = {1};
"""

CHILD = textwrap.dedent(
    """
    import sys, tvm_ffi
    try:
        print(tvm_ffi.load_module(sys.argv[1]).version())
    except OSError as err:
        print(type(err).__name__, err)
    """
)


def _child_load(path: Path) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    return proc.stdout


@pytest.fixture(scope="module")
def library(build_library):
    return build_library("checked", SOURCE, flags=["-DVERSION=1"])


@pytest.mark.parametrize("size", [0, 100, 1000, 24000])
def test_truncated_library_is_an_error_not_sigbus(library, tmp_path, size):
    """Issue 9, item 2: cut to 1000-24000 bytes, dlopen died with SIGBUS (exit 135)."""
    cut = tmp_path / "libcut.so"
    shutil.copy(library, cut)
    assert cut.stat().st_size > 24000
    os.truncate(cut, size)
    reason = (
        "the file is empty"
        if size == 0
        else rf"truncated: the file has {size} bytes but its headers and segments need \d+ "
        r"\(a write or copy was cut short\)"
    )
    out = _child_load(cut)
    assert re.fullmatch(rf"OSError cannot load library '{re.escape(str(cut))}': {reason}\n", out)


def test_library_for_another_cpu_says_so(library, tmp_path):
    """Issue 9, item 10: glibc reports "No such file or directory" for a file that exists."""
    other = tmp_path / "libarm.so"
    data = bytearray(library.read_bytes())
    host_machine = struct.unpack_from("<H", data, 18)[0]
    struct.pack_into("<H", data, 18, 183)  # EM_AARCH64
    other.write_bytes(data)
    names = {62: "x86-64", 183: "AArch64"}
    if host_machine == 183:  # on an AArch64 host, make it an x86-64 library
        struct.pack_into("<H", data, 18, 62)
        other.write_bytes(data)
    patched = 62 if host_machine == 183 else 183
    assert _child_load(other) == (
        f"OSError cannot load library '{other}': built for another CPU: "
        f"{names[patched]} (ELF machine {patched}), 64-bit little-endian; this process runs "
        f"on {names.get(host_machine, 'machine')} (ELF machine {host_machine}), 64-bit "
        "little-endian\n"
    )


@pytest.mark.parametrize("path", ["lib\0evil.so", b"lib\0evil.so"], ids=["str", "bytes"])
def test_path_with_nul_byte_is_a_value_error(path):
    """The path was once cut at the NUL, loading another file than the one named."""
    with pytest.raises(ValueError) as info:
        tvm_ffi.load_module(path)
    assert str(info.value) == f"load_module: the path holds a NUL byte: {path!r}"


def test_fifo_is_refused_without_blocking(tmp_path):
    """A FIFO once blocked load_module forever (waiting for a writer)."""
    fifo = tmp_path / "libfifo.so"
    os.mkfifo(fifo)
    assert _child_load(fifo) == (
        f"OSError cannot load library '{fifo}': not a regular file (a FIFO)\n"
    )


def test_directory_is_refused(tmp_path):
    with pytest.raises(OSError) as info:
        tvm_ffi.load_module(tmp_path)
    assert str(info.value) == f"cannot load library '{tmp_path}': not a regular file (a directory)"


def test_object_file_is_not_a_shared_library(tmp_path):
    cxx = os.environ.get("CXX", "c++")
    src = tmp_path / "obj.cc"
    src.write_text("int f() { return 1; }\n")
    obj = tmp_path / "obj.o"
    subprocess.run([cxx, "-c", str(src), "-o", str(obj)], check=True)
    with pytest.raises(OSError) as info:
        tvm_ffi.load_module(obj)
    assert str(info.value) == (
        f"cannot load library '{obj}': not a shared library: an object file (.o)"
    )


RELOAD_UNDER_NOEXEC_TMPDIR = textwrap.dedent(
    """
    import sys
    from tvm_ffi import cpp
    source = "int version() {{ return {}; }}"
    for version in (1, 2):
        mod = cpp.load_inline("jit_noexec", cpp_sources=source.format(version),
                              functions=["version"], build_directory=sys.argv[1])
        print(mod.version())
    """
)


def test_reload_works_when_tmpdir_is_noexec(tmp_path):
    """Issue 9, item 10: the private copy of a rebuilt library went to $TMPDIR, and a
    noexec TMPDIR made the reload fail ("failed to map segment from shared object")."""
    unshare = shutil.which("unshare")
    if unshare is None or os.geteuid() != 0:
        pytest.skip("needs root and unshare(1) to mount a noexec tmpfs")
    tmpdir = tmp_path / "noexec"
    tmpdir.mkdir()
    build_dir = tmp_path / "build"
    script = 'mount -t tmpfs -o noexec,size=16m tmpfs "$1" && shift && exec "$@"'
    argv = [sys.executable, "-c", RELOAD_UNDER_NOEXEC_TMPDIR, str(build_dir)]
    env = {
        **os.environ,
        "TMPDIR": str(tmpdir),
        "TVM_FFI_CACHE_DIR": str(tmp_path / "cache"),
    }
    proc = subprocess.run(
        [unshare, "-m", "sh", "-c", script, "sh", str(tmpdir), *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "1\n2\n"
    assert not [p.name for p in build_dir.iterdir() if p.name.startswith("tvm_ffi_reload_")]


LOAD_FROM_NOEXEC_CACHE = textwrap.dedent(
    """
    from tvm_ffi import cpp
    try:
        cpp.load_inline("jit_noexec_cache", cpp_sources="int f() { return 1; }", functions=["f"])
    except OSError as err:
        print(err)
    """
)


def test_library_on_noexec_mount_says_noexec(tmp_path):
    """Issue 20, item 11: a cache on a noexec mount failed with the loader's "failed to map
    segment from shared object", with no word of noexec or of what to do."""
    unshare = shutil.which("unshare")
    if unshare is None or os.geteuid() != 0:
        pytest.skip("needs root and unshare(1) to mount a noexec tmpfs")
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    script = 'mount -t tmpfs -o noexec,mode=700,size=16m tmpfs "$1" && shift && exec "$@"'
    proc = subprocess.run(
        [unshare, "-m", "sh", "-c", script, "sh", str(cache),
         sys.executable, "-c", LOAD_FROM_NOEXEC_CACHE],
        env={**os.environ, "TVM_FFI_CACHE_DIR": str(cache)},
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert re.fullmatch(
        rf"cannot load library '{re.escape(str(cache))}/jit_noexec_cache_\w+/jit_noexec_cache"
        r"\.so': the file system holding it is mounted noexec, so no library on it can be "
        r"mapped for execution; build or copy it elsewhere \(for tvm_ffi\.cpp: set "
        r"TVM_FFI_CACHE_DIR, or build_directory, to a directory on another file system\)\n",
        proc.stdout,
    ), proc.stdout
