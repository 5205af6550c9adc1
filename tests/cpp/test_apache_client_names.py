"""The apache-tvm-ffi names FlashInfer 0.7.2.post1's sources use, each in a wrapper written the
way that source writes it, built with load_inline and called:

- ``TVM_FFI_SAFE_CALL_BEGIN/END`` around a C function over ``TVMFFIAny`` arguments read as
  ``AnyView``, calling ``Function::CallPacked(args, n, &result)`` (cake_dsv4_launch_sequence.cc),
  checked by ``TVM_FFI_CHECK_SAFE_CALL``;
- ``std::invalid_argument`` after including only tvm/ffi headers (dsv3_router_gemm.cu);
- a ``DLDataType`` parameter given a torch dtype (trtllm_allreduce.cu), and its siblings
  ``DLDevice`` and enumerations;
- ``return tvm::ffi::Tuple(a, b)`` into a declared ``Tuple<...>`` (trtllm_*_alltoall.cu);
- ``tvm::ffi::GetDataSize`` and the other free functions of container/tensor.h
  (vllm_custom_all_reduce.cu);
- ``tvm::ffi::TypeTraits<T>::CopyToAnyView`` (the generated cake bindings' None result);
- ``ObjectDef::def_ro``/``def_rw`` fields read as attributes (sglang's distributed/registry.cuh).

``CubinKernel::LaunchEx(args, cudaLaunchConfig_t)`` (alphamoe_fused_router.cu) is in
tests/cpp/cuda/test_apache_compat.py and its GPU sibling.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tvm_ffi
from tvm_ffi import cpp

SAFE_CALL = r"""
#include <tvm/ffi/any.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>

#include <cstdint>
#include <stdexcept>

// As FlashInfer's run_sequence: (launcher, count, args...) groups, each launcher called with
// its arguments, in one C call.
extern "C" int RunSequence(void* self, const TVMFFIAny* args, int32_t num_args,
                           TVMFFIAny* result) {
  TVM_FFI_SAFE_CALL_BEGIN();
  (void)self, (void)result;
  const tvm::ffi::AnyView* view = reinterpret_cast<const tvm::ffi::AnyView*>(args);
  int32_t i = 0;
  while (i < num_args) {
    TVM_FFI_CHECK(i + 2 <= num_args, ValueError)
        << "run_sequence: launcher " << i << " lacks its argument count";
    tvm::ffi::Function launcher = view[i].cast<tvm::ffi::Function>();
    int64_t count = view[i + 1].cast<int64_t>();
    if (count == 99) throw std::runtime_error("count 99 is not a count");
    tvm::ffi::Any ignored;
    launcher.CallPacked(view + i + 2, static_cast<int32_t>(count), &ignored);
    i += 2 + static_cast<int32_t>(count);
  }
  TVM_FFI_SAFE_CALL_END();
}

tvm::ffi::Function MakeRunSequence() {
  return tvm::ffi::Function::FromPacked([](tvm::ffi::PackedArgs args, tvm::ffi::Any* rv) {
    TVM_FFI_CHECK_SAFE_CALL(RunSequence(nullptr, reinterpret_cast<const TVMFFIAny*>(args.data()),
                                        args.size(), nullptr));
    *rv = tvm::ffi::Any();
  });
}

int CheckedCode(int code) {
  TVM_FFI_CHECK_SAFE_CALL(code);
  return 0;
}
"""


@pytest.fixture(scope="module")
def safe_call():
    return cpp.load_inline(
        "apache_safe_call", cpp_sources=SAFE_CALL, functions=["MakeRunSequence", "CheckedCode"]
    )


def test_safe_call_runs_the_sequence(safe_call):
    calls = []
    run = safe_call.MakeRunSequence()
    x = np.random.default_rng(0).standard_normal(3)
    run(
        lambda a, b: calls.append(("first", a, b)), 2, 7, "seven", lambda: calls.append("second"), 0
    )
    run(lambda t: calls.append(("third", float(t))), 1, float(x[0]))
    assert calls == [("first", 7, "seven"), "second", ("third", float(x[0]))]


def test_safe_call_error_is_rethrown_with_its_kind(safe_call):
    run = safe_call.MakeRunSequence()
    with pytest.raises(ValueError) as info:
        run(lambda: None)
    # The message is the check's own; where it was raised goes to the error's note (C++ frames),
    # not into the message as on the old ABI.
    assert str(info.value) == (
        "Check failed: (i + 2 <= num_args) is false: run_sequence: launcher 0 lacks its argument "
        "count"
    )


def test_safe_call_standard_exception_is_an_internal_error(safe_call):
    with pytest.raises(RuntimeError, match=r"count 99 is not a count"):
        safe_call.MakeRunSequence()(lambda: None, 99)


def test_safe_call_callee_error_passes_through(safe_call):
    def fails(n):
        raise KeyError(f"launcher saw {n}")

    with pytest.raises(KeyError, match=r"launcher saw 5"):
        safe_call.MakeRunSequence()(fails, 1, 5)


def test_check_safe_call_without_a_raised_error(safe_call):
    assert safe_call.CheckedCode(0) == 0
    # -2 is the C ABI's "the frontend's error is already set" (apache's EnvErrorAlreadySet);
    # with none set, the core names the function that returned it.
    with pytest.raises(RuntimeError) as info:
        safe_call.CheckedCode(-2)
    assert str(info.value) == "CheckedCode() returned -2 (Python error set) but none is set"


VALUES = r"""
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/container/tuple.h>

enum class Strategy : int { kOneShot = 1, kTwoShot = 2 };

// Each after the FlashInfer function that uses it.
int64_t DTypeBits(DLDataType dtype) {  // trtllm_lamport_initialize
  if (dtype.code == kDLInt || dtype.code == kDLUInt) {
    std::string name = tvm::ffi::DLDataTypeToString(dtype);
    throw std::invalid_argument("unsupported dtype " + name);
  }
  return dtype.bits * dtype.lanes;
}
DLDataType SameDType(DLDataType dtype) { return dtype; }
DLDevice NextDevice(DLDevice device) { return DLDevice{device.device_type, device.device_id + 1}; }
int64_t StrategyCode(Strategy s) { return static_cast<int64_t>(s) * 10; }
Strategy Twice(Strategy s) { return static_cast<Strategy>(static_cast<int>(s) * 2); }

tvm::ffi::Tuple<tvm::ffi::Array<int64_t>, int64_t, double> Offsets(int64_t n) {
  tvm::ffi::Array<int64_t> offsets;
  for (int64_t i = 0; i < n; ++i) offsets.push_back(i * 16);
  int count = static_cast<int>(n);  // an int: the deduced Tuple converts element-wise
  return tvm::ffi::Tuple(offsets, count, 0.5);
}
int64_t SecondOf(tvm::ffi::Tuple<int64_t, int64_t> pair) {
  using tvm::ffi::get;
  tvm::ffi::Tuple<int64_t, double> wider = pair;
  return get<1>(pair) + static_cast<int64_t>(get<1>(wider));
}

// FlashInfer's generated cake bindings write their None result this way.
tvm::ffi::Array<int64_t> ResultSlots() {
  TVMFFIAny none, seven;
  tvm::ffi::TypeTraits<std::nullptr_t>::CopyToAnyView(nullptr, &none);
  tvm::ffi::TypeTraits<int64_t>::CopyToAnyView(7, &seven);
  return {none.type_index == kTVMFFINone, seven.type_index == kTVMFFIInt, seven.v_int64};
}

tvm::ffi::Array<int64_t> Sizes(tvm::ffi::TensorView t) {  // vllm_custom_all_reduce
  const DLTensor& dl = *t.GetDLTensorPtr();
  return {static_cast<int64_t>(tvm::ffi::GetDataSize(t.numel(), t.dtype())),
          static_cast<int64_t>(tvm::ffi::GetDataSize(dl)),
          static_cast<int64_t>(tvm::ffi::GetDataSize(t)),
          static_cast<int64_t>(tvm::ffi::GetDataSize(3, DLDataType{kDLFloat, 4, 1})),
          tvm::ffi::IsContiguous(dl), tvm::ffi::IsAligned(dl, 4),
          tvm::ffi::IsDirectAddressDevice(dl.device)};
}
"""


@pytest.fixture(scope="module")
def values():
    names = ["DTypeBits", "SameDType", "NextDevice", "StrategyCode", "Twice", "Offsets"]
    return cpp.load_inline(
        "apache_values", cpp_sources=VALUES, functions=[*names, "SecondOf", "Sizes", "ResultSlots"]
    )


@pytest.mark.parametrize(
    ("dtype", "bits"),
    [(torch.float32, 32), (torch.bfloat16, 16), (np.dtype("float16"), 16), ("float8_e4m3fn", 8)],
)
def test_dtype_parameter(values, dtype, bits):
    assert values.DTypeBits(dtype) == bits


def test_dtype_result_is_its_name(values):
    assert values.SameDType(torch.float8_e4m3fn) == "float8_e4m3fn"
    assert values.SameDType("int8x4") == "int8x4"


def test_dtype_errors(values):
    # Each message is matched whole; the function and its library are the error's note.
    with pytest.raises(ValueError) as info:
        values.DTypeBits("floaty")
    assert str(info.value) == (
        'DTypeBits() argument 1 must name a data type such as float32 (got "floaty")'
    )
    with pytest.raises(
        TypeError, match=r"^DTypeBits\(\) argument 1 must be dtype, not int\nin function "
    ):
        values.DTypeBits(32)
    # std::invalid_argument is reachable from tvm/ffi headers alone.
    with pytest.raises(RuntimeError, match=r"^unsupported dtype int32" r"\nin function "):
        values.DTypeBits(torch.int32)


def test_device_parameter(values):
    assert values.NextDevice(tvm_ffi.device("cuda:1")) == (2, 2)
    assert values.NextDevice(torch.device("cuda", 3)) == (2, 4)
    assert values.NextDevice(torch.device("cpu")) == (1, 1)
    with pytest.raises(
        TypeError, match=r"^NextDevice\(\) argument 1 must be Device, not str\nin function "
    ):
        values.NextDevice("cuda:0")


def test_enum_parameter_and_result(values):
    assert values.StrategyCode(2) == 20
    assert values.Twice(1) == 2
    with pytest.raises(
        TypeError, match=r"^StrategyCode\(\) argument 1 must be int, not float\nin function "
    ):
        values.StrategyCode(1.5)


def test_deduced_tuple_converts_to_the_declared_one(values):
    assert values.Offsets(3) == [[0, 16, 32], 3, 0.5]  # a Tuple result is a list
    assert values.SecondOf((4, 9)) == 18


def test_type_traits_copy_to_any_view(values):
    assert values.ResultSlots() == [1, 1, 7]


def test_data_size_and_layout_helpers(values):
    t = torch.empty(5, 3, dtype=torch.float32)
    assert values.Sizes(t) == [60, 60, 60, 2, 1, 1, 1]
    assert values.Sizes(t.t())[4] == 0  # transposed: not contiguous


FIELDS = r"""
#include <tvm/ffi/reflection/registry.h>

// As sglang's distributed/registry.cuh: plain fields read from Python.
struct PlaneObj : public tvm::ffi::Object {
  PlaneObj(uint32_t rank, uint32_t world_size) : rank(rank), world_size(world_size) {}
  uint32_t rank;
  uint32_t world_size;
  std::string label = "push";
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("test_apache.Plane", PlaneObj, tvm::ffi::Object);
};

void RegisterPlane() {
  namespace refl = tvm::ffi::reflection;
  refl::ObjectDef<PlaneObj>()
      .def(refl::init<uint32_t, uint32_t>(), "__init__")
      .def_ro("rank", &PlaneObj::rank)
      .def_ro("world_size", &PlaneObj::world_size)
      .def_rw("label", &PlaneObj::label);
}
"""


def test_fields_read_as_attributes():
    mod = cpp.load_inline("apache_fields", cpp_sources=FIELDS, functions=["RegisterPlane"])
    mod.RegisterPlane()

    @tvm_ffi.register_object("test_apache.Plane")
    class Plane(tvm_ffi.Object):
        pass

    plane = Plane(3, 8)
    assert (plane.rank, plane.world_size, plane.label) == (3, 8, "push")
    with pytest.raises(AttributeError, match=r"^'Plane' object has no attribute 'rnak'$"):
        plane.rnak  # noqa: B018
