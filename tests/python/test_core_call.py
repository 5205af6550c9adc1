"""Calling exported functions: every argument and result type, errors and their messages."""

from __future__ import annotations

import ctypes
import math
import re

import pytest

import tvm_ffi
from helpers.call_errors import assert_call_error

SOURCE = r"""
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <tvm/ffi/extra/stl.h>  // std:: types as arguments and results (as apache's)
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

using tvm::ffi::Bytes;
using tvm::ffi::String;

TVM_FFI_DLL_EXPORT_TYPED_FUNC(echo_int, [](int64_t x) { return x; });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(echo_u8, [](uint8_t x) { return x; });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(echo_double, [](double x) { return x; });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(echo_float, [](float x) { return x; });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(echo_bool, [](bool x) { return x; });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(echo_string, [](String x) { return x; });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(echo_std_string, [](std::string x) { return x; });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(echo_bytes, [](Bytes x) { return x; });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(echo_c_str, [](const char* x) { return std::string(x); });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(not_utf8, []() { return std::string("ok \xff\xfe"); });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(echo_optional, [](std::optional<int64_t> x) { return x; });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(echo_vector, [](std::vector<int64_t> x) { return x; });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(echo_nested,
                              [](std::vector<std::vector<std::string>> x) { return x; });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(echo_tuple,
                              [](std::tuple<int64_t, std::string, double> x) { return x; });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(echo_pointer, [](void* p) { return p; });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(pass_pointer, [](tvm::ffi::Function f, void* p) { f(p); });
// Borrowed text and bytes handed to a callback without a copy (apache-tvm-ffi's view kinds).
TVM_FFI_DLL_EXPORT_TYPED_FUNC(pass_raw_text, [](tvm::ffi::Function f) {
  TVMFFIByteArray bytes{"a\0b", 3};
  f("raw", &bytes);
});
TVM_FFI_DLL_EXPORT_TYPED_FUNC(map_size, [](tvm::ffi::Map<String, int64_t> m) {
  return static_cast<int64_t>(m.size());
});
TVM_FFI_DLL_EXPORT_TYPED_FUNC(nested_size, [](tvm::ffi::Array<tvm::ffi::Array<int64_t>> a) {
  return static_cast<int64_t>(a.size());
});
TVM_FFI_DLL_EXPORT_TYPED_FUNC(map_lists, [](std::map<int64_t, std::vector<int64_t>> m) {
  return static_cast<int64_t>(m.size());
});
TVM_FFI_DLL_EXPORT_TYPED_FUNC(add, [](int64_t a, int64_t b) { return a + b; });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(nothing, []() {});
TVM_FFI_DLL_EXPORT_TYPED_FUNC(byte_length, [](Bytes b) { return static_cast<int64_t>(b.size()); });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(sum_many, [](int64_t a0, int64_t a1, int64_t a2, int64_t a3,
                                           int64_t a4, int64_t a5, int64_t a6, int64_t a7,
                                           int64_t a8, int64_t a9, int64_t a10, int64_t a11,
                                           int64_t a12, int64_t a13, int64_t a14, int64_t a15,
                                           int64_t a16, int64_t a17, int64_t a18, int64_t a19) {
  return a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11 + a12 + a13 + a14 + a15 +
         a16 + a17 + a18 + a19;
});

TVM_FFI_DLL_EXPORT_TYPED_FUNC(raise_kind, [](std::string kind, std::string message) {
  if (kind == "RuntimeError") TVM_FFI_THROW(RuntimeError) << message;
  if (kind == "ValueError") TVM_FFI_THROW(ValueError) << message;
  if (kind == "TypeError") TVM_FFI_THROW(TypeError) << message;
  if (kind == "IndexError") TVM_FFI_THROW(IndexError) << message;
  if (kind == "KeyError") TVM_FFI_THROW(KeyError) << message;
  if (kind == "AttributeError") TVM_FFI_THROW(AttributeError) << message;
  if (kind == "NotImplementedError") TVM_FFI_THROW(NotImplementedError) << message;
  if (kind == "MemoryError") TVM_FFI_THROW(MemoryError) << message;
});

TVM_FFI_DLL_EXPORT_TYPED_FUNC(check_positive, [](int64_t x) {
  TVM_FFI_CHECK(x > 0, ValueError) << "x must be positive, got " << x;
  return x;
});
"""

# Hand-written entries on the tvm-ffi C ABI (16-byte TVMFFIAny, safe-call entries) for what the
# macro never produces: an unknown error kind, a result type Python has no equivalent for, a
# failure without error info, and a look at how a list argument arrives.
RAW = r"""
#include <tvm/ffi/c_api.h>
#define EXPORT extern "C" __attribute__((visibility("default")))

#define BEGIN(NAME) \
  EXPORT int __tvm_ffi_##NAME(void*, const TVMFFIAny* args, int32_t n, TVMFFIAny* r) {
#define END }

BEGIN(odd_kind)
  TVMFFIErrorSetRaisedFromCStr("FancyError", "something odd");
  return -1;
END

// A borrowed DLTensor* is an argument-only kind: as a result it owns nothing.
BEGIN(returns_tensor)
  r->type_index = kTVMFFIDLTensorPtr;
  r->zero_padding = 0;
  r->v_ptr = 0;
  return 0;
END

// Whether the first two elements of a list argument are the same converted array.
BEGIN(shares_children)
  const TVMFFIAny& a = args[0];
  bool same = false;
  if (n == 1 && a.type_index == kTVMFFIArray) {
    const TVMFFISeqCell* cell = reinterpret_cast<const TVMFFISeqCell*>(
        reinterpret_cast<const char*>(a.v_obj) + sizeof(TVMFFIObject));
    const TVMFFIAny* items = static_cast<const TVMFFIAny*>(cell->data);
    same = cell->size == 2 && items[0].type_index == kTVMFFIArray &&
           items[0].v_obj == items[1].v_obj;
  }
  r->type_index = kTVMFFIBool;
  r->zero_padding = 0;
  r->v_int64 = same;
  return 0;
END

// A NULL void* as apache-tvm-ffi's headers send it: an opaque pointer, not None.
BEGIN(null_pointer)
  r->type_index = kTVMFFIOpaquePtr;
  r->zero_padding = 0;
  r->v_ptr = 0;
  return 0;
END

BEGIN(fails_silently)
  return -1;
END
"""

ERROR_KINDS = [
    RuntimeError,
    ValueError,
    TypeError,
    IndexError,
    KeyError,
    AttributeError,
    NotImplementedError,
    MemoryError,
]


@pytest.fixture(scope="module")
def mod(build_library):
    return tvm_ffi.load_module(build_library("calls", SOURCE))


@pytest.fixture(scope="module")
def raw(build_library):
    return tvm_ffi.load_module(build_library("raw_calls", RAW))


@pytest.mark.parametrize("value", [0, 1, -1, 2**63 - 1, -(2**63)])
def test_int_round_trip(mod, value):
    assert mod.echo_int(value) == value
    assert type(mod.echo_int(value)) is int


@pytest.mark.parametrize("value", [2**63, 2**64, -(2**63) - 1])
def test_int_too_large_for_int64(mod, value):
    # An int travels as TVMFFIAny's int64 payload: the core refuses what does not fit, by name.
    with pytest.raises(OverflowError) as info:
        mod.echo_int(value)
    assert str(info.value) == f"echo_int() argument 1: int {value} does not fit in int64"


def test_int_range_checked_by_callee(mod):
    assert mod.echo_u8(255) == 255
    with pytest.raises(ValueError, match=r"^echo_u8\(\) argument 1 "):
        mod.echo_u8(256)


@pytest.mark.parametrize("value", [0.0, -2.5, 1e300, math.inf])
def test_float_round_trip(mod, value):
    assert mod.echo_double(value) == value
    assert type(mod.echo_double(value)) is float


def test_float_nan_and_single_precision(mod):
    assert math.isnan(mod.echo_double(math.nan))
    assert mod.echo_float(0.1) == pytest.approx(0.1, rel=1e-7)


def test_bool_round_trip(mod):
    assert mod.echo_bool(True) is True
    assert mod.echo_bool(False) is False


@pytest.mark.parametrize("value", ["", "hello", "héllo wörld ✓", "a\x00b", "x" * 10000])
def test_str_round_trip(mod, value):
    assert mod.echo_string(value) == value
    assert mod.echo_std_string(value) == value


def test_c_str_parameter_refuses_embedded_nul(mod):
    # std::string keeps all the characters; const char* would see only those before the NUL.
    assert mod.echo_c_str("héllo") == "héllo"
    assert mod.echo_std_string("ab\x00cd") == "ab\x00cd"
    with pytest.raises(ValueError) as info:
        mod.echo_c_str("ab\x00cd")
    assert_call_error(
        info.value,
        "echo_c_str() argument 1 holds a NUL character, where a const char* parameter would end "
        "(take std::string or tvm::ffi::String for text with NULs)",
        "echo_c_str",
    )


def test_lone_surrogate_is_rejected(mod):
    with pytest.raises(
        ValueError,
        match=r"^echo_string\(\) argument 1: the str has no UTF-8 form \('utf-8' codec can't "
        r"encode character '\\ud800' in position 2: surrogates not allowed\)$",
    ) as info:
        mod.echo_string("ab\ud800")
    assert isinstance(info.value.__cause__, UnicodeEncodeError)


def test_non_utf8_str_result_names_the_function(mod):
    with pytest.raises(
        ValueError,
        match=r"^not_utf8\(\) returned a str that is not valid UTF-8 \('utf-8' codec can't "
        r"decode byte 0xff in position 3: invalid start byte\); text results must be UTF-8: "
        r"return tvm::ffi::Bytes for other bytes$",
    ) as info:
        mod.not_utf8()
    assert isinstance(info.value.__cause__, UnicodeDecodeError)


@pytest.mark.parametrize("value", [b"", b"abc", b"\x00\x01\xff\x00", bytes(range(256)) * 40])
def test_bytes_round_trip(mod, value):
    assert mod.echo_bytes(value) == value
    assert type(mod.echo_bytes(value)) is bytes


def test_bytearray_is_bytes(mod):
    assert mod.echo_bytes(bytearray(b"a\x00b")) == b"a\x00b"
    assert mod.byte_length(bytearray(5)) == 5


def test_optional(mod):
    assert mod.echo_optional(None) is None
    assert mod.echo_optional(7) == 7


def test_vector_from_list_and_tuple(mod):
    assert mod.echo_vector([1, 2, 3]) == [1, 2, 3]
    assert mod.echo_vector((4, 5)) == [4, 5]
    assert mod.echo_vector([]) == []


def test_nested_vector(mod):
    value = [["a", "b"], [], ["c"]]
    assert mod.echo_nested(value) == value


def test_tuple(mod):
    # A C++ tuple result is an Array on the tvm-ffi C ABI: a list, as under apache-tvm-ffi.
    assert mod.echo_tuple((1, "two", 3.5)) == [1, "two", 3.5]
    assert mod.echo_tuple([1, "two", 3.5]) == [1, "two", 3.5]


def test_void_returns_none(mod):
    assert mod.nothing() is None


def test_many_arguments_beyond_the_inline_buffer(mod):
    values = list(range(1, 21))
    assert mod.sum_many(*values) == sum(values)


def test_subclasses_and_numeric_protocols(mod):
    import numpy as np

    class MyInt(int):
        pass

    class MyStr(str):
        pass

    assert mod.echo_int(MyInt(5)) == 5
    assert mod.echo_int(np.int64(-3)) == -3
    assert mod.echo_double(np.float64(2.5)) == 2.5
    assert mod.echo_double(np.float32(0.5)) == 0.5
    assert mod.echo_string(MyStr("sub")) == "sub"


def _pointer(value):
    """A void* result's address: it comes back as a ctypes.c_void_p (as under apache-tvm-ffi)."""
    assert type(value) is ctypes.c_void_p, f"{value!r} is not a ctypes.c_void_p"
    return value.value


@pytest.mark.parametrize("arg", [ctypes.c_void_p(0x1234), 0x1234])
def test_pointer_result_is_a_ctypes_void_p(mod, arg):
    # void* takes a c_void_p or an int, and returns a c_void_p that passes back as the same.
    assert _pointer(mod.echo_pointer(arg)) == 0x1234
    assert _pointer(mod.echo_pointer(mod.echo_pointer(arg))) == 0x1234


def test_a_callback_gets_raw_text_and_a_byte_array_pointer(mod):
    seen = []
    mod.pass_raw_text(lambda *args: seen.extend(args))
    assert seen == ["raw", b"a\0b"]


def test_a_callback_gets_a_pointer_as_a_ctypes_void_p(mod):
    seen = []
    mod.pass_pointer(seen.append, 0x1234)
    assert [_pointer(p) for p in seen] == [0x1234]


@pytest.mark.parametrize("arg", [None, ctypes.c_void_p(None), ctypes.c_void_p(0)])
def test_null_pointer(mod, raw, arg):
    # A NULL void* travels as an opaque pointer (as apache-tvm-ffi's headers send it) and comes
    # back as c_void_p(None), as apache's Python returns it; None passes as NULL.
    assert _pointer(mod.echo_pointer(arg)) is None
    assert _pointer(raw.null_pointer()) is None
    assert _pointer(mod.echo_pointer(raw.null_pointer())) is None


@pytest.mark.parametrize("address", [2**63, 2**64 - 1, 0x7FFF_FFFF_FFFF_FFFF])
def test_pointer_takes_every_64_bit_address(mod, address):
    assert _pointer(mod.echo_pointer(address)) == address
    assert _pointer(mod.echo_pointer(ctypes.c_void_p(address))) == address


def test_negative_pointer_is_reported_as_given(mod):
    with pytest.raises(ValueError) as info:
        mod.echo_pointer(-1)
    assert_call_error(
        info.value,
        "echo_pointer() argument 1 must be a non-negative address (got -1)",
        "echo_pointer",
    )
    with pytest.raises(OverflowError) as info:
        mod.echo_pointer(2**64)
    assert str(info.value) == f"echo_pointer() argument 1: int {2**64} is not a 64-bit address"


def test_keyword_arguments_are_rejected(mod):
    with pytest.raises(TypeError, match=r"^add\(\) takes no keyword arguments$"):
        mod.add(1, b=2)


class Custom:
    pass


@pytest.mark.parametrize(
    ("function", "args", "message"),
    [
        ("add", (1, "2"), "add() argument 2 must be int, not str"),
        ("add", (Custom(), 2), "add() argument 1 must be int, not Custom"),
        ("echo_string", (b"x",), "echo_string() argument 1 must be str, not bytes"),
    ],
)
def test_wrong_argument_type_names_function_position_and_type(mod, function, args, message):
    with pytest.raises(TypeError) as info:
        getattr(mod, function)(*args)
    assert_call_error(info.value, message, function)


@pytest.mark.parametrize("args", [(1, 2, 3), ()])
def test_wrong_argument_count(mod, args):
    with pytest.raises(TypeError) as info:
        mod.add(*args)
    assert_call_error(info.value, f"add() takes 2 arguments ({len(args)} given)", "add")


@pytest.mark.parametrize("kind", ERROR_KINDS, ids=lambda k: k.__name__)
def test_error_kinds_map_to_builtin_exceptions(mod, kind):
    message = f"boom from {kind.__name__}: 100% ünïcode"
    with pytest.raises(kind) as info:
        mod.raise_kind(kind.__name__, message)
    assert type(info.value) is kind
    assert info.value.args == (message,)
    # One note: the C++ frame that raised (Python's traceback form), then the function.
    assert_call_error(info.value, message, "raise_kind")
    assert re.match(r'  File ".*calls\.cc", line \d+, in ', info.value.__notes__[0])


def test_check_failure_message(mod):
    assert mod.check_positive(3) == 3
    with pytest.raises(ValueError) as info:
        mod.check_positive(-2)
    assert_call_error(
        info.value, "Check failed: (x > 0) is false: x must be positive, got -2", "check_positive"
    )
    assert info.value.__notes__[0].startswith('  File "')


def test_unknown_error_kind_is_runtime_error(raw):
    with pytest.raises(RuntimeError) as info:
        raw.odd_kind()
    assert type(info.value) is RuntimeError
    assert_call_error(info.value, "something odd", "odd_kind")  # no frames: the function alone
    assert info.value.__notes__[0].startswith("in function ")


def test_result_without_python_equivalent(raw):
    # A borrowed DLTensor* owns nothing: on the tvm-ffi C ABI it is an argument-only kind.
    with pytest.raises(TypeError) as info:
        raw.returns_tensor()
    assert str(info.value) == (
        "returns_tensor() returned a value of type index 7, which is an argument-only kind "
        "(a borrowed DLTensor*, raw string or byte array owns nothing) and has no Python "
        "equivalent"
    )


@pytest.mark.parametrize(
    ("func", "value", "message"),
    [
        ("map_size", {"a": 1, "key": "x"}, 'map_size() argument 1["key"] must be int, not str'),
        ("map_size", {"a": 1, 2: 3}, "map_size() argument 1 key 2 must be str, not int"),
        ("map_lists", {7: [1, "x"]}, "map_lists() argument 1[7][1] must be int, not str"),
        ("map_lists", {"k": [1]}, 'map_lists() argument 1 key "k" must be int, not str'),
        ("nested_size", [[1], [2, "x"]], "nested_size() argument 1[1][1] must be int, not str"),
    ],
)
def test_a_map_entry_error_names_the_key(mod, func, value, message):
    # As an element's index in a list ("argument 1[1]"), a value's key in a dict.
    assert mod.map_size({"a": 1}) == 1 and mod.map_lists({7: [1]}) == 1
    with pytest.raises(TypeError) as info:
        getattr(mod, func)(value)
    assert_call_error(info.value, message, func)


def test_shared_sub_lists_are_converted_once(raw, mod):
    """Issue 20, item 9: x = [x, x], 22 levels, cost 641 MB and seconds of conversion
    (one per path: 2**22) before the callee's type check refused it."""
    inner = [1, 2]
    assert raw.shares_children([[inner], [inner]]) is False  # equal, not the same object
    shared = [inner]
    assert raw.shares_children([shared, shared]) is True
    assert raw.shares_children([[1, 2], [1, 2]]) is False
    x = [1.0]
    for _ in range(22):
        x = [x, x]
    with pytest.raises(TypeError, match=r"^echo_nested\(\) argument 1\[0\]\[0\] must be str"):
        mod.echo_nested(x)
    flat = [inner, inner]  # lists of scalars are not remembered: converted per path, alike
    assert mod.echo_vector(inner) == [1, 2]
    assert mod.echo_nested([["a"], ["a"]]) == [["a"], ["a"]]
    assert raw.shares_children(flat) is False


def test_failure_without_error_info(raw):
    with pytest.raises(RuntimeError) as info:
        raw.fails_silently()
    assert str(info.value) == "fails_silently() failed (return code -1) without raising an error"


def test_function_metadata(mod):
    f = mod.add
    assert f.__name__ == "add"
    assert f.num_args == 2
    assert f.signature == "add(int, int) -> int"
    assert f.__doc__ == f.signature
