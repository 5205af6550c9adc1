"""Which names embedded images may have together: one rule for ``load_inline``'s
``embed_cubin`` and the embed tool. An image named X lies between the symbols
``__tvm_ffi__cubin_X`` and ``__tvm_ffi__cubin_X_end`` (the layout:
``utils/_embed_layout.py``).
"""

from __future__ import annotations

__all__ = ["SYMBOL_PREFIX", "end_marker_clash"]

#: The prefix of both symbols, as the layout template writes it (the layout test reads it
#: back from assembled objects).
SYMBOL_PREFIX = "__tvm_ffi__cubin_"


def end_marker_clash(names: list[str]) -> str | None:
    """Why ``names`` cannot be embedded together, or None: the end marker of X is the start
    symbol of X_end, and the linker would bind one to the other."""
    given = set(names)
    for name in names:
        if f"{name}_end" in given:
            return (
                f"embed names {name!r} and {name + '_end'!r} cannot be used together: "
                f"{SYMBOL_PREFIX}{name}_end marks the end of {name!r}; rename one of them"
            )
    return None
