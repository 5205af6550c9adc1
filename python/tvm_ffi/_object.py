"""Objects and the process-wide registry of the runtime ``libtvm_ffi.so``: Python classes for
C++ object types (over the runtime's type table), and global functions shared by every
library in the process.
"""

from __future__ import annotations

from ._core import (
    Function,
    Object,
    _get_global_func,
    _list_global_func_names,
    _register_global_func,
    _register_object_class,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, TypeVar

    _T = TypeVar("_T", bound=type)

__all__ = [
    "Object",
    "get_global_func",
    "list_global_func_names",
    "register_global_func",
    "register_object",
]


def register_object(type_key: str | type | None = None, init: bool = True) -> Any:
    """Make a subclass of :class:`Object` the Python class of the C++ type ``type_key``.

    Results of that type come back as instances of the class (made without calling its
    ``__init__``); ``self.__ffi_init__(*args)`` constructs the C++ object through the type's
    registered constructor; unknown attributes are the type's registered methods. Use it as
    ``@register_object("ns.MyType")``, or bare (``@register_object``) to take the class name as
    the type key. A class without its own ``__init__`` gets one that calls ``__ffi_init__``,
    unless ``init`` is false.
    """

    def register(cls: _T, key: str) -> _T:
        if not (isinstance(cls, type) and issubclass(cls, Object)):
            raise TypeError(
                f"register_object({key!r}): {cls!r} is not a subclass of tvm_ffi.Object"
            )
        if "\0" in key:
            raise ValueError(f"register_object: the type key {key!r} holds a NUL byte")
        cls.__tvm_ffi_type_key__ = key
        if init and "__init__" not in cls.__dict__:

            def __init__(self: Object, *args: Any) -> None:
                self.__ffi_init__(*args)

            cls.__init__ = __init__
        _register_object_class(key, cls)
        return cls

    if isinstance(type_key, str):
        return lambda cls: register(cls, type_key)
    if type_key is None:
        return lambda cls: register(cls, cls.__name__)
    if isinstance(type_key, type):
        return register(type_key, type_key.__name__)
    raise TypeError(f"register_object: type_key must be a str or a class, not {type(type_key)}")


def get_global_func(name: str, allow_missing: bool = False) -> Function | Any:
    """The function registered under ``name``: a :class:`Function` (a Python function that was
    registered comes back as itself), or None when there is none and ``allow_missing``.

    Raises:
        ValueError: no function has that name (and ``allow_missing`` is false).
    """
    if isinstance(name, str) and "\0" in name:
        raise ValueError(f"get_global_func: the name {name!r} holds a NUL byte")
    func = _get_global_func(name)
    if func is None:
        if not allow_missing:
            raise ValueError(f"get_global_func: no global function is registered as {name!r}")
        return None
    registered = _FROM_PYTHON.get(name)
    if registered is not None and registered[1].__chandle__() == func.__chandle__():
        return registered[0]
    return func


# name -> (the Python callable, the Function registered for it): a Python function registered
# comes back as itself while it is the one registered under its name.
_FROM_PYTHON: dict[str, tuple[Any, Function]] = {}


def register_global_func(
    func_name: str | Callable[..., Any], f: Callable[..., Any] | None = None, override: bool = False
) -> Any:
    """Register ``f`` (any callable, or a :class:`Function`) under ``func_name`` in the
    process-wide registry, where C++ code finds it too. Without ``f`` it is a decorator; a
    callable as the first argument registers it under its ``__name__``. Returns ``f``.

    Raises:
        ValueError: the name is taken and ``override`` is false.
    """
    if not isinstance(func_name, str):
        f, func_name = func_name, getattr(func_name, "__name__", None)
        if not isinstance(func_name, str):
            raise TypeError("register_global_func: the function has no __name__; pass a name")
    name = func_name

    if "\0" in name:
        raise ValueError(f"register_global_func: the name {name!r} holds a NUL byte")

    def register(func: Callable[..., Any]) -> Callable[..., Any]:
        if isinstance(func, Object) or not callable(func):
            what = (
                f"a {func.type_key!r} object"
                if isinstance(func, Object)
                else f"a {type(func).__name__} is not callable, so it"
            )
            raise TypeError(
                f"register_global_func({name!r}): {what} "
                + ("is not a function" if isinstance(func, Object) else "cannot be a function")
            )
        if not override and _get_global_func(name) is not None:
            raise ValueError(
                f"register_global_func: a global function named {name!r} is already "
                "registered (pass override=True to replace it)"
            )
        registered = _register_global_func(name, func, override)
        if isinstance(func, Function):
            _FROM_PYTHON.pop(name, None)
        else:
            _FROM_PYTHON[name] = (func, registered)
        return func

    return register if f is None else register(f)


def list_global_func_names() -> list[str]:
    """Names of every registered global function, sorted."""
    return _list_global_func_names()
