"""Build C++/CUDA sources into libraries of exported functions, and load them.

``load_inline`` / ``build_inline`` take source strings, ``load`` / ``build`` take files;
``load_inline_many`` / ``build_inline_many`` build a list of modules in parallel.
Results are cached by content under ``$TVM_FFI_CACHE_DIR``; see docs/guides/jit.md.
Importing this package finds no tools and runs nothing: that happens on the first build.
Only what a cache hit needs is imported here; the rest comes with its first use.
"""

from __future__ import annotations

import importlib

from ._inline import build, build_inline, load, load_inline

__all__ = [
    "BuildError",
    "ManyBuildError",
    "build",
    "build_inline",
    "build_inline_many",
    "load",
    "load_inline",
    "load_inline_many",
]

_LAZY = {
    "BuildError": "._build",
    "ManyBuildError": "._inline_many",
    "build_inline_many": "._inline_many",
    "load_inline_many": "._inline_many",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
