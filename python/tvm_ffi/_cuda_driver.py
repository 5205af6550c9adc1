"""Ask the CUDA driver which GPUs are visible, through ctypes.

Used to pick the target architectures of a JIT build and to decide whether GPU tests
can run. Plain ctypes on ``libcuda.so.1`` on purpose: no subprocess (``nvidia-smi`` costs
hundreds of milliseconds), no dependency on torch or cuda-python, and no failure when
there is no driver at all (a build machine): every function then reports no device.

The answer is computed once per process (``cuInit`` is the expensive part) and honours
``CUDA_VISIBLE_DEVICES`` because the driver itself does. :func:`visible_gpus_fingerprint`
lets a caller keep the answer across processes (the JIT build does, see cpp/_arch.py), and
:func:`torch_capabilities` reuses a CUDA context that torch already paid for.
"""

from __future__ import annotations

import functools
import os
import sys

__all__ = [
    "compute_capabilities",
    "device_count",
    "torch_capabilities",
    "visible_gpus_fingerprint",
]

# CUdevice_attribute values from cuda.h (stable since CUDA 2.x).
_ATTR_CC_MAJOR = 75
_ATTR_CC_MINOR = 76
_CUDA_SUCCESS = 0


_PROC_DRIVER = "/proc/driver/nvidia"


def _load_driver():
    import ctypes  # here, not at import: a process that finds a cached answer never needs it

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
    import ctypes

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


def visible_gpus_fingerprint() -> str | None:
    """A text that changes whenever the set of visible GPUs could, cheap to compute.

    Made of ``CUDA_VISIBLE_DEVICES`` and ``CUDA_DEVICE_ORDER``, the kernel driver's version
    (``/proc/driver/nvidia/version``) and the PCI bus ids of the installed GPUs (the names
    under ``/proc/driver/nvidia/gpus``): one read and one listdir, no driver call. None when
    the driver publishes no such entries (not Linux, no NVIDIA driver): then nothing cheap
    can tell that a remembered answer is still right.
    """
    try:
        with open(os.path.join(_PROC_DRIVER, "version"), encoding="utf-8", errors="replace") as f:
            version = f.read()
        gpus = sorted(os.listdir(os.path.join(_PROC_DRIVER, "gpus")))
    except OSError:
        return None
    env = {name: os.environ.get(name) for name in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER")}
    return repr((env, version.strip(), gpus))


def torch_capabilities() -> list[tuple[int, int]] | None:
    """The visible GPUs' compute capabilities as torch sees them, if torch has already
    initialised CUDA in this process (then asking costs nothing); else None.

    Never imports torch.
    """
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        if not torch.cuda.is_initialized():
            return None
        return [
            tuple(torch.cuda.get_device_capability(i)) for i in range(torch.cuda.device_count())
        ]
    except Exception:  # a half-imported or unusual torch: fall back to asking the driver
        return None
