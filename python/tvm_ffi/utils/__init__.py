"""Command-line tools, each runnable with ``python -m tvm_ffi.utils.<tool>``, and helpers
(``kwargs_wrapper.make_kwargs_wrapper``).

Names load on first attribute access, so ``python -m tvm_ffi.utils.embed_cubin`` does not
import its own module twice. ``tvm_ffi.utils.embed_cubin`` is the module (as in
apache-tvm-ffi: its function is ``tvm_ffi.utils.embed_cubin.embed_cubin``).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "FileLock",
    "embed_cubin",
    "embed_cubins",
    "embed_image",
    "image_archs",
    "image_kind",
    "make_fatbin",
    "validate_embed_name",
]

_WHERE = {
    "FileLock": ".lockfile",
    "embed_cubins": ".embed_cubin",
    "embed_image": ".embed_cubin",
    "make_fatbin": ".embed_cubin",
    "validate_embed_name": ".embed_cubin",
    "image_archs": "._image",
    "image_kind": "._image",
}
_SUBMODULES = ("embed_cubin", "kwargs_wrapper", "lockfile")


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        # The import itself binds the submodule here, whichever way it was first reached.
        return importlib.import_module(f".{name}", __name__)
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
