"""Each public header brings at least the names apache-tvm-ffi's header of the same path
brings through its includes: code written for it (FlashInfer's sampling_utils.h includes only
container/tensor.h and error.h, then names Optional) compiles here unchanged.

BRINGS was read off apache-tvm-ffi 0.1.15.post2's headers: for each header, the names of this
list that a file including only that header can use (a declared but incomplete class, such as
Any after object.h, does not count); test_table_matches_apaches_headers checks it when the
wheel is at hand.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from helpers import apache_wheel

INCLUDE = Path(__file__).resolve().parents[2] / "include"
CXX = os.environ.get("CXX", "c++")

#: name -> a statement that compiles only where the name is declared.
USES = {
    "Optional": "tvm::ffi::Optional<int> a;",
    "Array": "tvm::ffi::Array<int> a;",
    "Map": "tvm::ffi::Map<int, int> a;",
    "Tuple": "tvm::ffi::Tuple<int> a;",
    "Any": "tvm::ffi::Any a;",
    "AnyView": "tvm::ffi::AnyView a;",
    "String": "tvm::ffi::String a;",
    "Bytes": "tvm::ffi::Bytes a;",
    "Function": "tvm::ffi::Function a;",
    "ObjectRef": "tvm::ffi::ObjectRef a;",
    "Object": "using A = tvm::ffi::Object;",
    "Variant": "using A = tvm::ffi::Variant<int, double>;",
    "Shape": "using A = tvm::ffi::Shape;",
    "ShapeView": "using A = tvm::ffi::ShapeView;",
    "Tensor": "tvm::ffi::Tensor a;",
    "TensorView": "using A = tvm::ffi::TensorView;",
    "Module": "tvm::ffi::Module a;",
    "ModuleObj": "using A = tvm::ffi::ModuleObj;",
    "Error": "using A = tvm::ffi::Error;",
    "PackedArgs": "using A = tvm::ffi::PackedArgs;",
    "make_object": "(void)&tvm::ffi::make_object<tvm::ffi::Object>;",
    "DLDataTypeToString": "(void)&tvm::ffi::DLDataTypeToString;",
    "StringToDLDataType": "(void)&tvm::ffi::StringToDLDataType;",
    "TVMFFIEnvGetStream": "(void)&TVMFFIEnvGetStream;",
    "TVMFFIEnvTensorAlloc": "(void)&TVMFFIEnvTensorAlloc;",
    "TVM_FFI_THROW": "if (false) TVM_FFI_THROW(ValueError) << 1;",
    "TVM_FFI_ICHECK": "TVM_FFI_ICHECK(true);",
}
_ERRORS = ["Error", "TVM_FFI_THROW", "TVM_FFI_ICHECK"]
_VALUES = ["Optional", "Any", "AnyView", "String", "Bytes", "ObjectRef", "Object", "Variant"]
_NOT_OPTIONAL = [n for n in _VALUES if n != "Optional"]  # declared there, defined in optional.h
# fmt: off
BRINGS = {  # one header a line where its list is short, several lines a list otherwise
    "tvm/ffi/any.h": [*_NOT_OPTIONAL, *_ERRORS, "make_object"],
    "tvm/ffi/container/array.h": [*_VALUES, "Array", *_ERRORS, "make_object"],
    "tvm/ffi/container/map.h": [*_VALUES, "Map", *_ERRORS, "make_object"],
    "tvm/ffi/container/shape.h": [*_VALUES, "Array", "Shape", "ShapeView", *_ERRORS, "make_object"],
    "tvm/ffi/container/tuple.h": [*_VALUES, "Array", "Tuple", *_ERRORS, "make_object"],
    "tvm/ffi/container/variant.h": [*_VALUES, *_ERRORS, "make_object"],
    "tvm/ffi/container/tensor.h": [
        *_VALUES, "Array", "Function", "Shape", "ShapeView", "Tensor", "TensorView",
        "PackedArgs", *_ERRORS, "make_object", "DLDataTypeToString", "StringToDLDataType",
    ],
    "tvm/ffi/dtype.h": [
        *_NOT_OPTIONAL, "Function", "PackedArgs", *_ERRORS, "make_object", "DLDataTypeToString",
        "StringToDLDataType",
    ],
    "tvm/ffi/error.h": ["ObjectRef", "Object", "Variant", *_ERRORS, "make_object"],
    "tvm/ffi/extra/c_env_api.h": ["TVMFFIEnvGetStream", "TVMFFIEnvTensorAlloc"],
    "tvm/ffi/extra/module.h": [
        *_VALUES, "Array", "Map", "Function", "ModuleObj", "PackedArgs", *_ERRORS,
        "make_object",
    ],
    "tvm/ffi/extra/stl.h": [
        *_VALUES, "Array", "Map", "Function", "PackedArgs", *_ERRORS, "make_object",
    ],
    "tvm/ffi/function.h": [*_NOT_OPTIONAL, "Function", "PackedArgs", *_ERRORS, "make_object"],
    "tvm/ffi/object.h": ["ObjectRef", "Object", "Variant"],
}
# fmt: on


@pytest.mark.slow_compile
@pytest.mark.parametrize("header", sorted(BRINGS))
def test_header_brings_what_apache_tvm_ffi_brings(tmp_path, header):
    body = "\n  ".join("{ " + USES[name] + " }" for name in BRINGS[header])
    source = tmp_path / "uses.cc"
    source.write_text(f"#include <{header}>\n\nvoid Uses() {{\n  {body}\n}}\n")
    proc = subprocess.run(
        [CXX, "-std=c++17", "-fsyntax-only", "-Wno-unused", "-I", str(INCLUDE), str(source)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr


def _compiles(include: Path, header: str, use: str) -> bool:
    source = f"#include <{header}>\nvoid Uses() {{ {{ {use} }} }}\n"
    proc = subprocess.run(
        [CXX, "-std=c++17", "-fsyntax-only", "-Wno-unused", "-I", str(include), "-x", "c++", "-"],
        input=source, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    return proc.returncode == 0


@pytest.mark.slow_compile
@pytest.mark.parametrize("header", sorted(BRINGS))
def test_table_matches_apaches_headers(header):
    wheel = apache_wheel.find_wheel()
    if wheel is None:
        pytest.skip(f"no apache-tvm-ffi wheel (set {apache_wheel.WHEEL_ENV})")
    include = apache_wheel.unpacked(wheel) / "tvm_ffi" / "include"
    theirs = sorted(n for n, use in USES.items() if _compiles(include, header, use))
    assert theirs == sorted(BRINGS[header])
