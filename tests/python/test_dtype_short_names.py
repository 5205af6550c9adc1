"""apache-tvm-ffi's runtime reads short data type names (i8, u16, f32, bf16, fp8_e4m3fn,
f8_e5m2, fp4_e2m1fn_x2, ...) in TVMFFIDataTypeFromString; so does this runtime: libraries built
with apache's headers pass them, and a str argument reaches a DLDataType parameter through it.
tvm_ffi.dtype itself keeps to the canonical names (_dtype._parse says why). Also: a scalable
vector has no itemsize."""

from __future__ import annotations

import pytest

import tvm_ffi
from tvm_ffi import cpp

SOURCE = r"""
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/extra/stl.h>
#include <tvm/ffi/function.h>

#include <cstdint>
#include <string>
#include <vector>

// The C function itself, as code built with apache's headers calls it.
TVM_FFI_DLL_EXPORT_TYPED_FUNC(parse, [](std::string text) {
  TVMFFIByteArray bytes{text.data(), text.size()};
  DLDataType t;
  TVM_FFI_CHECK_SAFE_CALL(TVMFFIDataTypeFromString(&bytes, &t));
  return std::vector<int64_t>{t.code, t.bits, t.lanes};
});
TVM_FFI_DLL_EXPORT_TYPED_FUNC(fields, [](DLDataType t) {
  return std::vector<int64_t>{t.code, t.bits, t.lanes};
});
"""


@pytest.fixture(scope="module")
def mod():
    return cpp.load_inline("dtype_short_names", cpp_sources=SOURCE)


@pytest.mark.parametrize(
    ("short", "canonical"),
    [("i8", "int8"), ("i64", "int64"), ("u16", "uint16"), ("f16", "float16"),
     ("f32x4", "float32x4"), ("bf16", "bfloat16"), ("fp8_e4m3fn", "float8_e4m3fn"),
     ("f8_e5m2", "float8_e5m2"), ("fp8_e5m2x4", "float8_e5m2x4"), ("fp6_e2m3fn", "float6_e2m3fn"),
     ("f6_e3m2fn", "float6_e3m2fn"), ("fp4_e2m1fn", "float4_e2m1fn"),
     ("f4_e2m1fnx2", "float4_e2m1fnx2"), ("fp4_e2m1fn_x2", "float4_e2m1fnx2"),
     ("float4_e2m1fn_x2", "float4_e2m1fnx2")],
)  # fmt: skip
def test_short_name_is_the_canonical_type(mod, short, canonical):
    c = tvm_ffi.dtype(canonical)
    assert mod.parse(short) == [c.type_code, c.bits, c.lanes]
    assert mod.fields(short) == [c.type_code, c.bits, c.lanes]


@pytest.mark.parametrize("text", ["i", "f", "fp8", "fp16", "float8_e4m3fn_x2", "i8_x2", "b16"])
def test_what_is_no_short_name_stays_an_error(mod, text):
    with pytest.raises(ValueError, match=f"unknown dtype '.*{text[1:]}'"):
        mod.parse(text)


def test_a_scalable_vector_has_no_itemsize():
    # Its 16-bit lane field holds -4: read as 65532 lanes, it claimed 262128 bytes.
    t = tvm_ffi.dtype("int32xvscalex4")
    with pytest.raises(
        ValueError,
        match=r"^dtype.itemsize: 'int32xvscalex4' is a scalable vector, whose size is known "
        r"only at run time$",
    ):
        _ = t.itemsize
    assert tvm_ffi.dtype("int32x4").itemsize == 16
