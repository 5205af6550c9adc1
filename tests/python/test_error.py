"""tvm_ffi.register_error (python/tvm_ffi/error.py): a C++ error kind raised as a Python class
of the user's, and that class sent back to C++ as its kind, through one table."""

from __future__ import annotations

import re

import pytest

import tvm_ffi
from tvm_ffi import _core, cpp

SOURCE = r"""
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>

#include <string>

TVM_FFI_DLL_EXPORT_TYPED_FUNC(throw_dialect, [](std::string message) {
  TVM_FFI_THROW(CUDADialectError) << message;
});
TVM_FFI_DLL_EXPORT_TYPED_FUNC(throw_named, [](std::string message) {
  TVM_FFI_THROW(NamedKind) << message;
});
TVM_FFI_DLL_EXPORT_TYPED_FUNC(throw_pair, [](std::string message) {
  TVM_FFI_THROW(PairKind) << message;
});
TVM_FFI_DLL_EXPORT_TYPED_FUNC(throw_unregistered, [](std::string message) {
  TVM_FFI_THROW(NobodyRegisteredThis) << message;
});
TVM_FFI_DLL_EXPORT_TYPED_FUNC(throw_picky, []() { TVM_FFI_THROW(PickyKind) << "x"; });
// The kind C++ sees when a Python callback raises.
TVM_FFI_DLL_EXPORT_TYPED_FUNC(kind_of_callback_error, [](tvm::ffi::Function f) {
  try {
    f();
  } catch (const tvm::ffi::Error& e) {
    return e.kind() + ": " + e.message();
  }
  return std::string("no error");
});
// A callback's error passed through C++ unchanged.
TVM_FFI_DLL_EXPORT_TYPED_FUNC(call, [](tvm::ffi::Function f) { f(); });
"""


@pytest.fixture(scope="module")
def mod():
    return cpp.load_inline("register_error_kinds", cpp_sources=SOURCE)


@tvm_ffi.register_error
class CUDADialectError(RuntimeError):
    """As the CuTe DSL declares its error kind: a bare decorator, the kind is the name."""

    def __init__(self, message: str) -> None:
        self.raw_message = message
        super().__init__(f"parsed: {message}")


@tvm_ffi.register_error("NamedKind")
class NamedError(ValueError):
    pass


class PairError(Exception):
    pass


def test_the_three_forms_return_the_class():
    assert CUDADialectError.__name__ == "CUDADialectError"
    assert NamedError.__name__ == "NamedError"
    assert tvm_ffi.register_error("PairKind", PairError) is PairError
    assert tvm_ffi.error.register_error is tvm_ffi.register_error


def test_a_decorated_class_is_raised_for_its_name(mod):
    with pytest.raises(CUDADialectError) as info:
        mod.throw_dialect("CUDA Error Code: 700")
    assert type(info.value) is CUDADialectError
    assert info.value.raw_message == "CUDA Error Code: 700"
    assert str(info.value) == "parsed: CUDA Error Code: 700"
    # One note: the C++ frame it was raised in, as the runtime writes frames (apache's form),
    # then the function and library it came from.
    assert re.fullmatch(
        r'  File ".*main\.cpp", line \d+, in .*\n'
        r"in function 'throw_dialect' of library '.*register_error_kinds\.so'",
        info.value.__notes__[0],
    )
    assert len(info.value.__notes__) == 1


def test_a_class_is_raised_for_the_kind_it_was_registered_under(mod):
    with pytest.raises(NamedError) as named:
        mod.throw_named("named")
    assert named.value.args == ("named",)
    tvm_ffi.register_error("PairKind", PairError)
    with pytest.raises(PairError) as pair:
        mod.throw_pair("pair")
    assert pair.value.args == ("pair",)


def test_unregistered_kinds_stay_runtime_errors(mod):
    with pytest.raises(RuntimeError) as info:
        mod.throw_unregistered("nobody")
    assert type(info.value) is RuntimeError and info.value.args == ("nobody",)


def test_a_later_registration_replaces_the_kind(mod):
    class First(Exception):
        pass

    class Second(Exception):
        pass

    tvm_ffi.register_error("ReplacedKind", First)
    tvm_ffi.register_error("ReplacedKind", Second)
    assert _core._error_class("ReplacedKind") is Second


def test_builtin_kinds_are_in_the_table():
    for cls in (ValueError, TypeError, KeyError, IndexError, AttributeError, MemoryError):
        assert _core._error_class(cls.__name__) is cls
    assert _core._error_class("ZeroDivisionError") is ZeroDivisionError  # any builtin by name
    assert _core._error_class("NoSuchKind") is RuntimeError


def test_a_registered_class_from_a_callback_reaches_cpp_as_its_kind(mod):
    def raise_named():
        raise NamedError("from python")

    assert mod.kind_of_callback_error(raise_named) == "NamedKind: from python"

    def raise_dialect():
        raise CUDADialectError("code 1")

    # args[0] is what __init__ passed to the base: the message as the class made it.
    assert mod.kind_of_callback_error(raise_dialect) == "CUDADialectError: parsed: code 1"


def test_a_registered_class_round_trips_through_cpp(mod):
    def raise_named():
        raise NamedError("round trip")

    with pytest.raises(NamedError, match=r"^round trip$"):
        mod.call(raise_named)


def test_a_class_that_cannot_take_the_message(mod):
    @tvm_ffi.register_error("PickyKind")
    class Picky(Exception):
        def __init__(self, a, b):  # not the message alone
            super().__init__(a, b)

    with pytest.raises(RuntimeError) as info:
        mod.throw_picky()
    assert str(info.value).startswith(
        "throw_picky() raised an error of kind 'PickyKind', but its registered class "
        "test_a_class_that_cannot_take_the_message.<locals>.Picky could not be made from the "
        "message ("
    )
    assert isinstance(info.value.__cause__, TypeError)


def test_bad_registrations_name_what_is_wrong():
    with pytest.raises(
        TypeError, match=r"^register_error: the error kind must be a non-empty str \(got 3\)$"
    ):
        tvm_ffi.register_error(3)
    with pytest.raises(
        TypeError, match=r"^register_error: the error kind must be a non-empty str \(got ''\)$"
    ):
        tvm_ffi.register_error("", PairError)
    with pytest.raises(
        TypeError, match=r"^register_error: expected an Exception subclass \(got <class 'int'>\)$"
    ):
        tvm_ffi.register_error("IntKind", int)
    with pytest.raises(
        TypeError, match=r"^register_error: expected an Exception subclass \(got 5\)$"
    ):
        tvm_ffi.register_error("FiveKind")(5)
    with pytest.raises(
        TypeError,
        match=r"^register_error: give the kind first, then the class \(got 'PairError', 'X'\)$",
    ):
        tvm_ffi.register_error(PairError, "X")
    with pytest.raises(TypeError, match=r"^register_error: expected an Exception subclass"):
        tvm_ffi.register_error(int)
    assert _core._error_class("IntKind") is RuntimeError  # nothing half-registered
