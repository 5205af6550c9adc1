"""tvm_ffi.Device and tvm_ffi.device take the forms code written for apache-tvm-ffi passes: a
type name or a DLPack type code (an int or a DLDeviceType) with an index, and DLPack's names
of device types."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import tvm_ffi
from tvm_ffi import DLDeviceType


def test_device_class_takes_a_name_and_an_index():
    dev = tvm_ffi.Device("cuda", 1)
    assert dev == (2, 1) and dev.device_type == 2 and dev.index == 1
    assert dev.dlpack_device_type() == DLDeviceType.kDLCUDA and dev.type == "cuda"
    assert tvm_ffi.Device("cuda:3") == tvm_ffi.Device(2, 3)
    assert tvm_ffi.Device("cpu") == tvm_ffi.Device(1, 0)


@pytest.mark.parametrize(
    ("device_type", "code"), [(DLDeviceType.kDLCUDA, 2), (DLDeviceType.kDLMetal, 8), (2, 2)]
)
def test_device_takes_a_type_code_and_an_index(device_type, code):
    dev = tvm_ffi.device(device_type, 2)
    assert (dev.device_type, dev.index) == (code, 2)
    assert type(dev.device_type) is int  # not the enum: a plain pair of ints


@pytest.mark.parametrize(
    ("text", "code"),
    [("ext_dev:0", 12), ("vpi", 9), ("webgpu", 15), ("wgpu", 15), ("hexagon", 16),
     ("maia", 17), ("trn", 18), ("mps", 8)],
)  # fmt: skip
def test_dlpack_device_type_names(text, code):
    assert tvm_ffi.device(text).device_type == code


def test_an_index_may_be_int_like():
    assert tvm_ffi.device("cpu", np.int32(1)).index == 1
    assert type(tvm_ffi.device("cpu", np.int32(1)).index) is int


def test_an_index_that_is_no_int_is_a_type_error():
    with pytest.raises(TypeError, match=r"^device: the index must be an int, not str \('\?'\)$"):
        tvm_ffi.device("cpu", "?")


@pytest.mark.parametrize("text", ["llvm", "cpu:", "cpu:0:0", "cuda:x"])
def test_unknown_forms_name_the_value(text):
    with pytest.raises(ValueError, match=rf"^device: cannot read '{text}' as a device \("):
        tvm_ffi.device(text)


def test_a_bool_is_no_device_type():
    with pytest.raises(ValueError, match=r"^device: cannot read True as a device \("):
        tvm_ffi.device(True)


def test_pickle_round_trip():
    dev = tvm_ffi.device("cuda", 3)
    assert pickle.loads(pickle.dumps(dev)) == dev
    assert type(pickle.loads(pickle.dumps(dev))) is tvm_ffi.Device


DEVICE_SOURCE = r"""
#include <tvm/ffi/any.h>
#include <tvm/ffi/extra/stl.h>
#include <tvm/ffi/function.h>

#include <vector>

TVM_FFI_DLL_EXPORT_TYPED_FUNC(cuda1, []() { return DLDevice{kDLCUDA, 1}; });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(two, []() {
  return std::vector<DLDevice>{{kDLCPU, 0}, {kDLExtDev, 2}};
});
TVM_FFI_DLL_EXPORT_TYPED_FUNC(same, [](DLDevice d) { return d; });
"""


def test_a_device_result_is_a_tvm_ffi_device():
    from tvm_ffi import cpp

    mod = cpp.load_inline("device_results", cpp_sources=DEVICE_SOURCE)
    dev = mod.cuda1()
    assert type(dev) is tvm_ffi.Device and dev == (2, 1)  # still the (type, index) pair
    assert dev.type == "cuda" and dev.dlpack_device_type() == DLDeviceType.kDLCUDA
    assert all(type(d) is tvm_ffi.Device for d in mod.two())
    assert [str(d) for d in mod.two()] == ["cpu:0", "ext_dev:2"]
    assert type(mod.same(tvm_ffi.device("cuda:3"))) is tvm_ffi.Device
