"""tvm_ffi.Shape, tvm_ffi.DLDeviceType and tvm_ffi.from_dlpack (python/tvm_ffi/_dlpack.py), and
the apache-tvm-ffi names of tvm_ffi.device's value."""

from __future__ import annotations

import numpy as np
import pytest

import tvm_ffi


def test_shape_is_a_tuple_of_ints():
    s = tvm_ffi.Shape((2, np.int64(3), 4))
    assert isinstance(s, tuple) and s == (2, 3, 4)
    assert all(type(x) is int for x in s)
    assert tvm_ffi.Shape() == ()
    with pytest.raises(ValueError, match=r"^Shape: every element must be an int, got 1.5$"):
        tvm_ffi.Shape([1, 1.5])


@pytest.mark.parametrize(("dims", "text"), [((3,), "(3,)"), ((), "()"), ((2, 3, 4), "(2, 3, 4)")])
def test_shape_prints_as_a_tuple(dims, text):
    # As apache-tvm-ffi's Shape (a tuple subclass): a one-element shape keeps its comma.
    shape = tvm_ffi.Shape(dims)
    assert repr(shape) == text
    assert str(shape) == text


def test_device_types_have_dlpack_values():
    assert tvm_ffi.DLDeviceType.kDLCPU == 1
    assert tvm_ffi.DLDeviceType.kDLCUDA == 2
    assert tvm_ffi.DLDeviceType.kDLCUDAHost == 3
    assert tvm_ffi.DLDeviceType.kDLROCM == 10
    assert tvm_ffi.DLDeviceType.kDLCUDAManaged == 13
    assert tvm_ffi.DLDeviceType(2) is tvm_ffi.DLDeviceType.kDLCUDA


def test_from_dlpack_shares_memory():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 5)).astype(np.float32)
    t = tvm_ffi.from_dlpack(a)
    assert isinstance(t, tvm_ffi.Tensor)
    assert t.shape == (3, 5) and t.dtype == "float32" and str(t.device) == "cpu:0"
    assert t.data_ptr() == a.ctypes.data
    assert tvm_ffi.from_dlpack(t) is t
    back = np.from_dlpack(t)
    a[1, 2] = 42.0  # shared: the write shows through the tensor's export
    assert back[1, 2] == 42.0
    del a
    np.testing.assert_array_equal(back[1], np.from_dlpack(t)[1])


def test_from_dlpack_of_a_legacy_producer():
    class Legacy:  # __dlpack__ without max_version: a pre-1.0 capsule
        def __init__(self, arr):
            self.arr = arr

        def __dlpack__(self, stream=None):
            return self.arr.__dlpack__()

        def __dlpack_device__(self):
            return self.arr.__dlpack_device__()

    a = np.arange(6, dtype=np.int32)
    t = tvm_ffi.from_dlpack(Legacy(a))
    assert t.shape == (6,) and t.dtype == "int32"
    np.testing.assert_array_equal(np.from_dlpack(t), a)


def test_from_dlpack_refuses_non_producers():
    with pytest.raises(TypeError, match=r"^from_dlpack: a int has no __dlpack__ method$"):
        tvm_ffi.from_dlpack(3)


def test_device_type_name_and_dlpack_code():
    """As the CuTe DSL reads a device: tvm_ffi.device(type, 0).type / .dlpack_device_type()."""
    cuda = tvm_ffi.device("cuda", 0)
    assert cuda.type == "cuda" and cuda.dlpack_device_type() == tvm_ffi.DLDeviceType.kDLCUDA
    cpu = tvm_ffi.device("cpu", 0)
    assert cpu.type == "cpu" and cpu.dlpack_device_type() == tvm_ffi.DLDeviceType.kDLCPU
    assert tvm_ffi.device((5, 1)).type == "5"  # unnamed: its number
