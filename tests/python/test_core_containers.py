"""The containers and owning tensors kernel-library wrappers take and return: Optional, Array,
Tuple, Map, Shape, Tensor::FromEnvAlloc; uint64 values; read-only tensors; raw streams."""

from __future__ import annotations

import math
import os
import re

import numpy as np
import pytest
import torch

import tvm_ffi
from helpers.call_errors import assert_call_error

# Written the way wrappers of kernel libraries are: the apache-tvm-ffi spellings.
SOURCE = r"""
#include <dlpack/dlpack.h>
#include <tvm/ffi/extra/stl.h>  // std:: types as arguments and results (as apache's)
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/container/shape.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/container/tuple.h>
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/optional.h>

#include <vector>

namespace ffi = tvm::ffi;
using ffi::Array;
using ffi::Optional;
using ffi::Tensor;
using ffi::TensorView;

// y[i, j] = x[i, j] * scale[j] (+ bias[j]) over the given dims: a typical norm/linear shim.
void ScaleRows(TensorView x, TensorView y, Array<int64_t> dims, Optional<TensorView> bias,
               Optional<double> scale) {
  TVM_FFI_ICHECK_EQ(x.dim(), static_cast<int>(dims.size())) << "dims must list every dimension";
  for (size_t d = 0; d < dims.size(); ++d) TVM_FFI_ICHECK_EQ(x.size(d), dims[d]);
  TVM_FFI_ICHECK(x.dtype() == (DLDataType{kDLFloat, 32, 1})) << "x must be float32, got "
                                                             << x.dtype();
  const float* xp = static_cast<const float*>(x.data_ptr());
  float* yp = static_cast<float*>(y.data_ptr());
  const float* bp = bias.has_value() ? static_cast<const float*>(bias.value().data_ptr())
                                     : nullptr;
  const double s = scale.value_or(1.0);
  const int64_t cols = dims.back();
  for (int64_t i = 0; i < x.numel(); ++i) {
    yp[i] = static_cast<float>(xp[i] * s + (bp ? bp[i % cols] : 0.0f));
  }
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(scale_rows, ScaleRows)

// Returns a new tensor allocated by the caller's framework: out = x + 1.
Tensor AddOne(TensorView x) {
  TVM_FFI_ICHECK(x.is_contiguous());
  Tensor out = Tensor::FromEnvAlloc(TVMFFIEnvTensorAlloc, x.shape(), x.dtype(), x.device());
  const float* xp = static_cast<const float*>(x.data_ptr());
  float* op = static_cast<float*>(out.data_ptr());
  for (int64_t i = 0; i < x.numel(); ++i) op[i] = xp[i] + 1.0f;
  return out;
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_one, AddOne);

ffi::Tuple<Tensor, ffi::Shape> SplitHalf(TensorView x) {
  const int64_t n = x.size(0) / 2;
  Tensor a = Tensor::FromEnvAlloc(TVMFFIEnvTensorAlloc, {n}, x.dtype(), x.device());
  const float* xp = static_cast<const float*>(x.data_ptr());
  for (int64_t i = 0; i < n; ++i) static_cast<float*>(a.data_ptr())[i] = xp[i];
  return {a, ffi::Shape({n, x.size(0) - n})};
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(split_half, SplitHalf);

Array<Tensor> Clones(TensorView x, int64_t k) {
  Array<Tensor> out;
  for (int64_t i = 0; i < k; ++i) {
    out.push_back(Tensor::FromEnvAlloc(TVMFFIEnvTensorAlloc, x.shape(), x.dtype(), x.device()));
  }
  return out;
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(clones, Clones);

// Returns tensors it was passed inside containers: the caller gets its own objects back.
Tensor Pick(Array<Tensor> xs, int64_t i) { return xs[i]; }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(pick, Pick);
Tensor PickValue(ffi::Map<ffi::String, Tensor> xs, ffi::String key) { return xs.at(key); }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(pick_value, PickValue);

// Options as a dict of tuples, as MoE/attention planners pass them (a container holds owning
// Tensors: a TensorView borrows and cannot be stored).
ffi::Map<ffi::String, int64_t> CountOptions(
    ffi::Map<ffi::String, ffi::Tuple<Array<int64_t>, Optional<Tensor>>> options) {
  ffi::Map<ffi::String, int64_t> out;
  for (const auto& [name, value] : options) {
    int64_t total = 0;
    for (int64_t v : value.get<0>()) total += v;
    if (value.get<1>().has_value()) total += value.get<1>()->numel();
    out.Set(name, total);
  }
  return out;
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(count_options, CountOptions);

ffi::Shape ShapeOf(TensorView x) { return ffi::Shape(x.sizes()); }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(shape_of, ShapeOf);

uint64_t EchoU64(uint64_t v) { return v; }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(echo_u64, EchoU64);

void* CurrentStream(int64_t device_type, int64_t device_id) {
  return TVMFFIEnvGetStream(static_cast<int32_t>(device_type), static_cast<int32_t>(device_id));
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(current_stream, CurrentStream);

Tensor AllocOn(int64_t device_type) {
  return Tensor::FromEnvAlloc(TVMFFIEnvTensorAlloc, {4},
                              ffi::StringToDLDataType("float32"),
                              DLDevice{static_cast<DLDeviceType>(device_type), 0});
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(alloc_on, AllocOn);

// Any shape and dtype; writes the last byte, which a wrapped size would put out of bounds.
Tensor AllocShape(Array<int64_t> shape, ffi::String dtype) {
  const std::vector<int64_t> extents(shape.begin(), shape.end());
  Tensor out = Tensor::FromEnvAlloc(TVMFFIEnvTensorAlloc, extents, ffi::StringToDLDataType(dtype),
                                    DLDevice{kDLCPU, 0});
  const int64_t bytes = out.numel() * out.dtype().bits * out.dtype().lanes / 8;
  if (bytes > 0) static_cast<char*>(out.data_ptr())[bytes - 1] = 1;
  return out;
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(alloc_shape, AllocShape);

// The allocator called as C code calls it, without FromEnvAlloc's own checks: 0 or -1.
int64_t RawAllocFloat32(Array<int64_t> shape) {
  DLTensor prototype{};
  prototype.device = DLDevice{kDLCPU, 0};
  prototype.dtype = DLDataType{kDLFloat, 32, 1};
  prototype.ndim = static_cast<int32_t>(shape.size());
  std::vector<int64_t> extents(shape.begin(), shape.end());
  prototype.shape = extents.data();
  TVMFFIObjectHandle out = nullptr;
  TVM_FFI_CHECK_SAFE_CALL(TVMFFIEnvTensorAlloc(&prototype, &out));  // throws the raised error
  auto* managed = static_cast<DLManagedTensorVersioned*>(out);
  managed->deleter(managed);
  return 0;
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(raw_alloc_float32, RawAllocFloat32);
"""


@pytest.fixture(scope="module")
def mod(build_library):
    return tvm_ffi.load_module(build_library("containers", SOURCE))


def test_optional_bias_array_dims_and_icheck(mod):
    x = torch.randn(3, 4)
    bias = torch.randn(4)
    y = torch.full_like(x, float("nan"))
    mod.scale_rows(x, y, [3, 4], bias, 2.0)
    torch.testing.assert_close(y, x * 2.0 + bias)
    y.fill_(float("nan"))
    mod.scale_rows(x, y, (3, 4), None, None)
    torch.testing.assert_close(y, x)
    assert mod.scale_rows.signature == (
        "scale_rows(Tensor, Tensor, list[int], Tensor | None, float | None) -> None"
    )


def test_icheck_failure_message(mod):
    x = torch.randn(3, 4)
    with pytest.raises(
        RuntimeError,
        match=r"^Check failed: \(x\.dim\(\) == static_cast<int>\(dims\.size\(\)\)\) is false: "
        r"2 vs\. 3: dims must list every dimension\n",  # then the "raised at" note
    ):
        mod.scale_rows(x, torch.empty_like(x), [3, 4, 5], None, None)
    with pytest.raises(RuntimeError, match=r"is false: x must be float32, got float64\n"):
        mod.scale_rows(x.double(), torch.empty_like(x), [3, 4], None, None)
    with pytest.raises(TypeError) as info:
        mod.scale_rows(x, torch.empty_like(x), [3, 4], "bias", None)
    assert_call_error(
        info.value, "scale_rows() argument 4 must be Tensor | None, not str", "scale_rows"
    )


def test_env_alloc_returns_the_callers_tensor_type(mod):
    x = torch.randn(5, 3)
    out = mod.add_one(x)
    assert type(out) is torch.Tensor
    assert out.shape == x.shape and out.dtype == x.dtype
    torch.testing.assert_close(out, x + 1)


def test_env_alloc_without_a_framework_gives_a_dlpack_tensor(mod):
    x = np.random.rand(2, 3).astype(np.float32)
    out = mod.add_one(x)
    assert type(out) is tvm_ffi.Tensor
    assert (out.shape, out.dtype, str(out.device)) == ((2, 3), "float32", "cpu:0")
    np.testing.assert_allclose(np.from_dlpack(out), x + 1)
    as_torch = torch.from_dlpack(out)
    del out  # the torch tensor keeps the memory alive
    torch.testing.assert_close(as_torch, torch.from_numpy(x) + 1)


def test_consumer_refusal_of_a_returned_tensor_keeps_its_own_error(mod):
    """Issue 28, item 14: numpy refuses bfloat16 and drops our capsule with its error pending;
    the capsule's destructor cleared it, so numpy raised SystemError ("returned NULL without
    setting an exception") instead."""
    with pytest.raises(Exception) as numpy_refusal:  # noqa: PT011: numpy's, whatever it is
        np.from_dlpack(torch.zeros(3, dtype=torch.bfloat16))
    assert not isinstance(numpy_refusal.value, SystemError)
    out = mod.alloc_shape([3], "bfloat16")
    assert (type(out), out.dtype) == (tvm_ffi.Tensor, "bfloat16")
    with pytest.raises(type(numpy_refusal.value), match=f"^{re.escape(str(numpy_refusal.value))}$"):
        np.from_dlpack(out)
    assert np.from_dlpack(mod.alloc_shape([2], "uint8"))[-1] == 1  # the byte the callee wrote


def test_tensor_dlpack_serves_only_its_own_device(mod):
    out = mod.add_one(np.ones(3, dtype=np.float32))
    assert out.__dlpack_device__() == (1, 0)
    capsule = out.__dlpack__(dl_device=(1, 0), max_version=(1, 0))
    np.testing.assert_array_equal(np.from_dlpack(out, device="cpu"), np.full(3, 2.0))
    del capsule
    with pytest.raises(
        BufferError,
        match=r"^tvm_ffi\.Tensor\.__dlpack__: the tensor is on device \(1, 0\) and cannot be "
        r"exported to dl_device=\(2, 0\) without a copy \(not supported\)$",
    ):
        out.__dlpack__(dl_device=(2, 0))
    with pytest.raises(BufferError, match=rf"to dl_device={re.escape(repr((1, 2**70)))} "):
        out.__dlpack__(dl_device=(1, 2**70))
    with pytest.raises(
        TypeError,
        match=r"^tvm_ffi\.Tensor\.__dlpack__: dl_device must be None or a tuple of two ints "
        r"\(device_type, device_id\), not 'cpu'$",
    ):
        out.__dlpack__(dl_device="cpu")


@pytest.mark.parametrize(
    ("max_version", "capsule_name"),
    [(None, "dltensor"), ((0, 8), "dltensor"), ((1, 0), "dltensor_versioned"),
     ((2**70, 0), "dltensor_versioned"), ((-(2**70), 0), "dltensor")],
)  # fmt: skip
def test_tensor_dlpack_max_version_any_int(mod, max_version, capsule_name):
    out = mod.add_one(np.ones(2, dtype=np.float32))
    capsule = out.__dlpack__(max_version=max_version)
    assert f'"{capsule_name}"' in repr(capsule)


@pytest.mark.parametrize("max_version", [[], (1,), [1, 0], (1.0, 0), "10"])
def test_tensor_dlpack_max_version_must_be_a_pair(mod, max_version):
    out = mod.add_one(np.ones(2, dtype=np.float32))
    with pytest.raises(
        TypeError,
        match=r"^tvm_ffi\.Tensor\.__dlpack__: max_version must be None or a tuple of two ints "
        rf"\(major, minor\), not {re.escape(repr(max_version))}$",
    ):
        out.__dlpack__(max_version=max_version)


def test_env_alloc_refuses_a_device_without_framework(mod):
    with pytest.raises(RuntimeError) as info:
        mod.alloc_on(2)
    assert_call_error(
        info.value,
        "TVMFFIEnvTensorAlloc: no framework among the call's arguments allocates on device type "
        "2: pass a tensor of that framework",
        "alloc_on",
    )
    assert mod.alloc_on(1).shape == (4,)


@pytest.mark.parametrize(
    ("shape", "dtype", "shown"),
    [
        ([2**32, 2**32], "float32", "float32 tensor of shape (4294967296, 4294967296)"),
        ([2**62], "float32", "float32 tensor of shape (4611686018427387904)"),
        ([2**31, 2**31], "int8x4", "int8x4 tensor of shape (2147483648, 2147483648)"),
    ],
)
def test_env_alloc_size_overflow_is_refused(mod, shape, dtype, shown):
    # The header's FromEnvAlloc writes a shape as its extents in parentheses.
    # Both allocators: our own CPU one (numpy) and the framework's (torch among the arguments
    # would not matter here: FromEnvAlloc checks before any allocator runs).
    with pytest.raises(
        ValueError,
        match=rf"^Tensor::FromEnvAlloc: a {re.escape(shown)} is too large: its size in bytes "
        r"does not fit in int64\n",
    ):
        mod.alloc_shape(shape, dtype)


def test_env_alloc_negative_dimension_is_refused(mod):
    with pytest.raises(
        ValueError,
        match=r"^Tensor::FromEnvAlloc: dimension 1 of the shape is -3 \(expected a size >= 0\)\n",
    ):
        mod.alloc_shape([2, -3], "float32")


def test_empty_tensor_whose_strides_overflow_is_refused(mod):
    # No bytes, but the contiguous strides of (0, 2**40, 2**40) int8 (2**80) overflow: the
    # host allocator refuses it (FromEnvAlloc's own check counts bytes only).
    with pytest.raises(ValueError) as info:
        mod.alloc_shape([0, 2**40, 2**40], "int8")
    assert_call_error(
        info.value,
        "TVMFFIEnvTensorAlloc: a CPU tensor of shape (0, 1099511627776, 1099511627776) is too "
        "large: its size in bytes does not fit in int64",
        "alloc_shape",
    )


def test_env_alloc_sizes_that_fit_are_allocated(mod):
    assert mod.alloc_shape([3, 0, 5], "float32").shape == (3, 0, 5)
    out = mod.alloc_shape([1000, 1000], "float32")
    assert out.shape == (1000, 1000)
    assert np.from_dlpack(out).reshape(-1).view(np.uint8)[-1] == 1  # the byte the callee wrote


def test_fuzz_env_alloc_sizes(mod):
    """Random shapes and dtypes: an overflowing size is a ValueError, any other either
    allocates the tensor (whose last byte the callee writes) or is a MemoryError.
    TVM_FFI_ALLOC_FUZZ_SEED and TVM_FFI_ALLOC_FUZZ_COUNT change the seed (0) and the number
    of shapes (300)."""
    rng = np.random.default_rng(int(os.environ.get("TVM_FFI_ALLOC_FUZZ_SEED", "0")))
    dtypes = {"int8": 8, "float32": 32, "float64": 64, "int8x4": 32, "float16x8": 128}
    for _ in range(int(os.environ.get("TVM_FFI_ALLOC_FUZZ_COUNT", "300"))):
        ndim = int(rng.integers(0, 5))
        shape = [int(rng.choice([0, 1, 3, 2**10, 2**21, 2**31, 2**32, 2**62])) for _ in range(ndim)]
        dtype = str(rng.choice(list(dtypes)))
        bits = dtypes[dtype] * math.prod(max(e, 1) for e in shape)
        if bits > 2**63 - 8:
            with pytest.raises(
                ValueError, match=r"^(Tensor::FromEnvAlloc|TVMFFIEnvTensorAlloc): a .* is too large"
            ):
                mod.alloc_shape(shape, dtype)
            continue
        try:
            out = mod.alloc_shape(shape, dtype)
        except MemoryError:
            continue
        assert (out.shape, out.dtype) == (tuple(shape), dtype)
        del out


def test_host_allocator_size_overflow_is_refused(mod):
    # A C caller of TVMFFIEnvTensorAlloc bypasses FromEnvAlloc: the core's allocator checks too.
    assert mod.raw_alloc_float32([4, 5]) == 0
    with pytest.raises(ValueError) as info:
        mod.raw_alloc_float32([2**32, 2**32])
    assert str(info.value) == (
        "TVMFFIEnvTensorAlloc: a CPU tensor of shape (4294967296, 4294967296) is too large: its "
        "size in bytes does not fit in int64"
    )
    with pytest.raises(ValueError) as info:
        mod.raw_alloc_float32([-1])
    assert str(info.value) == "TVMFFIEnvTensorAlloc got a negative size (-1) in dimension 0"


def test_tensor_from_a_container_argument_comes_back_as_the_callers_object(mod):
    a, b = np.zeros(3, dtype=np.float32), torch.ones(2)
    assert mod.pick([a, b], 0) is a
    assert mod.pick((a, b), 1) is b
    assert mod.pick([[a], b][1:], 0) is b
    assert mod.pick_value({"x": a, "y": b}, "y") is b


def test_tuple_and_array_of_tensors_results(mod):
    x = torch.arange(10, dtype=torch.float32)
    first, rest = mod.split_half(x)  # a C++ Tuple result is a list, as under apache-tvm-ffi
    assert type(first) is torch.Tensor and rest == (5, 5)
    torch.testing.assert_close(first, x[:5])
    outs = mod.clones(x, 3)
    assert isinstance(outs, list) and len(outs) == 3
    assert all(type(t) is torch.Tensor and t.shape == x.shape for t in outs)
    assert mod.clones.signature == "clones(Tensor, int) -> list[Tensor]"


def test_map_of_tuples_argument_and_map_result(mod):
    opts = {"experts": ([1, 2, 3], None), "topk": ([2], torch.zeros(4))}
    assert mod.count_options(opts) == {"experts": 6, "topk": 6}
    assert list(mod.count_options(opts)) == ["experts", "topk"]  # insertion order kept
    assert mod.count_options({}) == {}
    # The header's path names a map value by its key, then the place inside the value.
    with pytest.raises(TypeError) as info:
        mod.count_options({"topk": ([2, "x"], None)})
    assert_call_error(
        info.value, 'count_options() argument 1["topk"][0][1] must be int, not str', "count_options"
    )
    with pytest.raises(TypeError) as info:
        mod.count_options([1])
    assert_call_error(
        info.value,
        # The expected type in the callee's words; the refused one is the caller's type.
        "count_options() argument 1 must be Map[str, tuple[Array[int], Tensor | None]], not list",
        "count_options",
    )


def test_shape_result_is_a_tuple(mod):
    assert mod.shape_of(torch.empty(2, 0, 7)) == (2, 0, 7)


@pytest.mark.parametrize("value", [0, 2**63 - 1])
def test_uint64_range_of_the_abi(mod, value):
    assert mod.echo_u64(value) == value


@pytest.mark.parametrize("value", [2**63, 2**64 - 1, 2**64])
def test_uint64_beyond_int64_is_refused(mod, value):
    # An int travels as TVMFFIAny's int64 payload: uint64 values from 2**63 have no form there.
    with pytest.raises(OverflowError) as info:
        mod.echo_u64(value)
    assert str(info.value) == f"echo_u64() argument 1: int {value} does not fit in int64"


def test_uint64_negative_is_refused(mod):
    with pytest.raises(ValueError) as info:
        mod.echo_u64(-1)
    assert_call_error(
        info.value,
        "echo_u64() argument 1 must fit in uint64 [0, 18446744073709551615] (got -1)",
        "echo_u64",
    )


def test_read_only_array_is_an_input(mod):
    # The tvm-ffi C ABI's DLTensor has no read-only mark (as under apache-tvm-ffi): a read-only
    # array reaches the callee as any other, and reading it is what it is good for.
    frozen = np.frombuffer(b"\x00" * 48, dtype=np.float32).reshape(3, 4)
    y = np.empty((3, 4), dtype=np.float32)
    mod.scale_rows(frozen, y, [3, 4], None, None)
    np.testing.assert_array_equal(y, np.zeros((3, 4), dtype=np.float32))
    assert mod.shape_of(frozen) == (3, 4)


def test_use_raw_stream_is_what_the_callee_sees(mod):
    def current_stream(device_type, device_id):
        stream = mod.current_stream(device_type, device_id)  # a void*: a ctypes.c_void_p
        return None if stream is None else stream.value

    cuda = tvm_ffi.device("cuda:0")
    assert current_stream(1, 0) is None
    # Outer raw streams on both devices: without one the callee sees torch's current stream,
    # which a CUDA build of torch cannot give on a machine without a driver.
    with tvm_ffi.use_raw_stream("cuda:1", 0x1110), tvm_ffi.use_raw_stream(cuda, 0x1000):
        with tvm_ffi.use_raw_stream(cuda, 0xABC0):
            assert current_stream(2, 0) == 0xABC0
            assert tvm_ffi.get_raw_stream("cuda:0") == 0xABC0
            with tvm_ffi.use_raw_stream("cuda:0", 0xDEF0):
                assert current_stream(2, 0) == 0xDEF0
            assert current_stream(2, 0) == 0xABC0
            assert current_stream(2, 1) == 0x1110  # another device is not affected
        assert tvm_ffi.get_raw_stream(cuda) == 0x1000  # the outer one is back
        assert current_stream(2, 0) == 0x1000


def test_device_parsing():
    assert tvm_ffi.device("cuda:1") == tvm_ffi.Device(2, 1)
    assert tvm_ffi.device("cpu") == tvm_ffi.Device(1, 0)
    assert tvm_ffi.device(torch.device("cuda", 3)) == tvm_ffi.Device(2, 3)
    assert str(tvm_ffi.device((2, 0))) == "cuda:0"
    with pytest.raises(ValueError, match=r"^device: cannot read 'gpu:0' as a device"):
        tvm_ffi.device("gpu:0")


RETURNS_ARGUMENT = r"""
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>

namespace ffi = tvm::ffi;

// In-place wrappers often return their output argument.
ffi::Tensor FillInPlace(ffi::Tensor out, double value) {
  float* p = static_cast<float*>(out.data_ptr());
  for (int64_t i = 0; i < out.numel(); ++i) p[i] = static_cast<float>(value);
  return out;
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(fill_in_place, FillInPlace);

ffi::Tensor Second(ffi::Tensor a, ffi::Tensor b) { return a.numel() > 0 ? b : a; }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(second, Second);
"""


def test_returning_an_argument_tensor_gives_back_the_callers_object(build_library):
    mod = tvm_ffi.load_module(build_library("returns_argument", RETURNS_ARGUMENT))
    x = torch.empty(6)
    assert mod.fill_in_place(x, 2.5) is x
    torch.testing.assert_close(x, torch.full((6,), 2.5))
    a, b = torch.zeros(2), np.zeros(3, dtype=np.float32)
    assert mod.second(a, b) is b
    assert mod.second(torch.zeros(0), b).numel() == 0
