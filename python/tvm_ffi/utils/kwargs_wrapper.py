"""``make_kwargs_wrapper``: keyword arguments and defaults for a positional-only callable
(an exported ``tvm_ffi.Function``), as ``def f(a, b=1, *, c, d=2)`` would take them.

The wrapper is a closure over tables built once; it generates and executes no code. It binds
arguments the way CPython does, with CPython's ``TypeError`` messages, and calls
``target(*values)`` with every parameter in order (keyword-only ones last).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import keyword
from collections.abc import Iterable, Sequence
from typing import Any, Callable

__all__ = ["make_kwargs_wrapper", "make_kwargs_wrapper_from_signature", "unpack_dataclass_to_tuple"]

_MISSING: Any = object()  # a parameter with no default (never a value a caller can pass)
_LEAF, _SEQUENCE, _NAMEDTUPLE, _DICT = range(4)  # how unpack_dataclass_to_tuple treats a type
_UNPACK_PLAN: dict[type, Any] = {}  # type -> its dataclass field names, or one of the above


# compat: apache-tvm-ffi (tvm_ffi.utils.unpack_dataclass's function, here beside its one user)
def unpack_dataclass_to_tuple(x: Any) -> Any:
    """``x`` with every dataclass instance in it replaced by the tuple of its fields (in
    order, unpacked the same way); lists and tuples keep their type, dicts their keys, other
    values are returned as they are (not copied)."""
    cls = type(x)
    plan = _UNPACK_PLAN.get(cls)
    if plan is None:
        plan = _UNPACK_PLAN[cls] = _plan_for(cls)
    if plan is _LEAF:
        return x
    if type(plan) is tuple:
        return tuple([unpack_dataclass_to_tuple(getattr(x, name)) for name in plan])
    if plan is _SEQUENCE:
        return cls([unpack_dataclass_to_tuple(e) for e in x])
    if plan is _NAMEDTUPLE:
        return cls(*[unpack_dataclass_to_tuple(e) for e in x])
    return {k: unpack_dataclass_to_tuple(v) for k, v in x.items()}


def _plan_for(cls: type) -> Any:
    if dataclasses.is_dataclass(cls):
        return tuple(f.name for f in dataclasses.fields(cls))
    if issubclass(cls, tuple) and hasattr(cls, "_fields"):
        return _NAMEDTUPLE
    if issubclass(cls, (list, tuple)):
        return _SEQUENCE
    if issubclass(cls, dict):
        return _DICT
    return _LEAF


def _check_names(label: str, names: Any) -> tuple[str, ...]:
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise TypeError(f"make_kwargs_wrapper: {label} must be a list of str (got {names!r})")
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"make_kwargs_wrapper: {label}: {name!r} is not a str")
        if not name.isidentifier() or keyword.iskeyword(name):
            raise ValueError(
                f"make_kwargs_wrapper: {label}: {name!r} is not a valid parameter name"
            )
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ValueError(f"make_kwargs_wrapper: {label}: {name!r} appears twice")
        seen.add(name)
    return tuple(names)


def _join(names: Sequence[str]) -> str:
    quoted = [f"'{n}'" for n in names]
    if len(quoted) <= 2:
        return " and ".join(quoted)
    return ", ".join(quoted[:-1]) + ", and " + quoted[-1]


class _Binding:
    """The tables of one wrapper and its error messages (the slow path)."""

    def __init__(
        self, name: str, positional: tuple[str, ...], kwonly: tuple[str, ...], defaults: list
    ) -> None:
        self.name = name
        self.positional = positional
        self.kwonly = kwonly
        self.names = positional + kwonly
        self.index = {n: i for i, n in enumerate(self.names)}
        self.defaults = defaults  # one per parameter, _MISSING where it has none
        n_pos = len(positional)
        self.n_required_pos = sum(d is _MISSING for d in defaults[:n_pos])
        # tail[k]: the values of parameters k.. when only k positional arguments are given,
        # or None when a required one is among them.
        self.tail: list[tuple | None] = []
        for k in range(n_pos + 1):
            rest = tuple(defaults[k:])
            self.tail.append(None if any(d is _MISSING for d in rest) else rest)
        # required[k]: the required parameters a call with k positional arguments must name.
        self.required = [
            tuple(self.names[i] for i in range(k, len(self.names)) if defaults[i] is _MISSING)
            for k in range(n_pos + 1)
        ]

    def too_many(self, given: int, kwargs: dict) -> TypeError:
        # CPython's wording (Python/ceval.c, too_many_positional).
        n_pos = len(self.positional)
        if self.n_required_pos < n_pos:
            takes, plural = f"from {self.n_required_pos} to {n_pos}", True
        else:
            takes, plural = f"{n_pos}", n_pos != 1
        kwonly_given = sum(1 for k in kwargs if k in self.kwonly)
        extra = ""
        if kwonly_given:
            extra = (
                f" positional argument{'s' if given != 1 else ''} (and {kwonly_given} "
                f"keyword-only argument{'s' if kwonly_given != 1 else ''})"
            )
        were = "was" if given == 1 and not kwonly_given else "were"
        return TypeError(
            f"{self.name}() takes {takes} positional argument{'s' if plural else ''} "
            f"but {given}{extra} {were} given"
        )

    def missing(self, names: Sequence[str]) -> TypeError:
        positional = [n for n in names if self.index[n] < len(self.positional)]
        group, kind = (positional, "positional") if positional else (names, "keyword-only")
        s = "" if len(group) == 1 else "s"
        return TypeError(
            f"{self.name}() missing {len(group)} required {kind} argument{s}: {_join(group)}"
        )

    def bad_keyword(self, key: Any) -> TypeError:
        if not isinstance(key, str) or key not in self.index:
            return TypeError(f"{self.name}() got an unexpected keyword argument '{key}'")
        return TypeError(f"{self.name}() got multiple values for argument '{key}'")


# compat: apache-tvm-ffi (tvm_ffi.utils.kwargs_wrapper, its parameters and their order)
def make_kwargs_wrapper(
    target_func: Callable,
    arg_names: Sequence[str],
    arg_defaults: tuple = (),
    kwonly_names: Sequence[str] | None = None,
    kwonly_defaults: dict[str, Any] | None = None,
    prototype: Callable | None = None,
    map_dataclass_to_tuple: Sequence[str] | None = None,
) -> Callable:
    """A function with the signature ``(arg_names..., *, kwonly_names...)`` that calls
    ``target_func(*values)`` with one value per parameter, in that order.

    Args:
        target_func: called with positional arguments only.
        arg_names: the positional-or-keyword parameters, in order.
        arg_defaults: defaults of the last ``len(arg_defaults)`` of them (as ``__defaults__``).
        kwonly_names: the keyword-only parameters.
        kwonly_defaults: defaults of keyword-only parameters, by name (as ``__kwdefaults__``).
        prototype: a function whose ``__name__``, ``__qualname__``, ``__doc__`` and
            ``__module__`` the wrapper takes, and whose name its errors use.
        map_dataclass_to_tuple: parameters whose values pass through
            :func:`unpack_dataclass_to_tuple` before the call.

    Raises:
        TypeError, ValueError: the parameter lists are malformed (the message says which).
    """
    positional = _check_names("arg_names", arg_names)
    kwonly = _check_names("kwonly_names", kwonly_names or ())
    both = sorted(set(positional) & set(kwonly))
    if both:
        raise ValueError(f"make_kwargs_wrapper: {_join(both)} in both arg_names and kwonly_names")
    if not isinstance(arg_defaults, (tuple, list)):
        raise TypeError(
            f"make_kwargs_wrapper: arg_defaults must be a tuple (got {type(arg_defaults).__name__})"
        )
    if len(arg_defaults) > len(positional):
        raise ValueError(
            f"make_kwargs_wrapper: {len(arg_defaults)} arg_defaults for {len(positional)} arg_names"
        )
    kwonly_defaults = dict(kwonly_defaults or {})
    stray = [k for k in kwonly_defaults if k not in kwonly]
    if stray:
        raise ValueError(
            f"make_kwargs_wrapper: kwonly_defaults names {_join(stray)}, not in kwonly_names"
        )
    convert = _check_names("map_dataclass_to_tuple", map_dataclass_to_tuple or ())
    unknown = [n for n in convert if n not in positional and n not in kwonly]
    if unknown:
        raise ValueError(
            f"make_kwargs_wrapper: map_dataclass_to_tuple names {_join(unknown)}, "
            "which are not parameters"
        )
    if not callable(target_func):
        raise TypeError(f"make_kwargs_wrapper: target_func is not callable (got {target_func!r})")

    defaults = [_MISSING] * (len(positional) - len(arg_defaults)) + list(arg_defaults)
    defaults += [kwonly_defaults.get(n, _MISSING) for n in kwonly]
    # Messages name the function as CPython's do: by its qualified name.
    source = prototype if prototype is not None else target_func
    name = getattr(source, "__qualname__", None) or getattr(source, "__name__", None) or "wrapper"
    b = _Binding(str(name), positional, kwonly, defaults)
    wrapper = _make_wrapper(target_func, b, tuple(b.index[n] for n in convert))

    P = inspect.Parameter
    params = [
        P(n, P.POSITIONAL_OR_KEYWORD, default=P.empty if d is _MISSING else d)
        for n, d in zip(positional, defaults)
    ]
    params += [
        P(n, P.KEYWORD_ONLY, default=P.empty if d is _MISSING else d)
        for n, d in zip(kwonly, defaults[len(positional) :])
    ]
    wrapper.__name__ = str(getattr(source, "__name__", b.name))
    wrapper.__qualname__ = b.name
    if prototype is not None:
        functools.update_wrapper(wrapper, prototype, updated=())
    # After update_wrapper: the signature is the wrapper's own, not the prototype's.
    wrapper.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    return wrapper


# compat: apache-tvm-ffi
def make_kwargs_wrapper_from_signature(
    target_func: Callable,
    signature: inspect.Signature,
    prototype: Callable | None = None,
    exclude_arg_names: Iterable[str] | None = None,
    map_dataclass_to_tuple: Sequence[str] | None = None,
) -> Callable:
    """:func:`make_kwargs_wrapper` with the parameters of ``signature`` (less those named in
    ``exclude_arg_names``).

    Raises:
        ValueError: the signature has ``*args`` or ``**kwargs``.
    """
    skip = set(exclude_arg_names or ())
    arg_names: list[str] = []
    arg_defaults: list[Any] = []
    kwonly_names: list[str] = []
    kwonly_defaults: dict[str, Any] = {}
    for name, param in signature.parameters.items():
        if name in skip:
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ValueError(
                f"make_kwargs_wrapper_from_signature: {param} cannot be wrapped "
                "(only named parameters)"
            )
        if param.kind is param.KEYWORD_ONLY:
            kwonly_names.append(name)
            if param.default is not param.empty:
                kwonly_defaults[name] = param.default
            continue
        if param.default is not param.empty:
            arg_defaults.append(param.default)
        elif arg_defaults:
            raise ValueError(
                f"make_kwargs_wrapper_from_signature: parameter {name!r} without a default "
                "follows one with a default"
            )
        arg_names.append(name)
    return make_kwargs_wrapper(
        target_func,
        arg_names,
        tuple(arg_defaults),
        kwonly_names,
        kwonly_defaults,
        prototype,
        map_dataclass_to_tuple,
    )


def _make_wrapper(target: Callable, b: _Binding, convert: tuple[int, ...]) -> Callable:
    n_pos = len(b.positional)
    tail, required, index, defaults = b.tail, b.required, b.index, b.defaults

    def bind(args: tuple, kwargs: dict) -> tuple:
        # CPython's order of checks: keywords, then the positional count, then what is missing.
        nargs = len(args)
        if not kwargs:
            if nargs > n_pos:
                raise b.too_many(nargs, kwargs)
            rest = tail[nargs]
            if rest is None:
                raise b.missing(required[nargs])
            return args + rest if rest else args
        if nargs <= n_pos:
            given = nargs
            values = [*args, *defaults[nargs:]]
        else:
            given = n_pos
            values = [*args[:n_pos], *defaults[n_pos:]]
        for key, value in kwargs.items():
            i = index.get(key, -1)
            if i < given:  # unknown (-1), or already given by position
                raise b.bad_keyword(key)
            values[i] = value
        if nargs > n_pos:
            raise b.too_many(nargs, kwargs)
        for name in required[nargs]:
            if name not in kwargs:
                raise b.missing([n for n in required[nargs] if n not in kwargs])
        return tuple(values)

    n = len(b.names)
    # after[k]: the parameters after k positional arguments, named in a call that gives all
    # of them by keyword (checked by count and lookup: no binding loop).
    after = [b.names[k:] for k in range(n_pos + 1)]

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not kwargs:  # the defaults of the parameters not given, else bind raises
            nargs = len(args)
            rest = tail[nargs] if nargs <= n_pos else None
            values = args + rest if rest is not None else bind(args, kwargs)
        else:
            nargs = len(args)
            if nargs <= n_pos and nargs + len(kwargs) == n:
                try:
                    values = (*args, *map(kwargs.__getitem__, after[nargs]))
                except KeyError:  # a name that is no parameter: bind says which
                    values = bind(args, kwargs)
            else:
                values = bind(args, kwargs)
        if convert:
            mapped = list(values)
            for i in convert:
                mapped[i] = unpack_dataclass_to_tuple(mapped[i])
            return target(*mapped)
        return target(*values)

    return wrapper
