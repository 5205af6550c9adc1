"""apache-tvm-ffi's load_inline CUDA examples, run: a source with no includes launching on
torch's current stream, and C++ and CUDA sources in one module."""

from __future__ import annotations

import pytest
import torch

from tvm_ffi import cpp

pytestmark = pytest.mark.gpu


def test_load_inline_cuda_on_the_current_stream():
    from helpers.apache_sources import ADD_ONE_CUDA

    mod = cpp.load_inline("hello", cuda_sources=ADD_ONE_CUDA, functions=["add_one_cuda"])
    x = torch.randn(1000, device="cuda")
    y = torch.full_like(x, float("nan"))
    mod.add_one_cuda(x, y, torch.cuda.current_stream().cuda_stream)
    torch.testing.assert_close(y, x + 1)
    stream = torch.cuda.Stream()
    y = torch.full_like(x, float("nan"))
    with torch.cuda.stream(stream):
        mod.add_one_cuda(x, y, stream.cuda_stream)
    stream.synchronize()
    torch.testing.assert_close(y, x + 1)
    with pytest.raises(RuntimeError, match="stream must be the same as raw_stream"):
        mod.add_one_cuda(x, y, 12345)


def test_load_inline_cpp_and_cuda_together():
    from helpers.apache_sources import ADD_ONE_CUDA, BOTH_CPP

    mod = cpp.load_inline(
        "hello_both",
        cpp_sources=BOTH_CPP,
        cuda_sources=ADD_ONE_CUDA,
        functions=["add_one_cpu", "add_one_cuda"],
    )
    x = torch.randn(300)
    y = torch.full_like(x, float("nan"))
    mod.add_one_cpu(x, y)
    torch.testing.assert_close(y, x + 1)
    x_cuda = x.cuda()
    y_cuda = torch.full_like(x_cuda, float("nan"))
    mod.add_one_cuda(x_cuda, y_cuda, torch.cuda.current_stream().cuda_stream)
    torch.testing.assert_close(y_cuda, x_cuda + 1)
