"""Small DLPack-facing values under apache-tvm-ffi's names: ``Shape``, ``DLDeviceType`` and
``from_dlpack``."""

from __future__ import annotations

import enum
from numbers import Integral

from ._core import Tensor
from ._core import from_dlpack as _from_dlpack

__all__ = ["DLDeviceType", "Shape", "from_dlpack"]


class Shape(tuple):
    """A tuple of ints (e.g. a tensor shape, or packed scalars); passes to C++ as a tuple and
    prints as one (``(3,)``), as apache-tvm-ffi's Shape does."""

    __slots__ = ()

    def __new__(cls, content=()) -> Shape:  # content: any iterable of ints
        items = tuple(content)
        for item in items:
            if not isinstance(item, Integral):
                raise ValueError(f"Shape: every element must be an int, got {item!r}")
        return super().__new__(cls, (int(x) for x in items))


class DLDeviceType(enum.IntEnum):
    """DLPack's device types (``DLDeviceType`` in dlpack.h), with its names and values."""

    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17
    kDLTrn = 18


def from_dlpack(obj: object) -> Tensor:
    """A :class:`tvm_ffi.Tensor` sharing the memory of ``obj`` (anything with ``__dlpack__``:
    a torch tensor, a numpy array, ...). A ``tvm_ffi.Tensor`` comes back as itself.

    Raises:
        TypeError: ``obj`` has no ``__dlpack__``.
    """
    return _from_dlpack(obj)
