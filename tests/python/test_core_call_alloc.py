"""The warm call path allocates nothing: a call with three framework tensors converts them
through the DLPack exchange API into pooled tensor objects and back, with no Python object made
(tracemalloc sees every Python allocation, of objects and of buffers; its peak shows one that
is freed before the call returns)."""

from __future__ import annotations

import itertools
import tracemalloc

import pytest

import tvm_ffi

SOURCE = r"""
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>

using tvm::ffi::Tensor;
using tvm::ffi::TensorView;
TVM_FFI_DLL_EXPORT_TYPED_FUNC(views3, [](TensorView a, TensorView b, TensorView c) {});
TVM_FFI_DLL_EXPORT_TYPED_FUNC(objects3, [](Tensor a, Tensor b, Tensor c) {});
"""


@pytest.fixture(scope="module")
def mod(build_library):
    return tvm_ffi.load_module(build_library("alloc3", SOURCE))


@pytest.mark.parametrize("name", ["views3", "objects3"])
def test_a_warm_three_tensor_call_allocates_nothing(mod, name):
    torch = pytest.importorskip("torch")
    a, b, c = (torch.zeros(4) for _ in range(3))
    f = getattr(mod, name)
    for _ in range(10):  # warm: type caches, the tensor pool
        f(a, b, c)
    calls = itertools.repeat(None, 1000)  # made before tracing; small ints are cached
    tracemalloc.start()
    try:
        f(a, b, c)
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        for _ in calls:
            f(a, b, c)
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # Not one byte held even for a moment: a transient object per call would raise the peak.
    assert (current - base, peak - base) == (0, 0)
