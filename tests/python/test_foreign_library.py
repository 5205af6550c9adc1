"""Libraries built with apache-tvm-ffi's headers are native: load_module loads and calls them
(once refused as "built against apache-tvm-ffi's binary ABI"); the ABI check refuses only
libraries of this package's previous ABI (v3), and shows no evidence on anything else."""

from __future__ import annotations

import pytest

import tvm_ffi
from tvm_ffi import _old_abi

# What apache-tvm-ffi's export macro leaves behind: a safe-call entry that reports errors
# through the runtime library (hand-written: no apache header needed).
APACHE_STYLE = r"""
#include <tvm/ffi/c_api.h>
extern "C" __attribute__((visibility("default")))
int __tvm_ffi_add_one(void*, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
  if (num_args != 1 || args[0].type_index != kTVMFFIInt) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "add_one(int) takes one int");
    return -1;
  }
  result->type_index = kTVMFFIInt;
  result->zero_padding = 0;
  result->v_int64 = args[0].v_int64 + 1;
  return 0;
}
"""


def test_an_apache_style_library_loads_and_runs(build_library, tmp_path):
    lib = build_library("apache_linked", APACHE_STYLE, out=tmp_path / "libapache_linked.so")
    assert _old_abi.old_abi_evidence(str(lib)) is None
    mod = tvm_ffi.load_module(lib)
    assert mod.add_one(41) == 42
    with pytest.raises(TypeError) as info:
        mod.add_one("x")
    assert str(info.value) == "add_one(int) takes one int"
    assert info.value.__notes__ == [f"in function 'add_one' of library '{lib}'"]
    assert tvm_ffi.load_module(str(lib), keep_module_alive=False) is mod


def test_a_library_built_with_apache_headers_loads_and_runs(tmp_path):
    from helpers import SOURCES, apache_wheel

    wheel = apache_wheel.fetch_wheel()
    if wheel is None:
        pytest.skip("apache-tvm-ffi's wheel cannot be had (no network, no cached wheel)")
    source = SOURCES.parent / "abi" / "pycore" / "echo_lib.cc"
    lib = apache_wheel.build_library(wheel, source, tmp_path / "libecho.so")
    assert _old_abi.old_abi_evidence(str(lib)) is None
    mod = tvm_ffi.load_module(lib)  # its DT_NEEDED libtvm_ffi.so is ours, already loaded
    assert mod.add_int(2, 3) == 5
    assert "add_int" in mod.functions


def test_our_own_libraries_and_other_files_show_no_evidence(build_library, tmp_path):
    ours = build_library(
        "ours_plain",
        "#include <tvm/ffi/container/tensor.h>\n#include <tvm/ffi/extra/c_env_api.h>\n"
        "#include <tvm/ffi/function.h>\n"
        "int64_t n(tvm::ffi::TensorView x) { return x.numel(); }\n"
        "TVM_FFI_DLL_EXPORT_TYPED_FUNC(n, n);\n",
        out=tmp_path / "libours.so",
    )
    assert _old_abi.old_abi_evidence(str(ours)) is None
    (tmp_path / "text.so").write_text("not a library")
    assert _old_abi.old_abi_evidence(str(tmp_path / "text.so")) is None
    with pytest.raises(OSError, match=r"^cannot load library '.*text\.so': "):
        tvm_ffi.load_module(tmp_path / "text.so")  # the loader's own reason, unchanged


def test_a_library_that_does_not_link_the_runtime_finds_it_in_the_global_scope(tmp_path):
    # FlashInfer's JIT modules and the CuTe DSL's JIT-linked code leave TVMFFI* undefined
    # without listing libtvm_ffi.so: apache's Python loads its runtime RTLD_GLOBAL, so must we.
    import os
    import subprocess
    import sys

    src = tmp_path / "unlinked.cc"
    src.write_text(APACHE_STYLE)
    lib = tmp_path / "libunlinked.so"
    include = tvm_ffi.libinfo.find_include_path()
    cxx = os.environ.get("CXX", "c++")
    subprocess.run([cxx, "-shared", "-fPIC", f"-I{include}", str(src), "-o", str(lib)], check=True)
    needed = subprocess.run(["readelf", "-d", str(lib)], capture_output=True, text=True).stdout
    assert "libtvm_ffi.so" not in needed
    code = f"import tvm_ffi; print(tvm_ffi.load_module({str(lib)!r}).add_one(1))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert (proc.returncode, proc.stdout.strip()) == (0, "2"), proc.stderr
