"""setup.py's linker probe for the JIT (which faster linker links the prebuilt launcher
object, recorded in prebuilt.json) links the object against the package's libtvm_ffi.so, as
the JIT's own links do: with -z defs, an object that calls the runtime would otherwise fail
every probe and the JIT would never use the faster linker."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import next_runtime

REPO = Path(__file__).resolve().parents[2]
CALLS_RUNTIME = """
#include <tvm/ffi/c_api.h>
extern "C" int probe_major() {
  TVMFFIVersion v;
  TVMFFIGetVersion(&v);
  return static_cast<int>(v.major);
}
"""


def test_probe_links_the_runtime(tmp_path):
    pytest.importorskip("pybind11")  # setup.py's own import
    if shutil.which("c++") is None:
        pytest.skip("needs a C++ compiler (c++)")
    spec = importlib.util.spec_from_file_location("tvm_ffi_setup_for_probe", REPO / "setup.py")
    setup_module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(setup_module)  # setup() runs only under __main__
    prebuilt = setup_module._load_jit_module("_prebuilt")
    available = [(n, b) for n, b in prebuilt.LINKERS if shutil.which(b)]
    if not available:
        pytest.skip("no linker other than the compiler's default (gold, lld, mold) on PATH")
    source, obj = tmp_path / "calls.cc", tmp_path / "calls.o"
    source.write_text(CALLS_RUNTIME)
    include = f"-I{next_runtime.INCLUDE}"
    subprocess.run(["c++", "-fPIC", include, "-c", str(source), "-o", str(obj)], check=True)
    compiler = shutil.which("c++")
    assert setup_module._working_linker(available, compiler, str(obj), str(tmp_path)) is None
    runtime_dir = str(next_runtime.build().parent)
    found = setup_module._working_linker(available, compiler, str(obj), str(tmp_path), runtime_dir)
    assert found == available[0][0]
