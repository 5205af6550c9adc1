"""Fixtures for the GPU tests."""

from __future__ import annotations

import contextlib
import ctypes
from types import SimpleNamespace

import pytest


@pytest.fixture
def foreign_context():
    """``with foreign_context() as ctx:`` makes a new context of device 0 current on this
    thread, one that is not the device's primary context (as another device's would be, for
    tests of the device guard on one GPU). ``ctx.primary``: the context current before (torch's
    primary context), ``ctx.other``: the new one, ``ctx.current()``: the current one now.
    Afterwards the new context is destroyed and the previous one is current again."""

    @contextlib.contextmanager
    def enter():
        driver = ctypes.CDLL("libcuda.so.1")

        def current() -> int | None:
            ctx = ctypes.c_void_p()
            assert driver.cuCtxGetCurrent(ctypes.byref(ctx)) == 0
            return ctx.value

        primary, other = current(), ctypes.c_void_p()
        assert primary
        assert driver.cuCtxCreate_v2(ctypes.byref(other), 0, 0) == 0  # pushed: now current
        try:
            yield SimpleNamespace(primary=primary, other=other.value, current=current)
        finally:
            assert driver.cuCtxDestroy_v2(other) == 0
            assert driver.cuCtxSetCurrent(ctypes.c_void_p(primary)) == 0

    return enter
