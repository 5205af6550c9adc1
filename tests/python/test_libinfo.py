"""libtvm_ffi.so: shipped in the package, found by tvm_ffi.libinfo, loaded by _core only when a
library or the registry is first used, and linkable with `-L<dir> -ltvm_ffi`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import tvm_ffi
from helpers import SOURCES
from tvm_ffi import _apache_abi, _elf, libinfo

OBJECTS_LIB = SOURCES / "objects_lib.cc"
INCLUDE = Path(__file__).resolve().parents[2] / "include"


def _run(code: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, env=env
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_find_libtvm_ffi_is_the_packaged_library():
    path = Path(libinfo.find_libtvm_ffi())
    assert path == Path(tvm_ffi.__file__).parent / "lib" / "libtvm_ffi.so"
    assert path.is_file()
    defined = {sym.name for sym in _elf.symbols(path, dynamic=True) if sym.defined}
    assert {
        "TVMFFIFunctionSetGlobal",
        "TVMFFIFunctionGetGlobal",
        "TVMFFIFunctionListGlobalNames",
        "TVMFFITypeSetMember",
        "TVMFFITypeGetMember",
        "TVMFFILibraryPathOf",
        "TVMFFIInitErrorRecord",
        "TVMFFIInitErrorsTake",
    } <= defined


def test_nothing_loads_at_import_and_load_module_loads_the_registry(objects_lib):
    out = _run(
        "import tvm_ffi, tvm_ffi._core\n"
        "maps = lambda: 'libtvm_ffi.so' in open('/proc/self/maps').read()\n"
        "print(maps())\n"
        f"m = tvm_ffi.load_module({str(objects_lib)!r})\n"
        "print(maps())\n"
        "print(m.register_things(), m.call_global('test.add', 1, 2))\n"
    )
    assert out.split() == ["False", "True", "0", "3"]


def test_a_library_linked_with_ltvm_ffi_loads(tmp_path):
    cxx = os.environ.get("CXX", "c++")
    if shutil.which(cxx) is None:
        pytest.skip(f"needs a C++ compiler ({cxx} not found)")
    out = tmp_path / "liblinked.so"
    libdir = os.path.dirname(libinfo.find_libtvm_ffi())
    # --no-as-needed: weak references alone would not make the linker record the library.
    cmd = [cxx, "-shared", "-fPIC", "-std=c++17", f"-I{INCLUDE}", str(OBJECTS_LIB), "-o", str(out)]
    cmd += [f"-L{libdir}", "-Wl,--no-as-needed", "-ltvm_ffi"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "libtvm_ffi.so" in _elf.needed_libraries(out)
    assert _apache_abi.apache_evidence(str(out)) is None  # our registry's symbols are no evidence
    # No rpath nor LD_LIBRARY_PATH: the copy _core loaded satisfies the DT_NEEDED by soname.
    got = _run(
        "import tvm_ffi\n"
        f"m = tvm_ffi.load_module({str(out)!r})\n"
        "tvm_ffi.register_global_func('py.neg', lambda x: -x)\n"
        "print(m.call_global('py.neg', 5))\n"
    )
    assert got.split() == ["-5"]
