"""Tensor arguments: every DLPack route (the C exchange API, versioned and legacy __dlpack__),
views and offsets, producer lifetimes, and the stream query of the call context."""

from __future__ import annotations

import ctypes
import gc
import os
import re
import sys

import numpy as np
import pytest

import tvm_ffi
from helpers.call_errors import assert_call_error

SOURCE = r"""
#include <cstdint>
#include <tuple>
#include <vector>

#include <tvm/ffi/extra/stl.h>  // std:: types as arguments and results (as apache's)
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>

using tvm::ffi::TensorView;

// Visits every element's address of a strided tensor (0-d included).
template <typename F>
void ForEach(const TensorView& t, F f) {
  const int64_t n = t.numel();
  const int64_t itemsize = t.dtype().bits / 8;
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t rest = flat, offset = 0;
    for (int32_t d = t.ndim() - 1; d >= 0; --d) {
      offset += (rest % t.size(d)) * t.stride(d);
      rest /= t.size(d);
    }
    f(static_cast<char*>(t.data_ptr()) + offset * itemsize);
  }
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(describe, [](TensorView t) {
  std::vector<int64_t> shape, strides;
  for (int32_t d = 0; d < t.ndim(); ++d) {
    shape.push_back(t.size(d));
    strides.push_back(t.stride(d));
  }
  return std::make_tuple(static_cast<int64_t>(t.device().device_type),
                         static_cast<int64_t>(t.device().device_id), shape, strides,
                         static_cast<int64_t>(t.dtype().code),
                         static_cast<int64_t>(t.dtype().bits),
                         static_cast<int64_t>(t.dtype().lanes));
});

TVM_FFI_DLL_EXPORT_TYPED_FUNC(sum_f64, [](TensorView t) {
  double sum = 0;
  ForEach(t, [&](char* p) { sum += *reinterpret_cast<double*>(p); });
  return sum;
});

TVM_FFI_DLL_EXPORT_TYPED_FUNC(imag_c128, [](TensorView t) {
  return reinterpret_cast<double*>(t.data_ptr())[1];  // the first element's imaginary part
});

TVM_FFI_DLL_EXPORT_TYPED_FUNC(fill_f32, [](TensorView t, double value) {
  ForEach(t, [&](char* p) { *reinterpret_cast<float*>(p) = static_cast<float>(value); });
});

TVM_FFI_DLL_EXPORT_TYPED_FUNC(numels, [](std::vector<TensorView> ts) {
  std::vector<int64_t> out;
  for (const TensorView& t : ts) out.push_back(t.numel());
  return out;
});

TVM_FFI_DLL_EXPORT_TYPED_FUNC(stream_of, [](TensorView, int64_t type, int64_t id) {
  return reinterpret_cast<int64_t>(TVMFFIEnvGetStream(static_cast<int32_t>(type),
                                                      static_cast<int32_t>(id)));
});

TVM_FFI_DLL_EXPORT_TYPED_FUNC(stream_without_tensor, [](int64_t type, int64_t id) {
  return reinterpret_cast<int64_t>(TVMFFIEnvGetStream(static_cast<int32_t>(type),
                                                      static_cast<int32_t>(id)));
});

// ---- a fake producer of the DLPack C exchange API -----------------------------------------
// Its tensors are a fixed float64 [1, 2, 3]; its "stream" for (type, id) is 0x5000 + 16 * type
// + id. Declared here from the DLPack 1.3 layout, independently of the extension's copy.
struct FakeHeader { DLPackVersion version; FakeHeader* prev_api; };
struct FakeApi {
  FakeHeader header;
  void* managed_tensor_allocator;
  int (*managed_tensor_from_py_object_no_sync)(void*, DLManagedTensorVersioned**);
  void* managed_tensor_to_py_object_no_sync;
  int (*dltensor_from_py_object_no_sync)(void*, DLTensor*);
  int (*current_work_stream)(DLDeviceType, int32_t, void**);
};

static double g_data[3] = {1, 2, 3};
static int64_t g_shape[1] = {3};
static int64_t g_deleted = 0;

static void FillFake(DLTensor* out) {
  out->data = g_data;
  out->device = DLDevice{kDLCPU, 0};
  out->ndim = 1;
  out->dtype = DLDataType{kDLFloat, 64, 1};
  out->shape = g_shape;
  out->strides = nullptr;
  out->byte_offset = 0;
}
static int FakeToDLTensor(void*, DLTensor* out) { FillFake(out); return 0; }
static int FakeCudaToDLTensor(void*, DLTensor* out) {
  FillFake(out);
  out->device = DLDevice{kDLCUDA, 0};
  return 0;
}
static void FakeDeleter(DLManagedTensorVersioned* self) { ++g_deleted; delete self; }
static int FakeToManaged(void*, DLManagedTensorVersioned** out) {
  auto* m = new DLManagedTensorVersioned();
  m->version = DLPackVersion{1, 3};
  m->deleter = FakeDeleter;
  FillFake(&m->dl_tensor);
  *out = m;
  return 0;
}
static int FakeStream(DLDeviceType type, int32_t id, void** out) {
  *out = reinterpret_cast<void*>(static_cast<intptr_t>(0x5000 + 16 * type + id));
  return 0;
}

static FakeApi g_direct = {{{1, 3}, nullptr}, nullptr, FakeToManaged, nullptr, FakeToDLTensor,
                           FakeStream};
static FakeApi g_managed_only = {{{1, 3}, nullptr}, nullptr, FakeToManaged, nullptr, nullptr,
                                 FakeStream};
static FakeApi g_cuda = {{{1, 3}, nullptr}, nullptr, FakeToManaged, nullptr, FakeCudaToDLTensor,
                         FakeStream};
static FakeApi g_future = {{{2, 0}, &g_direct.header}, nullptr, nullptr, nullptr, nullptr,
                           nullptr};

TVM_FFI_DLL_EXPORT_TYPED_FUNC(fake_api, [](std::string which) -> void* {
  if (which == "direct") return &g_direct;
  if (which == "managed_only") return &g_managed_only;
  if (which == "cuda") return &g_cuda;
  return &g_future;
});
TVM_FFI_DLL_EXPORT_TYPED_FUNC(fake_deleted, []() { return g_deleted; });
"""

KDL_CPU, KDL_CUDA = 1, 2
FLOAT, INT = 2, 0


@pytest.fixture(scope="module")
def mod(build_library):
    return tvm_ffi.load_module(build_library("tensors", SOURCE))


def _fake_tensor_type(mod, which: str) -> type:
    """A Python type whose __dlpack_c_exchange_api__ capsule points at the fake table."""
    new_capsule = ctypes.pythonapi.PyCapsule_New
    new_capsule.restype = ctypes.py_object
    new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    name = b"dlpack_exchange_api"  # must outlive the capsule: kept on the class
    capsule = new_capsule(mod.fake_api(which), name, None)
    return type(f"Fake_{which}", (), {"__dlpack_c_exchange_api__": capsule, "_name": name})


def _strides(a) -> list[int]:
    return [s // a.itemsize for s in a.strides]


@pytest.mark.parametrize(
    "make",
    [
        lambda: np.arange(12, dtype=np.float64),
        lambda: np.arange(12, dtype=np.float64).reshape(3, 4),
        lambda: np.arange(12, dtype=np.float64).reshape(3, 4).T,  # transposed
        lambda: np.arange(24, dtype=np.float64)[::3],  # strided
        lambda: np.arange(24, dtype=np.float64).reshape(4, 6)[1:3, 2:5],  # offset view
        lambda: np.array(4.5),  # 0-d
        lambda: np.zeros((0, 3)),  # empty
    ],
    ids=["1d", "2d", "transposed", "strided", "offset-view", "0d", "empty"],
)
def test_numpy_views(mod, make):
    a = make()
    dev_type, dev_id, shape, strides, code, bits, lanes = mod.describe(a)
    assert (dev_type, dev_id) == (KDL_CPU, 0)
    assert shape == list(a.shape)
    assert strides == _strides(a)
    assert (code, bits, lanes) == (FLOAT, 64, 1)
    assert mod.sum_f64(a) == pytest.approx(float(a.sum()))


def test_numpy_dtypes(mod):
    for dtype, code, bits in [(np.int32, INT, 32), (np.uint8, 1, 8), (np.float32, FLOAT, 32)]:
        # describe returns a C++ tuple: a list on the tvm-ffi C ABI, as under apache-tvm-ffi.
        assert mod.describe(np.zeros(2, dtype=dtype))[4:] == [code, bits, 1]


def test_writes_through_a_numpy_view(mod):
    base = np.zeros((4, 6), dtype=np.float32)
    mod.fill_f32(base[1:3, ::2], 7.0)
    expected = np.zeros((4, 6), dtype=np.float32)
    expected[1:3, ::2] = 7.0
    np.testing.assert_array_equal(base, expected)


def test_numpy_capsules_are_released(mod):
    a = np.arange(5, dtype=np.float64)
    gc.collect()
    before = sys.getrefcount(a)
    for _ in range(100):
        mod.sum_f64(a)
    with pytest.raises(TypeError):
        mod.stream_of(a, "x", 0)  # a failing call releases too
    gc.collect()
    assert sys.getrefcount(a) == before


def test_read_only_numpy_array(mod):
    a = np.arange(3, dtype=np.float64)
    a.flags.writeable = False
    assert mod.sum_f64(a) == 3.0


def test_producer_with_only_versioned_dlpack(mod):
    class Wrapper:
        def __init__(self, array):
            self.array = array
            self.calls = []

        def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
            self.calls.append(max_version)
            return self.array.__dlpack__(max_version=max_version)

    w = Wrapper(np.arange(6, dtype=np.float64).reshape(2, 3))
    assert mod.sum_f64(w) == 15.0
    assert mod.describe(w)[2] == [2, 3]
    assert w.calls == [(1, 1), (1, 1)]


def test_producer_with_legacy_dlpack_only(mod):
    class Legacy:
        def __init__(self, array):
            self.array = array
            self.calls = 0

        def __dlpack__(self, stream=None):  # no max_version: pre-1.0 protocol
            self.calls += 1
            return self.array.__dlpack__()

    a = np.arange(4, dtype=np.float64)
    legacy = Legacy(a)
    before = sys.getrefcount(a)
    assert mod.sum_f64(legacy) == 6.0
    assert legacy.calls == 1
    gc.collect()
    assert sys.getrefcount(a) == before


def test_dlpack_errors_propagate(mod):
    class Broken:
        def __dlpack__(self, **kwargs):
            raise BufferError("cannot export")

    class NotACapsule:
        def __dlpack__(self, **kwargs):
            return 42

    with pytest.raises(BufferError, match=r"^cannot export$"):
        mod.sum_f64(Broken())
    with pytest.raises(
        TypeError,
        match=r"^sum_f64\(\) argument 1: .*NotACapsule.__dlpack__\(\) returned int, not a DLPack",
    ):
        mod.sum_f64(NotACapsule())


# ---- a producer written in Python (ctypes): any DLTensor fields, a deleter that runs Python --


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _Device),
        ("ndim", ctypes.c_int32),
        ("dtype", _DType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _Managed(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_Managed))
_Managed._fields_ = [
    ("dl_tensor", _DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", _DELETER),
]


class CtypesProducer:
    """A pre-1.0 DLPack producer over a float64 numpy array, with the DLTensor fields
    (ndim, shape, strides) given as they are, and a deleter written in Python that records
    its call."""

    def __init__(self, array, ndim=None, shape=None, strides=None):
        self.array = array
        self.deleted = 0
        shape = list(array.shape) if shape is None else shape
        self._shape = None if shape is False else (ctypes.c_int64 * max(len(shape), 1))(*shape)
        self._strides = None if strides is None else (ctypes.c_int64 * len(strides))(*strides)
        self._managed = _Managed()
        t = self._managed.dl_tensor
        t.data = array.ctypes.data
        t.device = _Device(KDL_CPU, 0)
        t.ndim = array.ndim if ndim is None else ndim
        t.dtype = _DType(FLOAT, 64, 1)
        if self._shape is not None:
            t.shape = ctypes.cast(self._shape, ctypes.POINTER(ctypes.c_int64))
        if self._strides is not None:
            t.strides = ctypes.cast(self._strides, ctypes.POINTER(ctypes.c_int64))
        self._managed.deleter = _DELETER(self._delete)  # kept alive by self

    def _delete(self, _managed):
        self.deleted += 1  # Python code, run from the producer's C deleter

    def __dlpack__(self, **kwargs):
        new_capsule = ctypes.pythonapi.PyCapsule_New
        new_capsule.restype = ctypes.py_object
        new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new_capsule(ctypes.addressof(self._managed), b"dltensor", None)


def test_python_deleter_keeps_the_calls_error(mod):
    """Issue 20, item 17: the argument after the tensor fails to convert; the producer's
    deleter, which runs Python code, must not replace that error (it was SystemError)."""
    producer = CtypesProducer(np.arange(3, dtype=np.float64))
    assert mod.sum_f64(producer) == 3.0
    assert producer.deleted == 1
    with pytest.raises(TypeError) as info:
        mod.stream_of(producer, "1", 0)
    assert_call_error(info.value, "stream_of() argument 2 must be int, not str", "stream_of")
    assert producer.deleted == 2
    with pytest.raises(OverflowError) as info:
        mod.stream_of(producer, 2**70, 0)
    assert str(info.value) == f"stream_of() argument 2: int {2**70} does not fit in int64"
    assert producer.deleted == 3


@pytest.mark.parametrize(
    ("ndim", "shape", "message"),
    [
        (-1, [3], "a DLTensor with a negative ndim (ndim -1)"),
        (-(2**31), [3], "a DLTensor with a negative ndim (ndim -2147483648)"),
        (2, False, "a DLTensor with no shape (ndim 2)"),
        (2, [3, -1], "a DLTensor with a negative size (-1) in dimension 1"),
    ],
)
def test_bad_dltensor_fields_stop_before_the_callee(mod, ndim, shape, message):
    producer = CtypesProducer(np.arange(3, dtype=np.float64), ndim=ndim, shape=shape)
    with pytest.raises(
        ValueError, match=rf"^sum_f64\(\) argument 1: CtypesProducer gave {re.escape(message)}$"
    ):
        mod.sum_f64(producer)
    assert producer.deleted == 1


_OVERFLOW = "a shape and strides whose extent overflows 64 bits (at dimension 0)"


@pytest.mark.parametrize(
    ("ndim", "shape", "strides", "message"),
    [
        (-1, [3], None, "a negative ndim (ndim -1)"),
        (2000, [3], None, "too many dimensions (ndim 2000, at most 1024)"),
        (2, False, None, "no shape (ndim 2)"),
        (2, [3, -2], None, "a negative size (-2) in dimension 1"),
        (2, [2**40, 2**40], None, _OVERFLOW),  # 2**80 elements
        (1, [2**60], None, _OVERFLOW),  # 2**63 bytes of float64
        (1, [3], [2**62], _OVERFLOW),
        (1, [3], [-(2**63)], _OVERFLOW),
    ],
)
def test_from_dlpack_refuses_bad_dltensor_fields(ndim, shape, strides, message):
    """Issue 28, item 14: from_dlpack kept a tensor with a negative size (its shape was then
    reported as given, and handed on to callees and consumers)."""
    producer = CtypesProducer(
        np.arange(3, dtype=np.float64), ndim=ndim, shape=shape, strides=strides
    )
    with pytest.raises(
        ValueError,
        match=rf"^from_dlpack: CtypesProducer\.__dlpack__\(\) gave a DLTensor with "
        rf"{re.escape(message)}$",
    ):
        tvm_ffi.from_dlpack(producer)
    assert producer.deleted == 1  # refused, and released


def test_from_dlpack_keeps_good_fields_as_given():
    empty_huge = CtypesProducer(np.zeros(1), ndim=2, shape=[0, 2**62])  # no element: no extent
    assert tvm_ffi.from_dlpack(empty_huge).shape == (0, 2**62)
    reversed_view = CtypesProducer(np.arange(3, dtype=np.float64), strides=[-1])
    assert tvm_ffi.from_dlpack(reversed_view).shape == (3,)


def test_fuzz_dltensor_fields(mod):
    """Random ndim and shapes from a producer: refused with ValueError, or seen as given.
    TVM_FFI_DLTENSOR_FUZZ_SEED and TVM_FFI_DLTENSOR_FUZZ_COUNT change the seed (0) and the
    number of tensors (2000)."""
    rng = np.random.default_rng(int(os.environ.get("TVM_FFI_DLTENSOR_FUZZ_SEED", "0")))
    data = np.zeros(64, dtype=np.float64)  # every accepted shape below fits in 64 elements
    for _ in range(int(os.environ.get("TVM_FFI_DLTENSOR_FUZZ_COUNT", "2000"))):
        ndim = int(rng.choice([-(2**31), -2, -1, 0, 1, 2, 3, 4]))
        extents = [int(rng.choice([-(2**63), -1, 0, 1, 2, 4])) for _ in range(max(ndim, 0))]
        shape = False if ndim > 0 and rng.random() < 0.1 else extents
        producer = CtypesProducer(data, ndim=ndim, shape=shape)
        valid = ndim >= 0 and shape is not False and all(e >= 0 for e in extents)
        if valid:
            assert mod.describe(producer)[2] == extents
        else:
            with pytest.raises(ValueError, match=r"^describe\(\) argument 1: CtypesProducer "):
                mod.describe(producer)
        assert producer.deleted == 1


def test_non_tensor_names_its_type(mod):
    class Custom:
        pass

    for value, shown in [(Custom(), "Custom"), ([1.0], "list")]:
        with pytest.raises(TypeError) as info:
            mod.sum_f64(value)
        assert_call_error(
            info.value, f"sum_f64() argument 1 must be Tensor, not {shown}", "sum_f64"
        )


def test_list_of_tensors(mod):
    arrays = [np.zeros(3), np.zeros((2, 5)), np.array(1.0)]
    assert mod.numels(arrays) == [3, 10, 1]
    assert mod.numels(tuple(arrays)) == [3, 10, 1]


def test_cpu_call_reports_no_stream(mod):
    assert mod.stream_of(np.zeros(1), KDL_CPU, 0) == 0


@pytest.mark.parametrize("which", ["direct", "managed_only", "future"])
def test_exchange_api_producer(mod, which):
    Fake = _fake_tensor_type(mod, which)
    deleted = mod.fake_deleted()
    assert mod.sum_f64(Fake()) == 6.0
    assert mod.describe(Fake())[2] == [3]
    # Its tensors are CPU ones: a call without a CUDA tensor asks no producer for a stream
    # (as under apache-tvm-ffi); the callee sees the default stream, NULL.
    assert mod.stream_of(Fake(), KDL_CUDA, 1) == 0
    expected_deleted = 3 if which == "managed_only" else 0
    assert mod.fake_deleted() - deleted == expected_deleted


def test_stream_comes_from_the_producer_of_a_cuda_tensor_argument(mod):
    # The producer's current_work_stream, asked lazily, for any CUDA device the callee asks.
    FakeCuda = _fake_tensor_type(mod, "cuda")
    assert mod.stream_of(FakeCuda(), KDL_CUDA, 0) == 0x5000 + 16 * KDL_CUDA + 0
    if not _has_libcuda():  # with a driver, asking for device 3 makes it current: it must exist
        assert mod.stream_of(FakeCuda(), KDL_CUDA, 3) == 0x5000 + 16 * KDL_CUDA + 3
    # A call without tensors has no producer to ask, whatever was seen before.
    mod.sum_f64(_fake_tensor_type(mod, "direct")())
    assert mod.stream_without_tensor(KDL_CUDA, 3) == 0


def test_exchange_api_subclass_is_found_through_the_type(mod):
    Fake = _fake_tensor_type(mod, "direct")
    Sub = type("Sub", (Fake,), {})
    assert mod.sum_f64(Sub()) == 6.0


def _has_libcuda() -> bool:
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


@pytest.mark.skipif(_has_libcuda(), reason="checks a machine without libcuda")
def test_cuda_tensor_fields_reach_the_callee_without_a_driver(mod):
    # Without a driver no real CUDA memory exists: the core switches no device and the callee
    # gets the DLTensor's fields as given (reading the memory would be its own error).
    FakeCuda = _fake_tensor_type(mod, "cuda")
    assert mod.describe(FakeCuda()) == [KDL_CUDA, 0, [3], [1], FLOAT, 64, 1]


@pytest.mark.skipif(_has_libcuda(), reason="checks a machine without libcuda")
def test_raw_streams_answer_per_device_inside_a_call(mod):
    # use_raw_stream of a device wins over the producer's stream for that device only, whichever
    # device the call's first tensor is on. (With a driver, asking for a device's stream makes
    # it current, so the fake devices would have to exist: test_core_cuda.py has the real one.)
    FakeCuda = _fake_tensor_type(mod, "cuda")  # its tensors are on cuda:0
    producer = 0x5000 + 16 * KDL_CUDA
    with tvm_ffi.use_raw_stream("cuda:1", 0x1110):
        assert mod.stream_of(FakeCuda(), KDL_CUDA, 1) == 0x1110
        assert mod.stream_of(FakeCuda(), KDL_CUDA, 0) == producer + 0
    with tvm_ffi.use_raw_stream("cuda:0", 0x1000):
        assert mod.stream_of(FakeCuda(), KDL_CUDA, 0) == 0x1000
        assert mod.stream_of(FakeCuda(), KDL_CUDA, 2) == producer + 2
        with tvm_ffi.use_raw_stream("cuda:0", 0x2000):
            assert mod.stream_of(FakeCuda(), KDL_CUDA, 0) == 0x2000  # the innermost
        assert mod.stream_of(FakeCuda(), KDL_CUDA, 0) == 0x1000
    assert mod.stream_of(FakeCuda(), KDL_CUDA, 0) == producer + 0


# ---- torch ----------------------------------------------------------------------------------


@pytest.fixture
def torch():
    import torch

    return torch


def test_torch_has_the_exchange_api(torch):
    assert type(torch.Tensor.__dlpack_c_exchange_api__).__name__ == "PyCapsule"


@pytest.mark.parametrize(
    "make",
    [
        lambda t: t.arange(12, dtype=t.float64),
        lambda t: t.arange(12, dtype=t.float64).reshape(3, 4).t(),
        lambda t: t.arange(24, dtype=t.float64)[5::3],
        lambda t: t.arange(24, dtype=t.float64).reshape(4, 6)[1:3, 2:5],
        lambda t: t.tensor(2.5, dtype=t.float64),
        lambda t: t.arange(12, dtype=t.float64).reshape(3, 4)[:, 1].unsqueeze(0),
    ],
    ids=["1d", "transposed", "offset-strided", "offset-view", "0d", "unsqueezed"],
)
def test_torch_cpu_views(mod, torch, make):
    x = make(torch)
    dev_type, dev_id, shape, strides, code, bits, lanes = mod.describe(x)
    assert (dev_type, dev_id) == (KDL_CPU, 0)
    assert shape == list(x.shape)
    # Strides of size-1 dimensions carry no information; producers may normalise them.
    assert [s for s, n in zip(strides, x.shape) if n != 1] == [
        s for s, n in zip(x.stride(), x.shape) if n != 1
    ]
    assert (code, bits, lanes) == (FLOAT, 64, 1)
    assert mod.sum_f64(x) == pytest.approx(float(x.sum()))


def test_torch_writes_through_views(mod, torch):
    base = torch.zeros(4, 6, dtype=torch.float32)
    mod.fill_f32(base[1:3, ::2], 3.0)
    expected = torch.zeros(4, 6, dtype=torch.float32)
    expected[1:3, ::2] = 3.0
    assert torch.equal(base, expected)


def test_torch_never_goes_through_python_dlpack(mod, torch, monkeypatch):
    def forbidden(self, *args, **kwargs):
        raise AssertionError("__dlpack__ called on the hot path")

    monkeypatch.setattr(torch.Tensor, "__dlpack__", forbidden)
    x = torch.ones(5, dtype=torch.float64)
    assert mod.sum_f64(x) == 5.0
    assert mod.sum_f64(torch.nn.Parameter(x)) == 5.0


def test_torch_and_numpy_mixed_in_one_list(mod, torch):
    assert mod.numels([torch.zeros(2, 2), np.zeros(3)]) == [4, 3]


def test_torch_tensor_refcount_is_unchanged(mod, torch):
    x = torch.ones(3, dtype=torch.float64)
    before = sys.getrefcount(x)
    for _ in range(100):
        mod.sum_f64(x)
    assert sys.getrefcount(x) == before


def test_torch_cpu_stream_is_null(mod, torch):
    assert mod.stream_of(torch.zeros(1), KDL_CPU, 0) == 0


def test_wrong_tensor_argument_count_message(mod, torch):
    with pytest.raises(TypeError, match=re.escape("sum_f64() takes 1 argument (2 given)")):
        mod.sum_f64(torch.zeros(1), torch.zeros(1))


# torch keeps conj() and the imaginary part of a conjugate lazy: a bit on the tensor, the
# memory unchanged. A DLTensor has no such bit, so the callee would read the values before
# negation; such tensors are refused as torch's own __dlpack__ refuses the conjugate bit.
CONJ_MESSAGE = (
    r"^{}\(\) argument {}: can't pass a torch tensor with the conjugate bit set; "
    r"pass tensor\.resolve_conj\(\)$"
)
NEG_MESSAGE = (
    r"^{}\(\) argument {}: can't pass a torch tensor with the negative bit set; "
    r"pass tensor\.resolve_neg\(\)$"
)


def _conj(torch, cls=None):
    z = torch.tensor([1 + 2j, 3 + 4j], dtype=torch.complex128)
    return (z if cls is None else z.as_subclass(cls)).conj()


def _torch_without_exchange_api(torch) -> type:
    # A torch.Tensor subclass without the C exchange API goes through __dlpack__.
    return type("NoExchange", (torch.Tensor,), {"__dlpack_c_exchange_api__": None})


@pytest.mark.parametrize("route", ["exchange", "dlpack"])
def test_torch_conjugate_bit_is_refused(mod, torch, route):
    cls = None if route == "exchange" else _torch_without_exchange_api(torch)
    z = _conj(torch, cls)
    assert z.is_conj() and z.imag[0].item() == -2.0
    with pytest.raises(BufferError, match=CONJ_MESSAGE.format("imag_c128", 1)):
        mod.imag_c128(z)
    with pytest.raises(BufferError, match=CONJ_MESSAGE.format("numels", 1)):
        mod.numels([torch.zeros(1), z])  # inside a list: the list's argument position
    assert mod.imag_c128(z.resolve_conj()) == -2.0


def test_torch_refuses_the_conjugate_bit_with_the_same_exception(torch):
    with pytest.raises(BufferError, match=r"^Can't export tensors with the conjugate bit set$"):
        _conj(torch).__dlpack__()


@pytest.mark.parametrize("route", ["exchange", "dlpack"])
def test_torch_negative_bit_is_refused(mod, torch, route):
    cls = None if route == "exchange" else _torch_without_exchange_api(torch)
    n = _conj(torch, cls).imag  # float64, negative bit set: memory holds 2, 4
    assert n.is_neg() and not n.is_conj() and n.tolist() == [-2.0, -4.0]
    with pytest.raises(BufferError, match=NEG_MESSAGE.format("sum_f64", 1)):
        mod.sum_f64(n)
    with pytest.raises(BufferError, match=NEG_MESSAGE.format("stream_of", 1)):
        mod.stream_of(n, KDL_CPU, 0)
    assert mod.sum_f64(n.resolve_neg()) == -6.0


@pytest.mark.parametrize(
    "make",
    [
        lambda n: n[0],  # 0-d
        lambda n: n[1:],  # one element
        lambda n: n.reshape(2, 3).t(),  # 2-d, transposed
        lambda n: n[::2],  # strided
        lambda n: n.reshape(3, 2)[:, :1],  # a column
    ],
    ids=["0d", "one-element", "transposed", "strided", "column"],
)
def test_torch_negative_bit_is_refused_in_any_layout(mod, torch, make):
    z = torch.arange(6, dtype=torch.float64) * 1j  # complex128, imaginary parts 0..5
    n = make(z.conj().imag)
    assert n.is_neg()
    with pytest.raises(BufferError, match=NEG_MESSAGE.format("sum_f64", 1)):
        mod.sum_f64(n)
    assert mod.sum_f64(n.resolve_neg()) == pytest.approx(float(n.sum()))


def test_torch_even_strided_tensor_without_bits_passes(mod, torch):
    # Even strides make us ask torch; a plain tensor answers no and passes.
    x = torch.arange(12, dtype=torch.float64).reshape(3, 4)[::2, ::2]
    assert mod.sum_f64(x) == float(x.sum())
    assert mod.sum_f64(torch.tensor(7.0, dtype=torch.float64)) == 7.0


def test_torch_real_tensor_conj_is_a_no_op(mod, torch):
    x = torch.ones(3, dtype=torch.float64)
    assert not x.conj().is_conj()
    assert mod.sum_f64(x.conj()) == 3.0
