"""CUDA tensors through the core extension: torch's current stream (including
`with torch.cuda.stream(s)`), the device guard, and cupy through the __dlpack__ fallback.

The test library is plain C++ (no nvcc): it reaches the driver through dlopen("libcuda.so.1").
"""

from __future__ import annotations

import struct

import pytest
import torch

import tvm_ffi
from helpers import gpu

pytestmark = pytest.mark.gpu


SOURCE = r"""
#include <dlfcn.h>

#include <cstdint>
#include <vector>

#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/extra/stl.h>
#include <tvm/ffi/function.h>

using tvm::ffi::TensorView;

template <typename Fn>
Fn Driver(const char* name) {
  static void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  void* sym = lib ? dlsym(lib, name) : nullptr;
  TVM_FFI_CHECK(sym != nullptr, RuntimeError) << "no " << name << " in libcuda.so.1";
  return reinterpret_cast<Fn>(sym);
}

static int64_t Stream(int64_t type, int64_t id) {
  return reinterpret_cast<int64_t>(TVMFFIEnvGetStream(static_cast<int32_t>(type),
                                                      static_cast<int32_t>(id)));
}

// The device of the driver's current context while the function runs (-1: none).
static int64_t CurrentDevice() {
  int device = -1;
  if (Driver<int (*)(int*)>("cuCtxGetDevice")(&device) != 0) return -1;
  return device;
}

// The driver's current context while the function runs, as an integer.
static int64_t CurrentContext() {
  void* ctx = nullptr;
  if (Driver<int (*)(void**)>("cuCtxGetCurrent")(&ctx) != 0) return -1;
  return reinterpret_cast<int64_t>(ctx);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(noop3, [](TensorView, TensorView, TensorView) {});
TVM_FFI_DLL_EXPORT_TYPED_FUNC(device_of, [](TensorView t) {
  return std::vector<int64_t>{t.device().device_type, t.device().device_id};
});
TVM_FFI_DLL_EXPORT_TYPED_FUNC(stream_of, [](TensorView, int64_t type, int64_t id) {
  return Stream(type, id);
});
TVM_FFI_DLL_EXPORT_TYPED_FUNC(stream_without_tensor, Stream);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(current_device, []() { return CurrentDevice(); });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(current_device_with, [](TensorView) { return CurrentDevice(); });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(current_context, []() { return CurrentContext(); });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(current_context_with, [](TensorView) { return CurrentContext(); });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(current_device_with2, [](TensorView, TensorView) {
  return CurrentDevice();
});
// The current device after the callee asked for the stream of device `id`.
TVM_FFI_DLL_EXPORT_TYPED_FUNC(device_after_stream_of, [](TensorView, int64_t id) {
  Stream(kDLCUDA, id);
  return CurrentDevice();
});

// Overrides the stream inside the call; the override must not outlive the call.
TVM_FFI_DLL_EXPORT_TYPED_FUNC(override_stream, [](TensorView t, int64_t stream) {
  TVMFFIEnvSetStream(kDLCUDA, t.device().device_id,
                     reinterpret_cast<TVMFFIStreamHandle>(stream), nullptr);
  return Stream(kDLCUDA, t.device().device_id);
});

// Fills a contiguous float32 CUDA tensor on the caller's current stream.
TVM_FFI_DLL_EXPORT_TYPED_FUNC(fill_async, [](TensorView t, int64_t bits) {
  TVM_FFI_CHECK(t.IsContiguous(), ValueError) << "contiguous tensors only";
  auto memset = Driver<int (*)(uint64_t, unsigned, size_t, void*)>("cuMemsetD32Async");
  void* stream = TVMFFIEnvGetStream(kDLCUDA, t.device().device_id);
  int err = memset(reinterpret_cast<uint64_t>(t.data_ptr()), static_cast<unsigned>(bits),
                   static_cast<size_t>(t.numel()), stream);
  TVM_FFI_CHECK(err == 0, RuntimeError) << "cuMemsetD32Async failed: " << err;
});

// Copies a contiguous float64 CUDA tensor to the host (synchronously) and sums it.
TVM_FFI_DLL_EXPORT_TYPED_FUNC(sum_f64, [](TensorView t) {
  TVM_FFI_CHECK(t.IsContiguous(), ValueError) << "contiguous tensors only";
  std::vector<double> host(static_cast<size_t>(t.numel()));
  auto copy = Driver<int (*)(void*, uint64_t, size_t)>("cuMemcpyDtoH_v2");
  int err = copy(host.data(), reinterpret_cast<uint64_t>(t.data_ptr()),
                 host.size() * sizeof(double));
  TVM_FFI_CHECK(err == 0, RuntimeError) << "cuMemcpyDtoH failed: " << err;
  double sum = 0;
  for (double v : host) sum += v;
  return sum;
});
"""

KDL_CUDA = 2


@pytest.fixture(scope="module")
def mod(build_library):
    if not torch.cuda.is_available():
        pytest.skip("torch was built without CUDA")
    return tvm_ffi.load_module(build_library("cuda_core", SOURCE))


def _float_bits(value: float) -> int:
    return struct.unpack("<I", struct.pack("<f", value))[0]


def test_cuda_tensor_arrives_with_its_device(mod):
    x = torch.zeros(4, device="cuda")
    assert mod.device_of(x) == [KDL_CUDA, x.device.index]
    mod.noop3(x, x, x)


def test_current_stream_is_torchs(mod):
    x = torch.zeros(4, device="cuda")
    assert mod.stream_of(x, KDL_CUDA, 0) == torch.cuda.current_stream().cuda_stream


def test_stream_context_is_seen_and_restored(mod):
    x = torch.zeros(4, device="cuda")
    default = torch.cuda.current_stream().cuda_stream
    s = torch.cuda.Stream()
    assert s.cuda_stream != default
    with torch.cuda.stream(s):
        assert mod.stream_of(x, KDL_CUDA, 0) == s.cuda_stream
        # No tensor argument, no framework to ask: the runtime's stream slot, unset (the
        # default stream), as apache-tvm-ffi's Python gives it; use_raw_stream sets it.
        assert mod.stream_without_tensor(KDL_CUDA, 0) == 0
        with tvm_ffi.use_raw_stream("cuda:0", s.cuda_stream):
            assert mod.stream_without_tensor(KDL_CUDA, 0) == s.cuda_stream
    assert mod.stream_of(x, KDL_CUDA, 0) == default
    assert mod.stream_without_tensor(KDL_CUDA, 0) == 0


def test_stream_override_does_not_leak_out_of_the_call(mod):
    x = torch.zeros(4, device="cuda")
    s = torch.cuda.Stream()
    assert mod.override_stream(x, 0x1234) == 0x1234
    with torch.cuda.stream(s):
        assert mod.override_stream(x, 0x5678) == 0x5678
        assert mod.stream_of(x, KDL_CUDA, 0) == s.cuda_stream
    assert mod.stream_of(x, KDL_CUDA, 0) == torch.cuda.current_stream().cuda_stream


def test_work_lands_on_the_callers_stream(mod):
    x = torch.full((1 << 20,), -1.0, device="cuda")
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        mod.fill_async(x, _float_bits(2.5))
        s.synchronize()
    assert bool((x == 2.5).all())


def test_no_device_guard_cost_for_cpu_calls(mod):
    torch.zeros(1, device="cuda")  # make a context current on this thread
    before = mod.current_device()
    assert mod.current_device_with(torch.zeros(1)) == before


def test_device_guard_enters_the_primary_context_and_back(mod):
    # One GPU's stand-in for the two-GPU test below: with a context that is not the
    # device's primary one current (as another device's would be), a CUDA tensor argument
    # makes its device's primary context current for the call, and the caller's comes back.
    x = torch.zeros(4, device="cuda")
    with gpu.foreign_context() as ctx:
        assert mod.current_context() == ctx.other  # no tensor: no switch
        assert mod.current_context_with(x) == ctx.primary
        assert mod.current_context() == ctx.other  # restored
        assert mod.current_context_with(torch.zeros(1)) == ctx.other  # CPU: untouched


class _DLPackOnly:
    """A CUDA tensor through __dlpack__ alone (as CuPy's and JAX's arrays come)."""

    def __init__(self, tensor):
        self._tensor = tensor

    def __dlpack__(self, **kwargs):
        return self._tensor.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._tensor.__dlpack_device__()


def test_device_guard_covers_dlpack_tensors(mod):
    # A __dlpack__ tensor's device is current for the call as a torch tensor's is.
    x = _DLPackOnly(torch.zeros(4, device="cuda"))
    with gpu.foreign_context() as ctx:
        assert mod.current_context_with(x) == ctx.primary
        assert mod.current_context() == ctx.other  # restored


def test_device_guard_switches_to_the_tensors_device_and_back(mod):
    gpu.needs_two_gpus()
    torch.cuda.set_device(0)
    a0 = torch.zeros(4, device="cuda:0")
    a1 = torch.zeros(4, device="cuda:1")
    assert mod.current_device_with(a0) == 0
    assert mod.current_device_with(a1) == 1
    assert mod.current_device_with2(a1, a0) == 1  # the first CUDA tensor wins
    assert mod.current_device() == 0  # restored
    # Asking for another device's stream makes that device current for the rest of the call,
    # so a launch on its default stream lands there; the caller's comes back after.
    assert mod.device_after_stream_of(a0, 1) == 1
    assert mod.device_after_stream_of(a1, 0) == 0
    assert mod.current_device() == 0
    assert torch.cuda.current_device() == 0
    s1 = torch.cuda.Stream(device=1)
    with torch.cuda.stream(s1):
        assert mod.stream_of(a1, KDL_CUDA, 1) == s1.cuda_stream
        assert mod.stream_of(a0, KDL_CUDA, 1) == s1.cuda_stream  # asked for device 1
        # A raw stream of one device wins for that device only, whichever tensor came first.
        with tvm_ffi.use_raw_stream("cuda:1", 0x1110):
            assert mod.stream_of(a0, KDL_CUDA, 1) == 0x1110
            assert mod.stream_of(a1, KDL_CUDA, 0) == torch.cuda.current_stream(0).cuda_stream
    x = torch.full((1024,), -1.0, device="cuda:1")
    torch.cuda.synchronize(1)
    mod.fill_async(x, _float_bits(4.0))
    torch.cuda.synchronize(1)
    assert bool((x == 4.0).all())
    assert torch.cuda.current_device() == 0


def test_cuda_values_are_readable(mod):
    x = torch.arange(10, dtype=torch.float64, device="cuda")
    torch.cuda.synchronize()
    assert mod.sum_f64(x) == 45.0


def test_cupy_arrays_through_dlpack_fallback(mod):
    cupy = pytest.importorskip("cupy")
    a = cupy.arange(10, dtype=cupy.float64)
    cupy.cuda.Device().synchronize()
    assert mod.device_of(a) == [KDL_CUDA, a.device.id]
    assert mod.sum_f64(a) == 45.0


def test_jax_arrays_through_dlpack_fallback(mod, monkeypatch):
    # JAX would otherwise take most of the GPU's memory at start-up, beside torch.
    monkeypatch.setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    jax = pytest.importorskip("jax")
    try:
        gpu = jax.devices("gpu")[0]
    except RuntimeError as err:  # a CPU-only jax install
        pytest.skip(f"jax has no GPU backend: {err}")
    jax.config.update("jax_enable_x64", True)
    try:
        a = jax.numpy.arange(10, dtype=jax.numpy.float64, device=gpu)
        a.block_until_ready()
        assert mod.device_of(a) == [KDL_CUDA, next(iter(a.devices())).id]
        assert mod.sum_f64(a) == 45.0
    finally:
        jax.config.update("jax_enable_x64", False)
