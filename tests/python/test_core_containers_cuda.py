"""Wrappers that return tensors on the GPU: Tensor::FromEnvAlloc through torch's allocator
(torch CUDA in, torch CUDA out, on the caller's stream), memory returned when the Python
object dies, and Optional/Array arguments of CUDA tensors."""

from __future__ import annotations

import gc

import pytest
import torch

from helpers import gpu

pytestmark = pytest.mark.gpu


WRAPPER = r"""
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/optional.h>

namespace ffi = tvm::ffi;

__global__ void AxpbKernel(const float* x, const float* b, float* y, float a, int64_t n,
                           int64_t cols) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = a * x[i] + (b ? b[i % cols] : 0.0f);
}

ffi::Tensor Axpb(ffi::TensorView x, ffi::Optional<ffi::TensorView> bias, double a) {
  TVM_FFI_ICHECK_EQ(x.device().device_type, kDLCUDA);
  ffi::Tensor y = ffi::Tensor::FromEnvAlloc(TVMFFIEnvTensorAlloc, x.shape(), x.dtype(), x.device());
  const int64_t n = x.numel();
  cudaStream_t stream = static_cast<cudaStream_t>(
      TVMFFIEnvGetStream(x.device().device_type, x.device().device_id));
  const float* b = bias.has_value() ? static_cast<const float*>(bias.value().data_ptr()) : nullptr;
  AxpbKernel<<<(n + 255) / 256, 256, 0, stream>>>(static_cast<const float*>(x.data_ptr()), b,
                                                   static_cast<float*>(y.data_ptr()),
                                                   static_cast<float>(a), n, x.size(-1));
  TVM_FFI_ICHECK_EQ(cudaGetLastError(), cudaSuccess);
  return y;
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(axpb, Axpb);

ffi::Array<ffi::Tensor> Split(ffi::TensorView x, ffi::Array<int64_t> sizes) {
  ffi::Array<ffi::Tensor> out;
  int64_t offset = 0;
  cudaStream_t stream = static_cast<cudaStream_t>(
      TVMFFIEnvGetStream(x.device().device_type, x.device().device_id));
  for (int64_t s : sizes) {
    ffi::Tensor t = ffi::Tensor::FromEnvAlloc(TVMFFIEnvTensorAlloc, {s}, x.dtype(), x.device());
    TVM_FFI_ICHECK_EQ(cudaMemcpyAsync(t.data_ptr(), static_cast<float*>(x.data_ptr()) + offset,
                                      s * sizeof(float), cudaMemcpyDeviceToDevice, stream),
                      cudaSuccess);
    offset += s;
    out.push_back(t);
  }
  return out;
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(split, Split);

void Noop(ffi::TensorView, ffi::TensorView, ffi::TensorView) {}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(noop, Noop);
"""


@pytest.fixture(scope="module")
def mod():
    from tvm_ffi import cpp

    return cpp.load_inline("containers_cuda", cuda_sources=WRAPPER)


def test_env_alloc_cuda_torch_in_torch_out(mod):
    x = torch.randn(300, 7, device="cuda")
    bias = torch.randn(7, device="cuda")
    y = mod.axpb(x, bias, 3.0)
    assert type(y) is torch.Tensor and y.device == x.device and y.shape == x.shape
    torch.testing.assert_close(y, 3.0 * x + bias)
    torch.testing.assert_close(mod.axpb(x, None, -1.0), -x)


def test_env_alloc_on_a_side_stream(mod):
    x = torch.randn(1 << 20, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        y = mod.axpb(x, None, 2.0)
    s.synchronize()
    torch.testing.assert_close(y, 2.0 * x)


def test_env_alloc_frees_with_the_python_object(mod):
    x = torch.randn(1 << 16, device="cuda")
    for _ in range(3):  # warm torch's caching allocator
        mod.axpb(x, None, 1.0)
    torch.cuda.synchronize()
    gc.collect()
    before = torch.cuda.memory_allocated()
    for _ in range(200):
        y = mod.axpb(x, None, 1.0)
        parts = mod.split(x, [1000, 24])
        del y, parts
    torch.cuda.synchronize()
    gc.collect()
    assert torch.cuda.memory_allocated() == before


def test_array_of_cuda_tensors_result(mod):
    x = torch.randn(1024, device="cuda")
    a, b = mod.split(x, [1000, 24])
    torch.testing.assert_close(torch.cat([a, b]), x)
    assert a.device == x.device


def test_env_alloc_on_the_second_gpu(mod):
    gpu.needs_two_gpus()
    x = torch.randn(4096, device="cuda:1")
    y = mod.axpb(x, None, 2.0)
    assert y.device == torch.device("cuda:1")
    torch.testing.assert_close(y, 2.0 * x)
