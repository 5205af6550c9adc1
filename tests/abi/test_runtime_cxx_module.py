"""The C++ members of ModuleObj and Module that our runtime defines with include/tvm/ffi's own
classes (src/lib/cxx_module.cc), used by a library built with apache-tvm-ffi's headers
(tests/abi/runtime/cxx_module_lib.cc): each answers in our runtime as in apache's, and the Error
Module::LoadFromFile throws in ours is caught by the library's own `catch (const ffi::Error&)`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from helpers import apache_wheel, next_pycore, next_runtime

HERE = Path(__file__).resolve().parent / "runtime"
MISSING = "/nonexistent/libmissing.so"
#: The C++ names the library imports beyond the C ABI.
CXX_IMPORTS = {
    "_ZN3tvm3ffi6Module12LoadFromFileERKNS0_6StringE",
    "_ZN3tvm3ffi6Module19VisitContextSymbolsERKNS0_13TypedFunctionIFvNS0_6StringEPvEEE",
    "_ZN3tvm3ffi9ModuleObj11GetFunctionERKNS0_6StringEb",
    "_ZN3tvm3ffi9ModuleObj12ClearImportsEv",
    "_ZN3tvm3ffi9ModuleObj12ImportModuleERKNS0_6ModuleE",
    "_ZTIN3tvm3ffi9ModuleObjE",
    "_ZTVN3tvm3ffi9ModuleObjE",
}
#: What Module::LoadFromFile of a missing file throws, per runtime ("kind|message").
LOAD_ERROR = {
    "apache": "InternalError|Check failed: (lib_handle_ != nullptr) is false: Failed to load "
    f"dynamic shared library {MISSING} {MISSING}: cannot open shared object file: No such file "
    "or directory",
    "ours": f"RuntimeError|cannot load library '{MISSING}': {MISSING}: cannot open shared object "
    "file: No such file or directory",
}


@pytest.fixture(scope="module")
def lib(tmp_path_factory, wheel) -> Path:
    out = tmp_path_factory.mktemp("cxx_module") / "libcxx_module.so"
    return apache_wheel.build_library(wheel, HERE / "cxx_module_lib.cc", out)


def test_library_imports_the_cxx_members_and_ours_exports_them(lib):
    undefined = subprocess.run(["nm", "-D", "--undefined-only", str(lib)], capture_output=True,
                               text=True, check=True).stdout  # fmt: skip
    imported = {line.split()[-1] for line in undefined.splitlines()}
    assert {s for s in imported if s.startswith(("_ZN3tvm", "_ZT")) and "tvm" in s} == CXX_IMPORTS
    exported = subprocess.run(["nm", "-D", "--defined-only", str(next_runtime.build())],
                              capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert {line.split()[-1] for line in exported.splitlines()} >= CXX_IMPORTS


@pytest.mark.parametrize("runtime_name", next_pycore.RUNTIMES)
def test_members_answer_in_both_runtimes(lib, runtime_name):
    found = next_pycore.setup(runtime_name)
    if found is None:
        pytest.skip("apache-tvm-ffi's wheel cannot be had (no network, no cached wheel)")
    runtime, core, _, _ = found
    out = next_pycore.run_child(runtime, core, f"""
m = core.load_module({str(lib)!r})
runner = m.make_module()
print("runner", runner.workspace_size(3, 4))
print("loaded", m.load_and_call({str(lib)!r}, "twice", 21))
print("error", m.load_error({MISSING!r}))
print("context", m.context_symbols())
other = core.load_module({str(lib)!r})
m.import_into(runner, other)
print("imported", runner.twice(5))
""")  # fmt: skip
    lines = dict(line.split(" ", 1) for line in out.splitlines())
    assert lines["runner"] == "19"
    assert lines["loaded"] == "42"
    assert lines["context"] == "marker@ok"
    assert lines["imported"] == "10"
    assert lines["error"] == LOAD_ERROR[runtime_name]
