"""Suite-wide pytest set-up: tests marked ``gpu`` are skipped when no CUDA device is visible.

The check runs once, and only when gpu tests were collected.
"""

from __future__ import annotations

import ctypes

import pytest


def _cuda_device_count() -> int:
    try:
        from tvm_ffi._cuda_driver import device_count
    except ImportError:  # a tree without the driver helper: ask libcuda directly
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError:
            return 0
        count = ctypes.c_int(0)
        if lib.cuInit(0) != 0 or lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
            return 0
        return count.value
    return device_count()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if item.get_closest_marker("gpu") is not None]
    if not gpu_items or _cuda_device_count() > 0:
        return
    skip = pytest.mark.skip(reason="needs a CUDA device (none visible to libcuda.so.1)")
    for item in gpu_items:
        item.add_marker(skip)
