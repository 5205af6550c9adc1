"""tvm_ffi.dtype and tvm_ffi._dtype.DataTypeCode (python/tvm_ffi/_dtype.py): parsed by the one
dtype grammar (include/tvm/ffi/detail/dtype.h), passed to C++ as a data type."""

from __future__ import annotations

import pickle
import re

import numpy as np
import pytest

import tvm_ffi
from tvm_ffi import cpp
from tvm_ffi._dtype import DataTypeCode

PARSE_HINT = "(expected e.g. float32, int8, bool, bfloat16, float8_e4m3fn, float16x2)"


@pytest.mark.parametrize(
    ("text", "code", "bits", "lanes", "itemsize"),
    [
        ("float16", 2, 16, 1, 2),
        ("int32", 0, 32, 1, 4),
        ("uint8", 1, 8, 1, 1),
        ("handle", 3, 64, 1, 8),
        ("bfloat16", 4, 16, 1, 2),
        ("bool", 6, 8, 1, 1),
        ("float8_e4m3fn", 10, 8, 1, 1),
        ("float8_e5m2", 12, 8, 1, 1),
        ("float6_e2m3fn", 15, 6, 1, 1),
        ("float4_e2m1fn", 17, 4, 1, 1),
        ("float4_e2m1fnx2", 17, 4, 2, 1),
        ("float16x4", 2, 16, 4, 8),
        ("complex64", 5, 64, 1, 8),
    ],
)
def test_fields_of_a_dtype(text, code, bits, lanes, itemsize):
    t = tvm_ffi.dtype(text)
    assert isinstance(t, str) and isinstance(t, tvm_ffi.dtype)
    assert (t.type_code, t.bits, t.lanes, t.itemsize) == (code, bits, lanes, itemsize)
    assert type(t.type_code) is int
    assert t == text and text == t and str(t) == text and type(str(t)) is str
    assert hash(t) == hash(text)
    assert {t: 1}[text] == 1
    assert repr(t) == f"dtype('{text}')"


def test_type_code_matches_data_type_code():
    assert tvm_ffi.dtype("int32").type_code == DataTypeCode.INT
    assert tvm_ffi.dtype("uint16").type_code == DataTypeCode.UINT
    assert tvm_ffi.dtype("float32").type_code == DataTypeCode.FLOAT
    assert tvm_ffi.dtype("handle").type_code == DataTypeCode.HANDLE
    assert tvm_ffi.dtype("bfloat16").type_code == DataTypeCode.BFLOAT
    assert tvm_ffi.dtype("bool").type_code == DataTypeCode.BOOL
    assert tvm_ffi.dtype("float4_e2m1fnx2").type_code == DataTypeCode.Float4E2M1FN


def test_data_type_codes_are_dlpacks():
    assert [(c.name, c.value) for c in DataTypeCode] == [
        ("INT", 0),
        ("UINT", 1),
        ("FLOAT", 2),
        ("HANDLE", 3),
        ("BFLOAT", 4),
        ("COMPLEX", 5),
        ("BOOL", 6),
        ("Float8E3M4", 7),
        ("Float8E4M3", 8),
        ("Float8E4M3B11FNUZ", 9),
        ("Float8E4M3FN", 10),
        ("Float8E4M3FNUZ", 11),
        ("Float8E5M2", 12),
        ("Float8E5M2FNUZ", 13),
        ("Float8E8M0FNU", 14),
        ("Float6E2M3FN", 15),
        ("Float6E3M2FN", 16),
        ("Float4E2M1FN", 17),
    ]


def test_data_type_codes_match_dlpack_h():
    """The enum's values are dlpack.h's kDL* values, read from the header itself (the one copy,
    <dlpack/dlpack.h>, as in apache-tvm-ffi; <tvm/ffi/dlpack.h> only includes it)."""
    from tvm_ffi import libinfo

    header = __import__("pathlib").Path(libinfo.find_include_path()) / "dlpack" / "dlpack.h"
    codes = dict(re.findall(r"\bkDL(\w+) = (\d+)U,", header.read_text()))
    assert len(codes) == 18
    ours = {c.name.lower().replace("_", ""): c.value for c in DataTypeCode}
    for name, value in codes.items():
        key = name.lower().replace("_", "").replace("opaquehandle", "handle")
        assert ours[key] == int(value), name


def test_kinds():
    assert tvm_ffi.dtype("bool").is_bool
    assert tvm_ffi.dtype("uint8").is_integer and not tvm_ffi.dtype("uint8").is_float
    assert tvm_ffi.dtype("float8_e4m3fn").is_float and tvm_ffi.dtype("bfloat16").is_float
    assert tvm_ffi.dtype("handle").is_handle
    assert tvm_ffi.dtype.is_dtype("float32") and tvm_ffi.dtype.is_dtype(tvm_ffi.dtype("int8"))
    assert not tvm_ffi.dtype.is_dtype("float")


def test_from_other_dtypes():
    assert tvm_ffi.dtype(np.dtype("float32")) == "float32"
    assert tvm_ffi.dtype(tvm_ffi.dtype("int8")) == "int8"
    torch = pytest.importorskip("torch")
    assert tvm_ffi.dtype(torch.bfloat16) == "bfloat16"
    assert tvm_ffi.dtype(torch.float8_e4m3fn).type_code == DataTypeCode.Float8E4M3FN


def test_with_lanes_and_dlpack_triples():
    v = tvm_ffi.dtype("float32").with_lanes(4)
    assert v == "float32x4" and type(v) is tvm_ffi.dtype and (v.bits, v.lanes) == (32, 4)
    assert v.with_lanes(1) == "float32"
    assert tvm_ffi.dtype("float4_e2m1fn").with_lanes(2) == "float4_e2m1fnx2"
    assert tvm_ffi.dtype.from_dlpack_data_type((2, 16, 1)) == "float16"
    assert tvm_ffi.dtype.from_dlpack_data_type((6, 8, 1)) == "bool"
    assert tvm_ffi.dtype.from_dlpack_data_type((3, 64, 1)) == "handle"
    t = tvm_ffi.dtype.from_dlpack_data_type((0, 8, 16))
    assert (t, t.type_code, t.bits, t.lanes) == ("int8x16", 0, 8, 16)


def test_pickle():
    t = tvm_ffi.dtype("float16x2")
    back = pickle.loads(pickle.dumps(t))
    assert type(back) is tvm_ffi.dtype and back == t and back.lanes == 2


@pytest.mark.parametrize(
    "text", ["flot32", "", "float", "float32x", "float32x0", "int8x70000", "bool16", "float32\0"]
)
def test_bad_text_names_the_string(text):
    with pytest.raises(ValueError) as info:
        tvm_ffi.dtype(text)
    assert str(info.value) == f'dtype: cannot parse "{text}" as a data type {PARSE_HINT}'
    assert not tvm_ffi.dtype.is_dtype(text)


def test_text_that_is_not_utf8():
    with pytest.raises(ValueError) as info:
        tvm_ffi.dtype("float\ud800")
    assert str(info.value) == f'dtype: cannot parse "float\\ud800" as a data type {PARSE_HINT}'


def test_bad_triples_and_lanes():
    with pytest.raises(
        ValueError,
        match=r"^dtype\.from_dlpack_data_type: \(6, 1, 1\) is not a data type this package can "
        r"name \(expected e\.g\. \(2, 32, 1\) for float32\)$",
    ):
        tvm_ffi.dtype.from_dlpack_data_type((6, 1, 1))  # a 1-bit bool has no string form
    with pytest.raises(ValueError, match=r"^dtype\.from_dlpack_data_type: \(99, 8, 1\) is not"):
        tvm_ffi.dtype.from_dlpack_data_type((99, 8, 1))
    with pytest.raises(
        TypeError,
        match=r"^dtype\.from_dlpack_data_type: expected a \(type_code, bits, lanes\) tuple of "
        r"ints \(got \[2, 16, 1\]\)$",
    ):
        tvm_ffi.dtype.from_dlpack_data_type([2, 16, 1])
    with pytest.raises(
        ValueError, match=r"^dtype\.with_lanes: lanes must be an int from 1 to 65535 \(got 0\)$"
    ):
        tvm_ffi.dtype("float32").with_lanes(0)


DTYPE_SOURCE = r"""
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/extra/stl.h>
#include <tvm/ffi/function.h>

#include <cstdint>
#include <vector>

TVM_FFI_DLL_EXPORT_TYPED_FUNC(fields, [](DLDataType t) {
  return std::vector<int64_t>{t.code, t.bits, t.lanes};
});
TVM_FFI_DLL_EXPORT_TYPED_FUNC(echo, [](DLDataType t) { return t; });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(count, [](std::vector<DLDataType> ts) {
  return static_cast<int64_t>(ts.size());
});
"""


@pytest.fixture(scope="module")
def mod():
    return cpp.load_inline("dtype_args", cpp_sources=DTYPE_SOURCE)


def test_a_dtype_argument_is_a_data_type(mod):
    for text in ("float4_e2m1fnx2", "handle", "int32", "bool", "float8_e4m3fn", "float16x4"):
        t = tvm_ffi.dtype(text)
        assert mod.fields(t) == [t.type_code, t.bits, t.lanes]
        assert mod.echo(t) == text
    assert mod.count([tvm_ffi.dtype("int8"), tvm_ffi.dtype("float32")]) == 2
