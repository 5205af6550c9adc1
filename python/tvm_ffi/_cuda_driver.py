"""Ask the CUDA driver which GPUs are visible, through ctypes.

Used to pick the target architectures of a JIT build and to decide whether GPU tests
can run. Plain ctypes on ``libcuda.so.1`` on purpose: no subprocess (``nvidia-smi`` costs
hundreds of milliseconds), no dependency on torch or cuda-python, and no failure when
there is no driver at all (a build machine): every function then reports no device.

The answer is computed once per process (``cuInit`` is the expensive part) and honours
``CUDA_VISIBLE_DEVICES`` because the driver itself does.
"""

from __future__ import annotations

import ctypes
import functools
import sys

__all__ = ["compute_capabilities", "device_count"]

# CUdevice_attribute values from cuda.h (stable since CUDA 2.x).
_ATTR_CC_MAJOR = 75
_ATTR_CC_MINOR = 76
_CUDA_SUCCESS = 0


def _load_driver() -> ctypes.CDLL | None:
    name = "nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1"
    try:
        return ctypes.CDLL(name)
    except OSError:
        return None


def compute_capabilities() -> list[tuple[int, int]]:
    """Return ``(major, minor)`` for every visible GPU, in device order.

    An empty list means no driver, no device, or a driver that fails to initialise;
    never raises for those.
    """
    return list(_query())


@functools.cache
def _query() -> tuple[tuple[int, int], ...]:
    lib = _load_driver()
    if lib is None:
        return ()
    try:
        if lib.cuInit(0) != _CUDA_SUCCESS:
            return ()
        count = ctypes.c_int(0)
        if lib.cuDeviceGetCount(ctypes.byref(count)) != _CUDA_SUCCESS:
            return ()
        caps = []
        for ordinal in range(count.value):
            device = ctypes.c_int(0)
            major = ctypes.c_int(0)
            minor = ctypes.c_int(0)
            if (
                lib.cuDeviceGet(ctypes.byref(device), ordinal) != _CUDA_SUCCESS
                or lib.cuDeviceGetAttribute(ctypes.byref(major), _ATTR_CC_MAJOR, device)
                != _CUDA_SUCCESS
                or lib.cuDeviceGetAttribute(ctypes.byref(minor), _ATTR_CC_MINOR, device)
                != _CUDA_SUCCESS
            ):
                return ()
            caps.append((major.value, minor.value))
        return tuple(caps)
    except AttributeError:  # a libcuda without the symbols we need is as good as none
        return ()


def device_count() -> int:
    """Number of visible CUDA devices (0 without a driver or GPU)."""
    return len(compute_capabilities())
