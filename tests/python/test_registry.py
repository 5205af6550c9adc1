"""The process-wide registry (libtvm_ffi.so, ABI version 3) from Python and from C++:
global functions both ways, and C++ types' constructors and methods."""

from __future__ import annotations

import re

import pytest

import tvm_ffi
from tvm_ffi import _object


@pytest.fixture(scope="module")
def lib(objects_lib):
    mod = tvm_ffi.load_module(objects_lib)
    assert mod.register_things() == 0
    return mod


def test_cpp_calls_a_python_function_through_the_registry(lib):
    tvm_ffi.register_global_func("test.py.twice", lambda x: 2 * x, override=True)
    assert lib.call_global("test.py.twice", 21) == 42


def test_python_calls_a_cpp_function_from_the_registry(lib):
    add = tvm_ffi.get_global_func("test.add")
    assert isinstance(add, tvm_ffi.Function)
    assert add.__name__ == "test.add"
    assert add(2, 3) == 5
    assert lib.call_global("test.add", 4, 5) == 9


def test_a_registered_python_function_comes_back_as_itself():
    def triple(x):
        return 3 * x

    tvm_ffi.register_global_func("test.py.triple", triple, override=True)
    assert tvm_ffi.get_global_func("test.py.triple") is triple


def test_an_exported_function_can_be_registered(lib):
    tvm_ffi.register_global_func("test.counter_value", lib.counter_value, override=True)
    assert lib.call_global("test.counter_value", lib.make_counter(6)) == 6


def test_a_taken_name_needs_override():
    tvm_ffi.register_global_func("test.py.taken", lambda: 1, override=True)
    with pytest.raises(
        ValueError,
        match=re.escape(
            "register_global_func: a global function named 'test.py.taken' is already "
            "registered (pass override=True to replace it)"
        ),
    ):
        tvm_ffi.register_global_func("test.py.taken", lambda: 2)
    tvm_ffi.register_global_func("test.py.taken", lambda: 3, override=True)
    assert tvm_ffi.get_global_func("test.py.taken")() == 3


def test_missing_functions():
    with pytest.raises(
        ValueError, match=r"^get_global_func: no global function is registered as 'test.none'$"
    ):
        tvm_ffi.get_global_func("test.none")
    assert tvm_ffi.get_global_func("test.none", allow_missing=True) is None


def test_decorator_forms():
    @tvm_ffi.register_global_func("test.py.named", override=True)
    def named(x):
        return x + 1

    assert tvm_ffi.get_global_func("test.py.named") is named

    @tvm_ffi.register_global_func
    def test_py_bare_name():
        return "bare"

    assert tvm_ffi.get_global_func("test_py_bare_name")() == "bare"


def test_non_callables_are_refused():
    with pytest.raises(
        TypeError,
        match=r"^register_global_func\('test.py.int'\): a int is not callable, so it cannot be "
        r"a function$",
    ):
        tvm_ffi.register_global_func("test.py.int", 5)


def test_plain_objects_are_not_functions(lib):
    with pytest.raises(
        TypeError, match=r"^register_global_func\('test.obj'\): a 'test.Counter' object is not"
    ):
        tvm_ffi.register_global_func("test.obj", lib.make_counter(1))


def test_list_global_func_names(lib):
    tvm_ffi.register_global_func("test.py.listed", lambda: 0, override=True)
    names = _object.list_global_func_names()
    assert names == sorted(names)
    assert {"test.add", "test.py.listed"} <= set(names)
