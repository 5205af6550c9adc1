"""Errors across the C ABI: kinds become exception classes (a registered table, builtins, else
RuntimeError); the message stays the callee's and a note (PEP 678) names the function and
library; Python exceptions in callbacks go back through the runtime's error slot, and come
back unchanged."""

from __future__ import annotations

from helpers.next_pycore import run_core_child


def test_kinds_become_classes_and_messages_name_the_function(core_runtime: str) -> None:
    run_core_child(
        core_runtime,
        r"""
m = core.load_module(LIB)
where = f"in function 'raise_error' of library '{LIB}'"
for kind in ("ValueError", "TypeError", "IndexError", "KeyError", "AttributeError",
             "NotImplementedError", "ZeroDivisionError", "RuntimeError"):
    try:
        m.raise_error(kind, "boom")
    except Exception as exc:
        assert type(exc).__name__ == kind, (kind, type(exc))
        assert exc.args == ("boom",), exc.args
        assert exc.__notes__[-1].endswith(where), exc.__notes__
    else:
        raise AssertionError(kind)
e = raises(RuntimeError, "broken", m.raise_error, "InternalError", "broken")
assert e.__notes__[-1].endswith(where)
e = raises(ValueError, "bad launch: code 7", m.fail_parts)
assert e.__notes__[-1].endswith(f"in function 'fail_parts' of library '{LIB}'")
""",
    )


def test_error_table_maps_registered_kinds(core_runtime: str) -> None:
    run_core_child(
        core_runtime,
        r"""
m = core.load_module(LIB)
class CUDADialectError(Exception): pass
class MyValueError(ValueError): pass
core._set_error_table({"CUDADialectError": CUDADialectError, "ValueError": MyValueError})
raises(CUDADialectError, "no kernel", m.raise_error, "CUDADialectError", "no kernel")
raises(MyValueError, "v", m.raise_error, "ValueError", "v")
core._set_error_table(None)
raises(RuntimeError, "x", m.raise_error, "CUDADialectError", "x")
raises(TypeError, "set_error_table() expects a dict or None, got list", core._set_error_table, [])
""",
    )


def test_python_exceptions_cross_back_through_callbacks(core_runtime: str) -> None:
    run_core_child(
        core_runtime,
        r"""
m = core.load_module(LIB)
def fail(x):
    raise KeyError(f"missing {x}")
e = raises(KeyError, repr("missing 3"), m.call_back, fail, 3)
assert e.args == ("missing 3",) and not hasattr(e, "__notes__")  # back unchanged
def divide(x):
    return 1 // x
raises(ZeroDivisionError, "integer division or modulo by zero", m.call_back, divide, 0)
class Custom(Exception): pass
core._set_error_table({"Custom": Custom})
def custom(x):
    raise Custom("from python")
raises(Custom, "from python", m.call_back, custom, 1)
# A callback result that cannot be converted is an error naming it.
raises(OverflowError, "the Python callback's result: int 1180591620717411303424 does not fit "
       "in int64", m.call_back, lambda x: 2**70, 1)
""",
    )


def test_empty_and_bad_calls(core_runtime: str) -> None:
    run_core_child(
        core_runtime,
        r"""
m = core.load_module(LIB)
raises(ValueError, "cannot call an empty Function (it has no handle)", core.Function())
raises(TypeError, "Function() takes no arguments", core.Function, 1)
raises(TypeError, "add_int() takes no keyword arguments", lambda: m.add_int(a=1))
raises(ValueError, "echo() argument 1: the Function is empty (no handle)", m.echo,
       core.Function())
""",
    )


def test_error_values_and_odd_return_codes(core_runtime: str) -> None:
    run_core_child(
        core_runtime,
        r"""
import ctypes
m = core.load_module(LIB)
e = m.make_error("ValueError", "made, not raised")
assert type(e) is ValueError and str(e) == "made, not raised"
e = m.make_error("SomethingElse", "odd")
assert type(e) is RuntimeError and str(e) == "odd"
raw = ctypes.CDLL(RAW)
def wrap(name):
    return core.Function.__from_extern_c__(ctypes.cast(getattr(raw, name), ctypes.c_void_p).value)
raises(RuntimeError, "function() returned -2 (Python error set) but none is set",
       wrap("raw_minus_two"))
raises(RuntimeError, "function() failed (return code -1) without raising an error",
       wrap("raw_silent_failure"))
""",
    )


def test_registered_kinds_work_both_ways(core_runtime: str) -> None:
    run_core_child(
        core_runtime,
        r"""
m = core.load_module(LIB)
class MyError(RuntimeError): pass
core._register_error("MyKind", MyError)  # what tvm_ffi.register_error calls
assert core._error_class("MyKind") is MyError and core._error_class("KeyError") is KeyError
assert core._error_class("NoSuchKind") is RuntimeError
raises(MyError, "mine", m.raise_error, "MyKind", "mine")
# Raised in a callback, MyError reaches C++ as "MyKind", and comes back as MyError.
def fail(x):
    raise MyError("from the callback")
raises(MyError, "from the callback", m.call_back, fail, 1)
assert m.kind_of(lambda: fail(0)) == "MyKind"
assert m.kind_of(lambda: 1 // 0) == "ZeroDivisionError"
raises(TypeError, "an error kind must be a non-empty str (got '')",
       core._register_error, "", MyError)
raises(TypeError, "error kind 'K': expected an Exception subclass (got <class 'int'>)",
       core._register_error, "K", int)
raises(TypeError, "_register_error() takes (kind, cls) (got 1 arguments)",
       core._register_error, "K")
""",
    )
