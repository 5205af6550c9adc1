"""Which stream exported functions see: ``use_raw_stream``, ``use_torch_stream``,
``get_raw_stream``, and ``device``, the small device value they take.

Inside an exported function, ``TVMFFIEnvGetStream(device)`` returns the caller's stream for
that device: by default torch's current stream (so ``with torch.cuda.stream(s):`` already
works); within ``use_raw_stream(device, handle)`` it is ``handle`` instead.
"""

from __future__ import annotations

import contextlib
import operator
from collections.abc import Iterator
from typing import Any, NamedTuple

__all__ = ["Device", "device", "get_raw_stream", "use_raw_stream", "use_torch_stream"]

# DLPack device type codes, by their names (apache-tvm-ffi's names, and ours for the host
# and managed memory kinds).
_DEVICE_TYPES = {
    "cpu": 1,
    "cuda": 2,
    "cuda_host": 3,
    "opencl": 4,
    "vulkan": 7,
    "metal": 8,
    "vpi": 9,
    "rocm": 10,
    "rocm_host": 11,
    "ext_dev": 12,
    "cuda_managed": 13,
    "oneapi": 14,
    "webgpu": 15,
    "hexagon": 16,
    "maia": 17,
    "trn": 18,
}
_DEVICE_NAMES = {code: name for name, code in _DEVICE_TYPES.items()}
# compat: apache-tvm-ffi (names it reads as another type's)
_ALIASES = {"mps": "metal", "wgpu": "webgpu"}
_FORMS = "expected e.g. 'cuda:0', ('cuda', 0), a torch.device or (device_type, index)"


def _index(index: Any) -> int:
    """A device index: an int, or anything int-like (numpy.int32(1), a 0-d tensor)."""
    if index is None:
        return 0
    try:
        return operator.index(index)
    except TypeError:
        item = getattr(index, "item", None)  # a 0-d torch tensor has item(), no __index__
        if callable(item) and isinstance(item(), int):
            return item()
    raise TypeError(f"device: the index must be an int, not {type(index).__name__} ({index!r})")


def _parse(device_type: Any, index: Any) -> tuple[int, int]:
    """(device type code, index) of a name ('cuda', 'cuda:1') or a code (2,
    DLDeviceType.kDLCUDA) with an optional index."""
    if isinstance(device_type, str):
        name, sep, rest = device_type.partition(":")
        code = _DEVICE_TYPES.get(_ALIASES.get(name, name))
        if code is not None:
            if not sep:
                return code, _index(index)
            if index is None and rest.isdigit():
                return code, int(rest)
    elif not isinstance(device_type, bool):
        try:
            return operator.index(device_type), _index(index)
        except TypeError:
            pass
    raise ValueError(f"device: cannot read {device_type!r} as a device ({_FORMS})")


class _DevicePair(NamedTuple):
    device_type: int
    index: int


class Device(_DevicePair):
    """A DLPack device: ``device_type`` (e.g. 2 for CUDA) and ``index``.
    ``Device("cuda", 1)``, ``Device("cuda:1")`` and ``Device(2, 1)`` are the same device."""

    __slots__ = ()

    # compat: apache-tvm-ffi (its Device takes a name or a type code, and an index)
    def __new__(cls, device_type: Any, index: Any = None) -> Device:
        return super().__new__(cls, *_parse(device_type, index))

    def __str__(self) -> str:
        return f"{_DEVICE_NAMES.get(self.device_type, self.device_type)}:{self.index}"

    def __dlpack_device__(self) -> tuple[int, int]:
        return (self.device_type, self.index)

    # compat: apache-tvm-ffi (its Device's `type` and `dlpack_device_type()`)
    @property
    def type(self) -> str:
        """The device type's name: ``"cuda"``, ``"cpu"``, ... (its number when unnamed)."""
        return str(_DEVICE_NAMES.get(self.device_type, self.device_type))

    # compat: apache-tvm-ffi
    def dlpack_device_type(self) -> int:
        """DLPack's device type: 2 for CUDA (the same as ``device_type``)."""
        return self.device_type


def device(device_type: Any, index: int | None = None) -> Device:
    """Make a :class:`Device` from ``"cuda:0"``, ``("cuda", 0)``, a ``torch.device``, a
    ``(device_type, index)`` pair of ints, a device type and an index (``"cuda", 1`` or
    ``DLDeviceType.kDLCUDA, 1``), or anything with ``__dlpack_device__``."""
    spec = device_type  # apache-tvm-ffi's parameter name; any of the forms above
    if isinstance(spec, Device):
        return spec
    if isinstance(spec, tuple) and len(spec) == 2 and all(isinstance(x, int) for x in spec):
        return Device(spec[0], spec[1])
    if hasattr(spec, "__dlpack_device__"):
        device_type, dev_index = spec.__dlpack_device__()
        return Device(int(device_type), int(dev_index))
    if type(spec).__name__ == "device" and hasattr(spec, "type"):  # torch.device
        spec, index = spec.type, spec.index if index is None else index
    return Device(spec, index)


_device = device  # for the functions whose parameter is named `device`


def _stream_handle(stream: Any) -> int:
    if stream is None:
        return 0
    if isinstance(stream, int):
        if stream < 0:
            raise ValueError(
                f"use_raw_stream: a stream handle is a non-negative int (got {stream})"
            )
        return stream
    value = getattr(stream, "value", None)  # ctypes.c_void_p
    if type(stream).__name__ == "c_void_p":
        return value or 0
    cuda_stream = getattr(stream, "cuda_stream", None)  # torch.cuda.Stream
    if isinstance(cuda_stream, int):
        return cuda_stream
    raise TypeError(
        f"use_raw_stream: stream must be an int handle, a ctypes.c_void_p or None, "
        f"not {type(stream).__name__}"
    )


@contextlib.contextmanager
def use_raw_stream(device: Any, stream: Any) -> Iterator[None]:
    """Within the block, exported functions called on this thread see ``stream`` (a
    ``cudaStream_t`` as an int, a ``ctypes.c_void_p``, or ``None``/0 for the default stream)
    as their stream for ``device`` (anything :func:`device` reads)."""
    from . import _core

    dev = _device(device)
    _core.push_raw_stream(dev.device_type, dev.index, _stream_handle(stream))
    try:
        yield
    finally:
        _core.pop_raw_stream()


@contextlib.contextmanager
def use_torch_stream(context: Any = None) -> Iterator[None]:
    """Enter a torch stream or graph context (``torch.cuda.stream(s)``,
    ``torch.cuda.graph(g)``); exported functions follow torch's current stream, so inside
    it they launch on that stream. With ``None`` they use torch's current stream as is."""
    if context is None:
        yield
        return
    with context:
        yield


def get_raw_stream(device: Any) -> int:
    """The stream handle an exported function called now would see for ``device``."""
    from . import _core

    dev = _device(device)
    return _core.get_raw_stream(dev.device_type, dev.index)
