"""Build C++/CUDA sources into libraries of exported functions, and load them.

``load_inline`` / ``build_inline`` take source strings, ``load`` / ``build`` take files.
Results are cached by content under ``$TVM_FFI_CACHE_DIR``; see docs/guides/jit.md.
Importing this package finds no tools and runs nothing: that happens on the first build.
"""

from ._build import BuildError
from ._inline import build, build_inline, load, load_inline
from ._many import ManyBuildError, build_inline_many, load_inline_many

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
