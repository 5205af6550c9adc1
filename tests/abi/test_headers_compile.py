"""Each public staging header compiles alone with -Wall -Wextra -Werror, makes reachable the
names apache-tvm-ffi's same header makes reachable (its include graph), and costs less to
parse than apache's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "headers"))
import headers_build

PUBLIC = [
    "any.h",
    "base.h",
    "base_detail.h",
    "c_api.h",
    "container/array.h",
    "container/dict.h",
    "container/list.h",
    "container/map.h",
    "container/shape.h",
    "container/tensor.h",
    "container/tuple.h",
    "container/variant.h",
    "dlpack.h",
    "dtype.h",
    "error.h",
    "extra/c_env_api.h",
    "extra/module.h",
    "extra/stl.h",
    "function.h",
    "object.h",
    "optional.h",
    "reflection/registry.h",
    "string.h",
    "tvm_ffi.h",
]


def _compile(tmp_path: Path, text: str) -> subprocess.CompletedProcess:
    source = tmp_path / "use.cc"
    source.write_text(text)
    cxx = os.environ.get("CXX", "c++")
    cmd = [cxx, "-std=c++17", "-fsyntax-only", *headers_build.WARNINGS]
    cmd += ["-I", str(headers_build.STAGING_INCLUDE), str(source)]
    return subprocess.run(cmd, capture_output=True, text=True)


def test_every_public_header_is_listed():
    # The CUDA headers need the toolkit's: tests/cpp/cuda/test_header_layout.py compiles each.
    root = headers_build.STAGING_INCLUDE / "tvm" / "ffi"
    found = {str(p.relative_to(root)) for p in root.rglob("*.h") if "detail" not in p.parts}
    found = {h for h in found if not h.startswith("extra/cuda/")}
    assert found == set(PUBLIC)


@pytest.mark.parametrize("header", PUBLIC)
def test_header_compiles_alone(tmp_path, header):
    proc = _compile(tmp_path, f"#include <tvm/ffi/{header}>\n")
    assert proc.returncode == 0, proc.stderr


# What code written for apache-tvm-ffi names after including only this header (apache's
# header brings it through its own includes).
REACHABLE = {
    "object.h": "tvm::ffi::ObjectRef r; tvm::ffi::ObjectPtr<tvm::ffi::Object> p; "
    "tvm::ffi::Any* a; tvm::ffi::Optional<int>* o; tvm::ffi::Variant<int, float>* v;",
    "error.h": 'tvm::ffi::Error e("ValueError", "m"); TVM_FFI_ICHECK(true);',
    "string.h": 'tvm::ffi::String s("x"); tvm::ffi::Bytes b; tvm::ffi::ObjectRef r;',
    "any.h": 'tvm::ffi::Any a = tvm::ffi::String("x"); tvm::ffi::AnyView v = a;',
    "optional.h": "tvm::ffi::Optional<tvm::ffi::String> o; tvm::ffi::Any a;",
    "function.h": "tvm::ffi::Function f; tvm::ffi::TypedFunction<int(int)> g; "
    "tvm::ffi::Optional<int> o; tvm::ffi::String s;",
    "dtype.h": 'DLDataType t = tvm::ffi::StringToDLDataType("float32"); bool e = t == t; '
    "(void)e; tvm::ffi::Function f;",
    "container/array.h": "tvm::ffi::Array<int64_t> a; tvm::ffi::Optional<int> o; tvm::ffi::Any x;",
    "container/map.h": "tvm::ffi::Map<tvm::ffi::String, int64_t> m; tvm::ffi::Any a; "
    "tvm::ffi::Optional<int> o;",
    "container/dict.h": "tvm::ffi::Dict<int64_t, tvm::ffi::Any> d; tvm::ffi::Optional<int> o;",
    "container/list.h": "tvm::ffi::List<int64_t> l; tvm::ffi::Array<int> a; tvm::ffi::Any x;",
    "container/shape.h": "tvm::ffi::Shape s({1, 2}); tvm::ffi::ShapeView v = s; "
    "tvm::ffi::Array<int64_t> a;",
    "container/tensor.h": "tvm::ffi::Tensor t; tvm::ffi::TensorView v; tvm::ffi::Shape s; "
    "tvm::ffi::Array<tvm::ffi::Tensor> a; tvm::ffi::Optional<tvm::ffi::TensorView> o; "
    "tvm::ffi::Function f; tvm::ffi::String str; TVM_FFI_ICHECK_EQ(1, 1);",
    "container/tuple.h": 'tvm::ffi::Tuple<int64_t, tvm::ffi::String> t(1, "a"); '
    "tvm::ffi::Array<int> a;",
    "container/variant.h": "tvm::ffi::Variant<double, tvm::ffi::String> v(1.0); "
    "tvm::ffi::Optional<int> o;",
    "extra/module.h": "tvm::ffi::Module* m = nullptr; (void)m; tvm::ffi::Function f; "
    "tvm::ffi::Array<tvm::ffi::Any> a;",
    "extra/stl.h": "std::vector<int64_t> v; tvm::ffi::Array<int> a; tvm::ffi::Function f;",
    "reflection/registry.h": "tvm::ffi::reflection::GlobalDef g; "
    "tvm::ffi::Variant<int, tvm::ffi::String> v(1); tvm::ffi::Function f;",
}


@pytest.mark.parametrize("header", sorted(REACHABLE))
def test_names_reachable_after_one_include(tmp_path, header):
    body = REACHABLE[header]
    proc = _compile(
        tmp_path,
        f"#include <tvm/ffi/{header}>\n"
        f'#pragma GCC diagnostic ignored "-Wunused-variable"\n'
        f'#pragma GCC diagnostic ignored "-Wunused-but-set-variable"\n'
        f"void use() {{ {body} }}\n",
    )
    assert proc.returncode == 0, proc.stderr


def preprocessed_lines(include: Path, header: str) -> int:
    cxx = os.environ.get("CXX", "c++")
    proc = subprocess.run(
        [cxx, "-E", "-std=c++17", "-I", str(include), "-x", "c++", "-"],
        input=f"#include <tvm/ffi/{header}>\n", capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return len(proc.stdout.splitlines())


@pytest.mark.parametrize("header", sorted(REACHABLE))
def test_header_costs_less_than_apaches(header):
    from helpers import apache_wheel

    wheel = apache_wheel.fetch_wheel()
    if wheel is None:
        pytest.skip("no apache-tvm-ffi wheel for this interpreter")
    theirs = preprocessed_lines(apache_wheel.unpacked(wheel) / "tvm_ffi" / "include", header)
    ours = preprocessed_lines(headers_build.STAGING_INCLUDE, header)
    assert ours < theirs, f"{header}: {ours} preprocessed lines, apache-tvm-ffi's {theirs}"
