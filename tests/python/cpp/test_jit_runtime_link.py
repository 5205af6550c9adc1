"""A JIT module links the package's libtvm_ffi.so (-ltvm_ffi): DT_NEEDED names the runtime by
its soname and no rpath is written, so the module binds to whichever libtvm_ffi.so the process
already holds (ours, loaded by tvm_ffi._core, or apache-tvm-ffi's), and runs in apache-tvm-ffi.
Its key names the C ABI, so that no entry built for ABI version 3 is ever taken."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

import tvm_ffi
from tvm_ffi import cpp
from tvm_ffi._elf import needed_libraries
from tvm_ffi.cpp import _hit_index

ADD = """
int64_t add(int64_t a, int64_t b) { return a + b; }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(add, add);
"""


def test_module_needs_the_runtime_by_its_soname_without_a_path():
    path = Path(cpp.build_inline("jit_runtime_link", cpp_sources=ADD))
    assert "libtvm_ffi.so" in needed_libraries(path)
    dynamic = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True,
                             check=True).stdout  # fmt: skip
    assert "RPATH" not in dynamic and "RUNPATH" not in dynamic
    # Linked through the build directory's link to the package's lib folder: the command is
    # the same for every install (the key holds it).
    ninja = (path.parent / "build.ninja").read_text()
    link = (
        "-Wl,-z,defs -Wl,--exclude-libs,ALL -Llib/tvm_ffi -Wl,--no-as-needed -ltvm_ffi -ldl "
        "-pthread"
    )
    assert re.search(rf"^ldflags = (-fuse-ld=\w+ )?{link}$", ninja, re.M), ninja
    assert tvm_ffi.load_module(str(path)).add(2, 40) == 42


def test_module_runs_in_apache_tvm_ffi():
    from helpers import apache_wheel

    wheel = apache_wheel.require_wheel()
    tag = apache_wheel.python_tag(wheel)
    python = apache_wheel.find_python(tag) if tag else None
    if python is None:
        pytest.skip(f"no Python {tag} to import {wheel.name}")
    path = cpp.build_inline("jit_in_apache", cpp_sources=ADD)
    code = (
        "import tvm_ffi\n"
        f"m = tvm_ffi.load_module({str(path)!r})\n"
        "print(m.add(2, 40))\n"
        "maps = open('/proc/self/maps').read()\n"
        "print(sorted({l.split()[-1] for l in maps.splitlines()\n"
        "              if l.endswith('/libtvm_ffi.so')}))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(apache_wheel.unpacked(wheel)))
    proc = subprocess.run([python, "-c", code], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    answer, runtimes = proc.stdout.splitlines()
    assert answer == "42"
    assert eval(runtimes) == [str(apache_wheel.runtime_path(wheel))]


def test_the_c_abi_changes_the_key(monkeypatch):
    first = Path(cpp.build_inline("jit_abi_key", cpp_sources=ADD))
    monkeypatch.setattr(_hit_index, "ABI", "ABI version 3")
    # Another entry (the module key), not only another record of the hit index.
    second = Path(cpp.build_inline("jit_abi_key", cpp_sources=ADD))
    assert second.parent != first.parent


# A module on the C ABI alone: C, no tvm/ffi header, no call into the runtime.
C_ONLY = """
#include <stdint.h>
typedef struct { int32_t type_index; uint32_t zero_padding; int64_t v_int64; } Value;
__attribute__((visibility("default"))) int __tvm_ffi_twice(
    void* self, const Value* args, int32_t num_args, Value* result) {
  result->type_index = 1; /* kTVMFFIInt */
  result->zero_padding = 0;
  result->v_int64 = 2 * args[0].v_int64;
  return 0;
}
"""


def test_c_module_without_runtime_calls_still_needs_the_runtime(tmp_path):
    # Linked --as-needed (the default of Debian's and Ubuntu's compilers), such a module lost
    # DT_NEEDED libtvm_ffi.so, and load_module refused it as a library of the previous ABI.
    source = tmp_path / "twice.c"
    source.write_text(C_ONLY)
    path = Path(cpp.build(name="jit_c_only", sources=[str(source)]))
    assert "libtvm_ffi.so" in needed_libraries(path)
    assert tvm_ffi.load_module(str(path)).twice(21) == 42
