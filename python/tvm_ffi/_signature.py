"""``inspect.signature`` for exported functions, read from the C++ signature text every
export carries (``add(int, int) -> int``, see include/tvm/ffi/detail/export.h).

The C ABI passes arguments by position only and names none of them, so the parameters are
``arg0, arg1, ...``, positional-only, annotated with the type names of the text.
Imported by ``Function.__signature__`` on first use, never by the call path.
"""

from __future__ import annotations

import inspect

__all__ = ["from_text", "text_signature"]


class TypeName(str):
    """A type's name as text: a string annotation (a forward reference, as type checkers
    read one) that inspect and help() print without quotes."""

    __slots__ = ()

    def __repr__(self) -> str:
        return str(self)


def _split_top_level(text: str) -> list[str]:
    """``"int, dict[str, int]"`` -> ``["int", "dict[str, int]"]``: commas inside brackets
    belong to the type."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return [] if parts == [""] else parts


def _parse(text: str, num_args: int) -> tuple[list[str], str] | None:
    """(argument types, result type) from ``name(T, ...) -> R``, or None when the text does
    not have that form or names another number of arguments."""
    open_paren = text.find("(")
    close_paren = text.rfind(") -> ")
    if open_paren < 0 or close_paren < open_paren:
        return None
    args = _split_top_level(text[open_paren + 1 : close_paren])
    result = text[close_paren + len(") -> ") :].strip()
    if len(args) != num_args or not result:
        return None
    return args, result


def from_text(text: str, num_args: int) -> inspect.Signature:
    """The :class:`inspect.Signature` of an exported function with C++ signature ``text``."""
    if num_args < 0:  # a function object states no arity: any positional arguments
        return inspect.Signature([inspect.Parameter("args", inspect.Parameter.VAR_POSITIONAL)])
    parsed = _parse(text, num_args)
    kind = inspect.Parameter.POSITIONAL_ONLY
    if parsed is None:  # no types known: names only
        params = [inspect.Parameter(f"arg{i}", kind) for i in range(max(num_args, 0))]
        return inspect.Signature(params)
    args, result = parsed
    params = [
        inspect.Parameter(f"arg{i}", kind, annotation=TypeName(t)) for i, t in enumerate(args)
    ]
    return_annotation = None if result == "None" else TypeName(result)
    return inspect.Signature(params, return_annotation=return_annotation)


def text_signature(num_args: int) -> str:
    """CPython's ``__text_signature__`` form: ``(arg0, arg1, /)``."""
    if num_args < 0:
        return "(*args)"
    names = [f"arg{i}" for i in range(max(num_args, 0))]
    return "(" + ", ".join([*names, "/"]) + ")" if names else "()"
