"""What a library built with the staging headers binds to and exports (plan D2, D7): its
imports from libtvm_ffi.so are among the names apache-tvm-ffi 0.1.15.post2's runtime exports
(the C functions, plus ModuleObj/Module members that extra/module.h declares), and it exports
no definition in namespace tvm::ffi (all inline code hidden), at -O0 (everything emitted) and
-O2. The CUDA launcher's wrapper is among them: the driver API it loads at run time adds no
import from libtvm_ffi.so either."""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from helpers import apache_wheel

sys.path.insert(0, str(Path(__file__).parent / "headers"))
import headers_build

# Mangled names of tvm::ffi entities (functions, data, vtables, typeinfo, guard variables).
TVM_FFI_NAME = re.compile(r"^_Z(?:T[VIS]|GV)?N(?:K)?3tvm3ffi")
SOURCES = [
    headers_build.HERE / "boundary_lib.cc",
    headers_build.HERE / "clients" / "flashinfer_utils.cc",
    headers_build.HERE / "clients" / "flashinfer_safe_call.cc",
    headers_build.HERE / "clients" / "sglang_ngram_corpus.cc",
    headers_build.HERE / "launcher_lib.cc",  # the CUDA launcher (needs the toolkit's cuda.h)
]
CUDA_INCLUDE = Path(os.environ.get("CUDA_HOME") or "/usr/local/cuda") / "include"


@pytest.fixture(scope="module")
def runtime() -> Path:
    wheel = apache_wheel.fetch_wheel()
    if wheel is None:
        pytest.skip("no apache-tvm-ffi wheel for this interpreter")
    return apache_wheel.runtime_path(wheel)


COMPILERS = ["g++", "clang++"]


def _build(source: Path, opt: str, tmp_path: Path, runtime: Path, cxx: str) -> Path:
    if shutil.which(cxx) is None:
        pytest.skip(f"no {cxx} here")
    flags = [opt]
    if source.stem.startswith("launcher"):
        if not (CUDA_INCLUDE / "cuda.h").is_file():
            pytest.skip("needs the CUDA toolkit's headers (CUDA_HOME)")
        flags += ["-I", str(CUDA_INCLUDE)]
    return headers_build.compile_source(
        source, tmp_path / f"{source.stem}{opt}.so", *flags, link_dir=runtime.parent, cxx=cxx
    )


@pytest.mark.parametrize("cxx", COMPILERS)
@pytest.mark.parametrize("opt", ["-O0", "-O2"])
@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_imports_only_what_apaches_runtime_exports(source, opt, cxx, tmp_path, runtime):
    library = _build(source, opt, tmp_path, runtime, cxx)
    theirs = {name for _, name in headers_build.dynamic_symbols(runtime, "--defined-only")}
    ours = {name for kind, name in headers_build.dynamic_symbols(library, "-u")}
    wanted = {n for n in ours if n.startswith("TVMFFI") or TVM_FFI_NAME.match(n)}
    assert wanted - theirs == set()
    # The C++ names are only extra/module.h's ModuleObj and Module members.
    assert all("Module" in n for n in wanted if n.startswith("_Z"))


@pytest.mark.parametrize("cxx", COMPILERS)
@pytest.mark.parametrize("opt", ["-O0", "-O2"])
@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_exports_no_tvm_ffi_definition(source, opt, cxx, tmp_path, runtime):
    library = _build(source, opt, tmp_path, runtime, cxx)
    defined = [name for _, name in headers_build.dynamic_symbols(library, "--defined-only")]
    assert [n for n in defined if TVM_FFI_NAME.match(n)] == []
    # What it does export under our prefix is the exported functions and their metadata.
    exported = sorted(n for n in defined if n.startswith("__tvm_ffi_"))
    assert exported and all(
        n.startswith(("__tvm_ffi__metadata_", "__tvm_ffi__doc_")) or not n[10:].startswith("_")
        for n in exported
    )
