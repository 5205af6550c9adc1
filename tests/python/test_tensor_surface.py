"""tvm_ffi.Tensor has apache-tvm-ffi's Tensor surface: shape, dtype, device (a tvm_ffi.Device),
ndim, strides, data_ptr(), numel(), size(dim) and is_contiguous()."""

from __future__ import annotations

import numpy as np
import pytest

import tvm_ffi


def test_attributes_of_a_contiguous_tensor():
    a = np.zeros((5, 4, 3), dtype="int16")
    t = tvm_ffi.from_dlpack(a)
    assert (t.shape, t.ndim, t.strides) == ((5, 4, 3), 3, (12, 3, 1))
    assert (t.numel(), t.size(0), t.size(-1), t.is_contiguous()) == (60, 5, 3, True)
    assert type(t.dtype) is tvm_ffi.dtype and t.dtype == "int16"
    assert type(t.device) is tvm_ffi.Device and str(t.device) == "cpu:0"
    assert t.device.dlpack_device_type() == tvm_ffi.DLDeviceType.kDLCPU
    assert t.data_ptr() == a.ctypes.data


def test_a_strided_view():
    a = np.arange(24, dtype="float32").reshape(4, 6)[:, ::2]
    t = tvm_ffi.from_dlpack(a)
    assert t.shape == (4, 3) and t.strides == (6, 2) and not t.is_contiguous()
    assert t.data_ptr() == a.ctypes.data
    tail = np.arange(8, dtype="int32")[3:]
    assert tvm_ffi.from_dlpack(tail).data_ptr() == tail.ctypes.data


def test_empty_and_unit_extents_are_contiguous():
    assert tvm_ffi.from_dlpack(np.zeros((4, 0, 4), dtype="float32")).is_contiguous()
    column = np.zeros((3, 4), dtype="float32")[:, :1]  # shape (3, 1), strides (4, 4) elements
    assert tvm_ffi.from_dlpack(column).is_contiguous() is False
    row = np.zeros((3, 4), dtype="float32")[:1, :]  # shape (1, 4): the row's stride is free
    assert tvm_ffi.from_dlpack(row).is_contiguous() is True


def test_size_out_of_range_names_the_dimension():
    t = tvm_ffi.from_dlpack(np.zeros((2, 3), dtype="float32"))
    with pytest.raises(
        IndexError,
        match=r"^tvm_ffi.Tensor.size: dimension -3 is out of range for a tensor of 2 dimensions$",
    ):
        t.size(-3)
