"""Objects of the tvm-ffi C ABI through tvm_ffi._core: object results and arguments, function
objects both ways (C++ functions in Python, Python callables in C++), module objects, and
Python classes for C++ types (register_object over the runtime's type table, __ffi_init__,
registered methods).

The library (objects_lib.cc) implements the objects by hand on c_api.h alone."""

from __future__ import annotations

import gc
import inspect
import re
import weakref

import numpy as np
import pytest

import tvm_ffi


@pytest.fixture(scope="module")
def lib(objects_lib):
    return tvm_ffi.load_module(objects_lib)


@pytest.fixture(scope="module")
def counter_cls(lib):
    assert lib.register_things() == 0

    @tvm_ffi.register_object("test.Counter")
    class Counter(tvm_ffi.Object):
        __slots__ = ("__dict__",)  # as sglang's classes: a per-instance dict of its own
        inits = 0

        def __init__(self, start: int) -> None:
            type(self).inits += 1
            self.__ffi_init__(start)
            self.note = "python side"

    return Counter


def _alive(lib) -> int:
    gc.collect()
    return lib.alive()


def test_an_object_result_is_an_object_and_is_released(lib):
    before = _alive(lib)
    c = lib.make_counter(5)
    assert isinstance(c, tvm_ffi.Object)
    assert c.type_key == "test.Counter"
    assert lib.counter_value(c) == 5  # passed back borrowed
    # A module is an object (apache's Module too): its `type_key` attribute is the module's,
    # so the library's function of that name is an item.
    assert lib["type_key"](c) == "test.Counter"
    assert _alive(lib) == before + 1
    del c
    assert _alive(lib) == before


def test_function_objects_are_functions(lib):
    before = _alive(lib)
    add3 = lib.make_adder(3)
    assert isinstance(add3, tvm_ffi.Function)
    assert add3(4) == 7
    assert lib.call_with(add3, 10) == 13  # back to C++ as the same function object
    with pytest.raises(TypeError, match=r"^adder\(int\) takes one int$"):
        add3("x")
    del add3
    assert _alive(lib) == before


def test_an_exported_function_passes_as_a_function_object(lib):
    assert lib.call_with(lib.counter_value, lib.make_counter(9)) == 9


def test_python_callables_called_from_cpp(lib):
    assert lib.call_with(lambda x, y: x * y, 6, 7) == 42
    assert lib.call_with(lambda: "héllo") == "héllo"
    assert lib.call_with(lambda: b"a\0b") == b"a\0b"
    assert lib.call_with(lambda: None) is None
    assert lib.call_with(lambda: 2.5) == 2.5
    assert lib.call_with(lambda: True) is True
    assert lib.call_with(lambda *a: len(a), 1, 2.0, "s", b"b", None, False) == 6


def test_python_callable_arguments_and_results_round_trip(lib):
    # A list result is not a value a Python function may return to C++: only scalars, str,
    # bytes and objects. The echo of each argument type goes one by one.
    for value in (1, -(2**63), 2.0, "s", b"b", None, False, True):
        assert lib.call_with(lambda v: v, value) == value
        assert type(lib.call_with(lambda v: v, value)) is type(value)
    assert lib.call_with(lambda v: len(v), [1, (2, 3)]) == 2
    assert lib.call_with(lambda v: v["k"], {"k": 4}) == 4
    assert lib.call_with(lambda: np.int64(7)) == 7  # __index__ types return as ints
    c = lib.make_counter(3)
    got = lib.call_with(lambda v: v, c)
    assert got.same_as(c) and got is not c  # the same C++ object, a new wrapper
    assert got == c and hash(got) == hash(c) and got != lib.make_counter(3)
    assert len({got, c}) == 1


def test_python_exceptions_cross_cpp_with_kind_and_message(lib):
    def fail(kind):
        raise kind("bad value: 42")

    for kind in (ValueError, TypeError, KeyError, ZeroDivisionError, RuntimeError):
        with pytest.raises(kind) as info:
            lib.call_with(fail, kind)
        assert str(info.value) == str(kind("bad value: 42"))


def test_a_list_returned_to_cpp_is_an_array(lib):
    # ABI v3 had no container a Python function could return; the tvm-ffi C ABI's Array is one.
    assert lib.call_with(lambda: [1, (2, "x")]) == [1, [2, "x"]]


def test_a_callable_kept_by_cpp_outlives_python_references(lib):
    calls = []

    class Callback:
        def __call__(self, x):
            calls.append(x)
            return x + 1

    cb = Callback()
    ref = weakref.ref(cb)
    lib.keep(cb)
    del cb
    gc.collect()
    assert ref() is not None  # C++ holds a reference
    assert lib.call_kept(41) == 42
    assert calls == [41]
    lib.drop_kept()
    gc.collect()
    assert ref() is None


def test_a_function_in_a_cycle_through_its_doc_is_collected(lib):
    """Issue 28, item 16: a Function holds its __doc__, which may be any object; it was out of
    the garbage collector's sight, so a doc that refers to its function kept both forever."""

    class Doc:
        pass

    docs = []
    for k in range(2000):
        adder = lib.make_adder(k)  # a new Function each time
        doc = Doc()
        doc.function = adder
        adder.__doc__ = doc
        docs.append(weakref.ref(doc))
    assert adder.__doc__ is doc and adder(1) == 2000
    del adder, doc
    gc.collect()
    assert sum(ref() is not None for ref in docs) == 0
    assert _alive(lib) == 0


def _system_lib(lib):
    # The runtime's system library is a module object (no file): objects_lib registers a
    # symbol of it.
    assert lib.register_things() == 0
    return tvm_ffi.get_global_func("ffi.SystemLib")()


def test_module_objects(lib):
    mod = _system_lib(lib)
    assert isinstance(mod, tvm_ffi.Module)
    assert mod.type_key == "ffi.Module"
    assert mod.path is None and mod.functions == []
    assert mod.test_add(2, 3) == 5
    assert mod["test_add"](4, 5) == 9
    with pytest.raises(AttributeError, match=r"^module 'ffi.Module' has no function 'missing'$"):
        mod.missing  # noqa: B018
    with pytest.raises(KeyError, match=r"module 'ffi.Module' has no function 'missing'"):
        mod["missing"]
    with pytest.raises(TypeError, match=r"^module function names are str, not int$"):
        mod[1]


def test_plain_objects_are_not_subscriptable(lib):
    with pytest.raises(TypeError, match=r"^'tvm_ffi.Object' object is not subscriptable$"):
        lib.make_counter(1)["x"]


def test_registered_class_constructs_through_ffi_init(lib, counter_cls):
    before = _alive(lib)
    c = counter_cls(7)
    assert c.type_key == "test.Counter"
    assert c.note == "python side"
    assert c.value() == 7  # registered method, bound to the object
    assert c.add(3) == 10
    assert lib.counter_value(c) == 10
    assert repr(c).startswith("<Counter 'test.Counter' at 0x")
    del c
    assert _alive(lib) == before


def test_results_of_a_registered_type_skip_init(lib, counter_cls):
    inits = counter_cls.inits
    c = lib.make_counter(4)
    assert type(c) is counter_cls
    assert counter_cls.inits == inits
    assert c.value() == 4
    assert not hasattr(c, "note")  # __init__ never ran


def test_unknown_attributes(lib, counter_cls):
    c = counter_cls(1)
    with pytest.raises(AttributeError, match=r"^'Counter' object has no attribute 'nothing'$"):
        c.nothing  # noqa: B018
    with pytest.raises(AttributeError):
        c.__nothing__  # noqa: B018  (dunders never reach the registry)


def test_names_with_a_nul_byte_name_nothing(lib, counter_cls):
    """Issue 28, item 13: a name is passed on as a C string, which ended at the NUL, so that
    mod['add\\0zzz'] found 'add' (and a counter's 'add\\0x' its method 'add')."""
    mod = _system_lib(lib)
    expected = r"module 'ffi.Module' has no function 'test_add\x00zzz' (the name holds a NUL byte)"
    with pytest.raises(KeyError) as info:
        mod["test_add\0zzz"]
    assert info.value.args == (expected,)
    with pytest.raises(AttributeError, match=f"^{re.escape(expected)}$"):
        getattr(mod, "test_add\0zzz")
    with pytest.raises(
        AttributeError,
        match=r"^'Counter' object has no attribute 'add\\x00x' \(the name holds a NUL byte\)$",
    ):
        getattr(counter_cls(1), "add\0x")
    with pytest.raises(
        ValueError, match=r"^get_global_func: the name 'test\.add\\x00x' holds a NUL byte$"
    ):
        tvm_ffi.get_global_func("test.add\0x", allow_missing=True)
    with pytest.raises(
        ValueError, match=r"^register_global_func: the name 'test\\x00x' holds a NUL byte$"
    ):
        tvm_ffi.register_global_func("test\0x", lambda: 1)
    with pytest.raises(
        ValueError, match=r"^register_object: the type key 'test\.Counter\\x00x' holds a NUL byte$"
    ):
        tvm_ffi.register_object("test.Counter\0x")(type("Other", (tvm_ffi.Object,), {}))


def test_an_unconstructed_object_is_refused_as_an_argument(lib, counter_cls):
    blank = counter_cls.__new__(counter_cls)
    assert blank.type_key is None
    assert repr(blank) == "<Counter (not constructed)>"
    with pytest.raises(
        ValueError,
        match=r"^counter_value\(\) argument 1: the Counter object was never constructed "
        r"\(its __init__ did not call __ffi_init__\)$",
    ):
        lib.counter_value(blank)


def test_ffi_init_errors(lib):
    class Plain(tvm_ffi.Object):
        pass

    with pytest.raises(
        TypeError,
        match=re.escape(
            "__ffi_init__: class Plain has no C++ type; decorate it with "
            '@tvm_ffi.register_object("<type key>")'
        ),
    ):
        Plain().__ffi_init__()

    @tvm_ffi.register_object("test.NoSuchType")
    class Unknown(tvm_ffi.Object):
        pass

    with pytest.raises(
        TypeError,
        match=r"^__ffi_init__: type 'test.NoSuchType' has no registered constructor",
    ):
        Unknown()


def test_sglang_lazy_registration_pattern(lib):
    # sglang's lazy_register_class: a __new__ that registers on first use, then forwards all
    # arguments to the original __new__ (tvm_ffi.Object's, which must accept them).
    def lazy(cls):
        def __new__(cls, *args, **kwargs):
            lib.register_things()
            tvm_ffi.register_object("test.Counter")(cls)
            return original_new(cls, *args, **kwargs)

        original_new = cls.__new__
        cls.__new__ = __new__
        return cls

    @lazy
    class LazyCounter(tvm_ffi.Object):
        def __init__(self, start: int) -> None:
            self.__ffi_init__(start)

    c = LazyCounter(11)
    assert c.value() == 11


def test_register_object_forms():
    @tvm_ffi.register_object
    class Bare(tvm_ffi.Object):
        pass

    assert Bare.__tvm_ffi_type_key__ == "Bare"

    @tvm_ffi.register_object()
    class Called(tvm_ffi.Object):
        pass

    assert Called.__tvm_ffi_type_key__ == "Called"
    with pytest.raises(TypeError, match=r"is not a subclass of tvm_ffi.Object$"):
        tvm_ffi.register_object("x.Y")(int)


def test_a_function_object_takes_any_arguments(lib, counter_cls):
    add3 = lib.make_adder(3)
    assert str(inspect.signature(add3)) == "(*args)"
    assert add3.__text_signature__ == "(*args)"
    assert add3.num_args == -1
    assert repr(add3) == "<tvm_ffi.Function ffi.Function>"
    assert tvm_ffi.get_global_func("test.add").__name__ == "test.add"
