"""libtvm_ffi.so: shipped in the package, found by tvm_ffi.libinfo under apache-tvm-ffi's names,
loaded with tvm_ffi._core (not at `import tvm_ffi`), and linkable with `-L<dir> -ltvm_ffi`: a
library linked so records the runtime by its soname and binds to the copy the core loaded."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import tvm_ffi
from tvm_ffi import _elf, libinfo

INCLUDE = Path(__file__).resolve().parents[2] / "include"
LINKED = """
#include <tvm/ffi/function.h>

// Looks up a global function of the runtime (registered by libtvm_ffi.so itself).
int64_t PlusOne(int64_t x) {
  return x + (tvm::ffi::Function::GetGlobal("ffi.ModuleGetKind").has_value() ? 1 : 0);
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(plus_one, PlusOne);
"""


def _run(code: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, env=env
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_apache_names():
    assert Path(libinfo.find_include_path(), "tvm", "ffi", "c_api.h").is_file()
    assert Path(libinfo.find_dlpack_include_path(), "dlpack", "dlpack.h").is_file()
    assert Path(libinfo.find_cmake_path(), "tvm_ffiConfig.cmake").is_file()
    assert libinfo.include_paths() == sorted(
        {libinfo.find_include_path(), libinfo.find_dlpack_include_path()}
    )


def test_find_libtvm_ffi_is_the_packaged_runtime():
    path = Path(libinfo.find_libtvm_ffi())
    assert path == Path(tvm_ffi.__file__).parent / "lib" / "libtvm_ffi.so"
    defined = {sym.name for sym in _elf.symbols(path, dynamic=True) if sym.defined}
    # What the CuTe DSL's generated code and apache-built libraries call.
    assert {
        "TVMFFIErrorSetRaisedFromCStr",
        "TVMFFIErrorSetRaisedFromCStrParts",
        "TVMFFIEnvGetStream",
        "TVMFFIFunctionGetGlobal",
        "TVMFFIObjectDecRef",
    } <= defined


def test_the_runtime_loads_with_the_core_not_at_import():
    out = _run(
        "import tvm_ffi\n"
        "maps = lambda: [l.split()[-1] for l in open('/proc/self/maps').read().splitlines()\n"
        "                if l.endswith('/libtvm_ffi.so')]\n"
        "print(bool(maps()))\n"
        "import tvm_ffi._core\n"
        "print(sorted(set(maps())))\n"
    )
    first, second = out.splitlines()
    assert first == "False"
    assert eval(second) == [str(Path(libinfo.find_libtvm_ffi()).resolve())]


def test_a_library_linked_with_ltvm_ffi_loads(tmp_path):
    cxx = os.environ.get("CXX", "c++")
    if shutil.which(cxx) is None:
        pytest.skip(f"needs a C++ compiler ({cxx} not found)")
    source, out = tmp_path / "linked.cc", tmp_path / "liblinked.so"
    source.write_text(LINKED)
    libdir = os.path.dirname(libinfo.find_libtvm_ffi())
    cmd = [cxx, "-shared", "-fPIC", "-std=c++17", f"-I{INCLUDE}", str(source), "-o", str(out)]
    cmd += [f"-L{libdir}", "-ltvm_ffi"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "libtvm_ffi.so" in _elf.needed_libraries(out)
    # No rpath nor LD_LIBRARY_PATH: the copy _core loaded satisfies the DT_NEEDED by soname.
    got = _run(f"import tvm_ffi._core\nprint(tvm_ffi._core.load_module({str(out)!r}).plus_one(4))")
    assert got.split() == ["5"]
