"""tvm_ffi.utils.kwargs_wrapper.make_kwargs_wrapper: CPython's binding of arguments (its
TypeError messages too) over a positional-only callable, with no code generated."""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import random
from typing import Any, NamedTuple

import pytest

import tvm_ffi
from tvm_ffi.utils import kwargs_wrapper
from tvm_ffi.utils.kwargs_wrapper import (
    make_kwargs_wrapper,
    make_kwargs_wrapper_from_signature,
    unpack_dataclass_to_tuple,
)


def record(*args: Any) -> tuple:
    return args


# Reference functions: CPython binds their arguments; the wrapper must do exactly the same.
def f_none():
    return ()


def f_four(a, b, c, d):
    return (a, b, c, d)


def f_defaults(a, b=10, c=20):
    return (a, b, c)


def f_all_defaults(a=1, b=2):
    return (a, b)


def f_kwonly(a, *, k):
    return (a, k)


def f_mixed(a, b=10, *, k, m=30):
    return (a, b, k, m)


def f_kwonly_defaults(*, k=1, m=2):
    return (k, m)


def _spec(f):
    params = inspect.signature(f).parameters.values()
    pos = [p for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
    kw = [p for p in params if p.kind is p.KEYWORD_ONLY]
    return {
        "arg_names": [p.name for p in pos],
        "arg_defaults": tuple(p.default for p in pos if p.default is not p.empty),
        "kwonly_names": [p.name for p in kw],
        "kwonly_defaults": {p.name: p.default for p in kw if p.default is not p.empty},
    }


REFERENCES = [f_none, f_four, f_defaults, f_all_defaults, f_kwonly, f_mixed, f_kwonly_defaults]


def _outcome(fn, args, kwargs):
    try:
        return ("ok", fn(*args, **kwargs))
    except TypeError as e:
        return ("TypeError", str(e))


@pytest.mark.parametrize("ref", REFERENCES, ids=lambda f: f.__name__)
def test_binds_as_cpython_does(ref):
    """Random calls (too many, too few, unknown, repeated and missing arguments): the same
    values or the same TypeError message as the real function."""
    wrapper = make_kwargs_wrapper(record, prototype=ref, **_spec(ref))
    names = ["a", "b", "c", "d", "k", "m", "z"]
    rng = random.Random(ref.__name__)
    for _ in range(300):
        args = tuple(rng.randrange(100) for _ in range(rng.randint(0, 5)))
        kwargs = {n: -rng.randrange(100) for n in rng.sample(names, rng.randint(0, 3))}
        assert _outcome(wrapper, args, kwargs) == _outcome(ref, args, kwargs), (args, kwargs)


def test_messages():
    w = make_kwargs_wrapper(record, ["a", "b", "c"], (3,), ["k"], prototype=f_mixed)
    cases = [
        ((1,), {"k": 0}, "f_mixed() missing 1 required positional argument: 'b'"),
        ((), {}, "f_mixed() missing 2 required positional arguments: 'a' and 'b'"),
        ((1, 2), {}, "f_mixed() missing 1 required keyword-only argument: 'k'"),
        ((1, 2, 3, 4), {}, "f_mixed() takes from 2 to 3 positional arguments but 4 were given"),
        (
            (1, 2, 3, 4),
            {"k": 1},
            "f_mixed() takes from 2 to 3 positional arguments but 4 positional arguments "
            "(and 1 keyword-only argument) were given",
        ),
        ((1, 2), {"k": 0, "z": 1}, "f_mixed() got an unexpected keyword argument 'z'"),
        ((1, 2), {"k": 0, "a": 1}, "f_mixed() got multiple values for argument 'a'"),
    ]
    for args, kwargs, message in cases:
        with pytest.raises(TypeError) as info:
            w(*args, **kwargs)
        assert str(info.value) == message
    three = make_kwargs_wrapper(record, ["a", "b", "c"])
    with pytest.raises(TypeError) as info:
        three()
    assert str(info.value) == "record() missing 3 required positional arguments: 'a', 'b', and 'c'"


def test_calls_the_target_with_every_value_in_order():
    w = make_kwargs_wrapper(record, ["a", "b"], (2,), ["k", "m"], {"m": None})
    assert w(1, k=3) == (1, 2, 3, None)
    assert w(m=4, k=3, b=5, a=6) == (6, 5, 3, 4)
    sentinel = object()  # defaults are passed as they are, not copied
    assert make_kwargs_wrapper(record, ["a"], (sentinel,))()[0] is sentinel
    assert make_kwargs_wrapper(record, [])() == ()


def test_signature_and_metadata():
    w = make_kwargs_wrapper(record, ["a", "b"], (2,), ["k", "m"], {"m": None}, prototype=f_mixed)
    assert str(inspect.signature(w)) == "(a, b=2, *, k, m=None)"
    assert w.__name__ == "f_mixed" and w.__qualname__ == "f_mixed"
    assert w.__module__ == __name__ and w.__wrapped__ is f_mixed
    plain = make_kwargs_wrapper(record, ["x"])
    assert plain.__name__ == "record" and str(inspect.signature(plain)) == "(x)"
    bound = inspect.signature(w).bind(1, k=3)  # the signature is the one the wrapper obeys
    bound.apply_defaults()
    assert w(*bound.args, **bound.kwargs) == (1, 2, 3, None)


def test_no_code_is_generated(monkeypatch):
    """Names and defaults never become source text: nothing is compiled or executed."""
    import builtins

    def refuse(*args, **kwargs):
        raise AssertionError("exec/eval/compile called")

    for name in ("exec", "eval", "compile"):
        monkeypatch.setattr(builtins, name, refuse)
    w = make_kwargs_wrapper(record, ["a"], ("); import os; os._exit(1) #",), ["k"], {"k": "__"})
    assert w() == ("); import os; os._exit(1) #", "__")


@dataclasses.dataclass
class Inner:
    x: int
    y: list


@dataclasses.dataclass
class Outer:
    inner: Inner
    name: str
    extra: Any = None


class Pair(NamedTuple):
    first: Any
    second: Any


def test_dataclasses_map_to_tuples():
    w = make_kwargs_wrapper(
        record, ["p", "q"], kwonly_names=["r"], map_dataclass_to_tuple=["p", "r"]
    )
    leaf = object()
    p = Outer(Inner(1, [Inner(2, []), 3]), "n", {"k": Inner(4, [leaf])})
    got = w(p, Inner(9, []), r=[Pair(Inner(5, []), 6)])
    assert got[0] == ((1, [(2, []), 3]), "n", {"k": (4, [leaf])})
    assert got[0][2]["k"][1][0] is leaf  # leaves are not copied
    assert type(got[0][0][1]) is list  # lists stay lists
    assert isinstance(got[1], Inner)  # q is not mapped
    assert got[2] == [Pair((5, []), 6)] and type(got[2][0]) is Pair
    assert unpack_dataclass_to_tuple(7) == 7


def test_bad_parameter_lists():
    cases = [
        (
            dict(arg_names="ab"),
            TypeError,
            "make_kwargs_wrapper: arg_names must be a list of str (got 'ab')",
        ),
        (dict(arg_names=["a", 1]), TypeError, "make_kwargs_wrapper: arg_names: 1 is not a str"),
        (
            dict(arg_names=["a b"]),
            ValueError,
            "make_kwargs_wrapper: arg_names: 'a b' is not a valid parameter name",
        ),
        (
            dict(arg_names=["class"]),
            ValueError,
            "make_kwargs_wrapper: arg_names: 'class' is not a valid parameter name",
        ),
        (
            dict(arg_names=["a", "a"]),
            ValueError,
            "make_kwargs_wrapper: arg_names: 'a' appears twice",
        ),
        (
            dict(arg_names=["a"], kwonly_names=["a"]),
            ValueError,
            "make_kwargs_wrapper: 'a' in both arg_names and kwonly_names",
        ),
        (
            dict(arg_names=["a"], arg_defaults=(1, 2)),
            ValueError,
            "make_kwargs_wrapper: 2 arg_defaults for 1 arg_names",
        ),
        (
            dict(arg_names=["a"], arg_defaults=1),
            TypeError,
            "make_kwargs_wrapper: arg_defaults must be a tuple (got int)",
        ),
        (
            dict(arg_names=["a"], kwonly_names=["k"], kwonly_defaults={"j": 1}),
            ValueError,
            "make_kwargs_wrapper: kwonly_defaults names 'j', not in kwonly_names",
        ),
        (
            dict(arg_names=["a"], map_dataclass_to_tuple=["b"]),
            ValueError,
            "make_kwargs_wrapper: map_dataclass_to_tuple names 'b', which are not parameters",
        ),
    ]
    for kwargs, exc, message in cases:
        with pytest.raises(exc) as info:
            make_kwargs_wrapper(record, **kwargs)
        assert str(info.value) == message
    with pytest.raises(TypeError) as info:
        make_kwargs_wrapper(3, ["a"])
    assert str(info.value) == "make_kwargs_wrapper: target_func is not callable (got 3)"


def test_importable_as_client_code_finds_it():
    assert importlib.util.find_spec("tvm_ffi.utils.kwargs_wrapper") is not None
    assert tvm_ffi.utils.kwargs_wrapper is kwargs_wrapper


def test_wraps_an_exported_function():
    from tvm_ffi import cpp

    mod = cpp.load_inline(
        "kwargs_target",
        cpp_sources=r"""
#include <tvm/ffi/function.h>
#include <cstdint>
TVM_FFI_DLL_EXPORT_TYPED_FUNC(weigh, [](int64_t a, int64_t b, int64_t c, int64_t d) {
  return a * 1000 + b * 100 + c * 10 + d;
});
""",
    )
    w = make_kwargs_wrapper(mod.weigh, ["a", "b", "c"], (3,), ["d"], {"d": 4})
    assert w(1, 2) == 1234
    assert w(1, d=5, b=2) == 1235


def test_messages_name_the_qualified_prototype():
    class Kernel:
        @staticmethod
        def run(x, *, stream): ...

    ref = Kernel.run
    w = make_kwargs_wrapper(record, ["x"], kwonly_names=["stream"], prototype=ref)
    for args, kwargs in [((), {}), ((1,), {}), ((1, 2), {}), ((1,), {"q": 0})]:
        assert _outcome(w, args, kwargs) == _outcome(ref, args, kwargs)
    assert _outcome(w, (1,), {})[1].startswith(
        "test_messages_name_the_qualified_prototype.<locals>.Kernel.run() missing"
    )


def test_from_a_signature():
    def proto(a, b=2, *, k, m=4, skip=None):
        """The doc."""

    w = make_kwargs_wrapper_from_signature(
        record, inspect.signature(proto), prototype=proto, exclude_arg_names=["skip"]
    )
    assert str(inspect.signature(w)) == "(a, b=2, *, k, m=4)"
    assert w(1, k=3) == (1, 2, 3, 4) and w.__doc__ == "The doc."

    def star(a, *rest): ...

    with pytest.raises(ValueError) as info:
        make_kwargs_wrapper_from_signature(record, inspect.signature(star))
    assert str(info.value) == (
        "make_kwargs_wrapper_from_signature: *rest cannot be wrapped (only named parameters)"
    )
    bad = inspect.Signature(
        [
            inspect.Parameter("a", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=1),
            inspect.Parameter("b", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        ],
        __validate_parameters__=False,
    )
    with pytest.raises(ValueError) as info:
        make_kwargs_wrapper_from_signature(record, bad)
    assert str(info.value) == (
        "make_kwargs_wrapper_from_signature: parameter 'b' without a default follows one "
        "with a default"
    )
