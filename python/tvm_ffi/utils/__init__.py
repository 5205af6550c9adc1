"""Command-line tools and helpers, each runnable with ``python -m tvm_ffi.utils.<tool>``.

Submodules load on first attribute access, so ``python -m tvm_ffi.utils.embed_cubin`` does
not import its own module twice.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "embed_cubin",
    "embed_cubins",
    "image_archs",
    "image_kind",
    "make_fatbin",
    "validate_embed_name",
]

_WHERE = {
    "embed_cubin": ".embed_cubin",
    "embed_cubins": ".embed_cubin",
    "make_fatbin": ".embed_cubin",
    "validate_embed_name": ".embed_cubin",
    "image_archs": "._image",
    "image_kind": "._image",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
