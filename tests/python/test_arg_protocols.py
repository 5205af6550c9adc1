"""Objects that say how they travel, as apache-tvm-ffi's Python reads them: a CUDA stream
(``__cuda_stream__`` or cuda-python's driver ``CUstream``) and ``__tvm_ffi_opaque_ptr__`` as
an opaque pointer, ``__dlpack_data_type__`` as a data type, ``__tvm_ffi_int__`` and
``__tvm_ffi_float__`` as numbers, ``__tvm_ffi_value__`` in the object's place."""

from __future__ import annotations

import pytest

import tvm_ffi
from tvm_ffi import cpp

SOURCE = r"""
#include <tvm/ffi/any.h>
#include <tvm/ffi/function.h>

#include <cstdint>
#include <string>

TVM_FFI_DLL_EXPORT_TYPED_FUNC(kind, [](tvm::ffi::AnyView v) {
  return static_cast<int64_t>(v.type_index());
});
TVM_FFI_DLL_EXPORT_TYPED_FUNC(address, [](void* p) {
  return static_cast<int64_t>(reinterpret_cast<intptr_t>(p));
});
TVM_FFI_DLL_EXPORT_TYPED_FUNC(echo, [](tvm::ffi::Any v) { return v; });
"""


@pytest.fixture(scope="module")
def mod():
    return cpp.load_inline("arg_protocols", cpp_sources=SOURCE)


class Stream:
    def __init__(self, handle):
        self.handle = handle

    def __cuda_stream__(self):
        return (0, self.handle)


class Pointer:
    def __init__(self, address):
        self.address = address

    def __tvm_ffi_opaque_ptr__(self):
        return self.address


class DataType:
    def __dlpack_data_type__(self):
        return (2, 16, 1)  # kDLFloat, 16 bits, 1 lane


class AsInt:
    def __tvm_ffi_int__(self):
        return 7


class AsFloat:
    def __tvm_ffi_float__(self):
        return 2  # an int is taken as a float, as float(2) would be


class Value:
    def __init__(self, value):
        self.value = value

    def __tvm_ffi_value__(self):
        return self.value


def test_a_cuda_stream_is_an_opaque_pointer(mod):
    assert mod.kind(Stream(0x1234)) == 4  # kTVMFFIOpaquePtr (c_api.h)
    assert mod.address(Stream(0x1234)) == 0x1234
    assert mod.address(Stream(0)) == 0


def test_a_driver_custream_is_an_opaque_pointer(mod):
    driver = pytest.importorskip("cuda.bindings.driver")
    # It is an int too (__index__): as apache-tvm-ffi, the stream protocol wins.
    assert mod.kind(driver.CUstream(5)) == 4
    assert mod.address(driver.CUstream(5)) == 5


def test_opaque_pointer_protocol(mod):
    assert mod.address(Pointer(0x40)) == 0x40
    assert mod.address(Pointer(None)) == 0


def test_data_type_protocol(mod):
    back = mod.echo(DataType())
    assert type(back) is tvm_ffi.dtype and back == "float16"


def test_int_and_float_protocols(mod):
    assert type(mod.echo(AsInt())) is int and mod.echo(AsInt()) == 7
    assert type(mod.echo(AsFloat())) is float and mod.echo(AsFloat()) == 2.0


def test_value_protocol_converts_what_it_returns(mod):
    assert mod.echo(Value(10)) == 10
    assert mod.echo(Value([1, 2, Value(3)])) == [1, 2, 3]
    assert mod.echo(Value(Value(Value("x")))) == "x"


def test_a_bad_protocol_result_names_the_method(mod):
    with pytest.raises(
        TypeError, match=r"Pointer.__tvm_ffi_opaque_ptr__\(\) returned str, not an int address"
    ):
        mod.address(Pointer("0x40"))
    with pytest.raises(
        TypeError, match=r"Stream.__cuda_stream__\(\) returned int, not a \(version, handle\)"
    ):
        mod.address(type("Stream", (), {"__cuda_stream__": lambda self: 5})())


def test_a_value_protocol_that_returns_itself_is_refused(mod):
    class Loop:
        def __tvm_ffi_value__(self):
            return self

    with pytest.raises(ValueError, match=r"Loop.__tvm_ffi_value__\(\) nested deeper than 32"):
        mod.echo(Loop())
