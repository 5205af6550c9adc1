"""``register_error``: raise a C++ error kind as a Python exception class of your own.

A C++ function fails with ``tvm::ffi::Error(kind, message)`` (``TVM_FFI_THROW(Kind)``); the
call raises the class registered for ``kind``, built from the message alone, else the
builtin exception of that name, else ``RuntimeError``. The same table works the other way:
a registered class raised in a Python callback reaches C++ as its kind.
"""

from __future__ import annotations

from typing import Any, Callable, TypeVar, overload

__all__ = ["register_error"]

_E = TypeVar("_E", bound=type)


@overload
def register_error(name_or_cls: _E, cls: None = None) -> _E: ...
@overload
def register_error(name_or_cls: str | None = None, cls: None = None) -> Callable[[_E], _E]: ...
@overload
def register_error(name_or_cls: str, cls: _E) -> _E: ...


# compat: apache-tvm-ffi (tvm_ffi.register_error and tvm_ffi.error.register_error)
def register_error(name_or_cls: Any = None, cls: Any = None) -> Any:
    """Raise errors of a kind as ``cls``. Three forms::

        @tvm_ffi.register_error          # the kind is the class's name
        class CUDADialectError(RuntimeError): ...

        @tvm_ffi.register_error("MyKind")
        class MyError(RuntimeError): ...

        tvm_ffi.register_error("MyKind", MyError)

    The class must derive from ``Exception`` and take the message as its one argument. A
    later registration of a kind replaces the earlier one. Returns the class (the decorator
    forms return a decorator that does).

    Raises:
        TypeError: the kind is not a non-empty str, or the class is not an Exception class.
    """
    if isinstance(name_or_cls, type):
        if cls is not None:
            raise TypeError(
                "register_error: give the kind first, then the class "
                f"(got {name_or_cls.__name__!r}, {cls!r})"
            )
        return _register(name_or_cls.__name__, name_or_cls)
    if name_or_cls is not None and (not isinstance(name_or_cls, str) or not name_or_cls):
        raise TypeError(
            f"register_error: the error kind must be a non-empty str (got {name_or_cls!r})"
        )
    if cls is not None:
        return _register(name_or_cls or _class_of(cls).__name__, cls)

    def decorate(c: _E) -> _E:
        return _register(name_or_cls or _class_of(c).__name__, c)

    return decorate


def _class_of(cls: Any) -> type:
    if not (isinstance(cls, type) and issubclass(cls, Exception)):
        raise TypeError(f"register_error: expected an Exception subclass (got {cls!r})")
    return cls


def _register(kind: str, cls: Any) -> Any:
    from . import _core

    _core._register_error(kind, _class_of(cls))
    return cls
