"""A DLDataType an exported function returns arrives as a tvm_ffi.dtype (a str with
type_code, bits and lanes), also inside a container and through an Any, in a process that
has not imported tvm_ffi.dtype before."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tvm_ffi import cpp

SOURCE = r"""
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/any.h>
#include <tvm/ffi/extra/stl.h>
#include <tvm/ffi/function.h>

#include <vector>

TVM_FFI_DLL_EXPORT_TYPED_FUNC(half, []() { return DLDataType{kDLFloat, 16, 1}; });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(pair, []() {
  return std::vector<DLDataType>{{kDLInt, 8, 1}, {kDLFloat, 32, 4}};
});
TVM_FFI_DLL_EXPORT_TYPED_FUNC(through_any, [](tvm::ffi::Any v) { return v; });
"""


@pytest.fixture(scope="module")
def library():
    return cpp.build_inline("dtype_results", cpp_sources=SOURCE)


def test_a_dtype_result_is_a_tvm_ffi_dtype(library):
    # A fresh process: nothing has imported tvm_ffi._dtype when the first result arrives.
    code = (
        "import sys, tvm_ffi\n"
        f"m = tvm_ffi.load_module({str(library)!r})\n"
        "assert 'tvm_ffi._dtype' not in sys.modules\n"
        "h = m.half()\n"
        "print(type(h).__module__, type(h).__name__, h, h.type_code, h.bits, h.lanes)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["tvm_ffi._dtype", "dtype", "float16", "2", "16", "1"]


def test_dtypes_in_a_container_and_through_any(library):
    import tvm_ffi

    m = tvm_ffi.load_module(library)
    pair = m.pair()
    assert pair == ["int8", "float32x4"]
    assert all(type(t) is tvm_ffi.dtype for t in pair)
    assert pair[1].lanes == 4
    back = m.through_any(tvm_ffi.dtype("bfloat16"))
    assert type(back) is tvm_ffi.dtype and back == "bfloat16" and back.bits == 16


def test_apache_data_type_constants():
    import tvm_ffi

    assert type(tvm_ffi.float32) is tvm_ffi.dtype and tvm_ffi.float32 == "float32"
    assert tvm_ffi.bfloat16.bits == 16 and tvm_ffi.bool.type_code == 6  # kDLBool
    assert tvm_ffi.float4_e2m1fnx2.lanes == 2
    assert tvm_ffi.float8_e4m3fn is tvm_ffi.float8_e4m3fn  # made once
    with pytest.raises(AttributeError, match="has no attribute 'float128'"):
        _ = tvm_ffi.float128
