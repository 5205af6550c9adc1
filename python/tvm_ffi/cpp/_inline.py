"""The public JIT entry points: build or load a module from source strings or files."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, Sequence
from typing import Any, Union

from . import _spec
from ._library import build_and_load, build_library

__all__ = ["build", "build_inline", "load", "load_inline"]

Sources = Union[str, Sequence[str], None]
Flags = Union[str, Sequence[str], None]
Functions = Union[str, Sequence[str], Mapping[str, str], None]
EmbedCubin = Union[Mapping[str, _spec.EmbedValue], None]
PathLike = Union[str, "os.PathLike[str]"]


def _inline_spec(
    api: str,
    name: str,
    cpp_sources: Sources,
    cuda_sources: Sources,
    functions: Functions,
    extra_cflags: Flags,
    extra_cuda_cflags: Flags,
    extra_ldflags: Flags,
    extra_include_paths: Flags,
    embed_cubin: EmbedCubin,
) -> _spec.Spec:
    _spec.check_identifier(api, "module name", name)
    cpp = _spec.string_list(api, "cpp_sources", cpp_sources)
    cuda = _spec.string_list(api, "cuda_sources", cuda_sources)
    if not cpp and not cuda:
        raise ValueError(f"{api}: give cpp_sources or cuda_sources (both are empty)")
    docs = _spec.function_docs(api, functions)
    exports = _spec.export_block(docs)
    # The export lines go after the C++ sources when there are any (where the functions
    # are usually declared), else after the CUDA sources.
    cpp_text = "\n".join(cpp) + exports if cpp else None
    cuda_text = "\n".join(cuda) + ("" if cpp else exports) if cuda else None
    return _spec.Spec(
        api=api,
        name=name,
        inline_cpp=cpp_text,
        inline_cuda=cuda_text,
        cflags=_spec.string_list(api, "extra_cflags", extra_cflags),
        cuda_cflags=_spec.string_list(api, "extra_cuda_cflags", extra_cuda_cflags),
        ldflags=_spec.string_list(api, "extra_ldflags", extra_ldflags),
        include_paths=_spec.include_list(api, extra_include_paths),
        embeds=_spec.embed_images(api, embed_cubin),
        docs=docs,
    )


def _file_spec(
    api: str,
    name: str,
    sources: PathLike | Sequence[PathLike],
    extra_cflags: Flags,
    extra_cuda_cflags: Flags,
    extra_ldflags: Flags,
    extra_include_paths: Flags,
    embed_cubin: EmbedCubin,
) -> _spec.Spec:
    _spec.check_identifier(api, "module name", name)
    return _spec.Spec(
        api=api,
        name=name,
        files=_spec.source_list(api, sources),
        cflags=_spec.string_list(api, "extra_cflags", extra_cflags),
        cuda_cflags=_spec.string_list(api, "extra_cuda_cflags", extra_cuda_cflags),
        ldflags=_spec.string_list(api, "extra_ldflags", extra_ldflags),
        include_paths=_spec.include_list(api, extra_include_paths),
        embeds=_spec.embed_images(api, embed_cubin),
    )


def _attach_docs(module: Any, docs: Mapping[str, str]) -> Any:
    for fname, doc in docs.items():
        if doc:
            # A function type without a writable __doc__ just goes without: it is optional.
            with contextlib.suppress(AttributeError, TypeError):
                module[fname].__doc__ = doc
    return module


def build_inline(
    name: str,
    *,
    cpp_sources: Sources = None,
    cuda_sources: Sources = None,
    functions: Functions = None,
    extra_cflags: Flags = None,
    extra_cuda_cflags: Flags = None,
    extra_ldflags: Flags = None,
    extra_include_paths: Flags = None,
    build_directory: PathLike | None = None,
    embed_cubin: EmbedCubin = None,
    verbose: bool = False,
) -> str:
    """Build a shared library from source strings and return its path.

    Takes the same arguments as :func:`load_inline`, which documents them; it only
    skips the loading. Reuses the cached library when the inputs are unchanged.
    """
    spec = _inline_spec(
        "build_inline", name, cpp_sources, cuda_sources, functions, extra_cflags,
        extra_cuda_cflags, extra_ldflags, extra_include_paths, embed_cubin,
    )  # fmt: skip
    return str(build_library(spec, build_directory, verbose))


def load_inline(
    name: str,
    *,
    cpp_sources: Sources = None,
    cuda_sources: Sources = None,
    functions: Functions = None,
    extra_cflags: Flags = None,
    extra_cuda_cflags: Flags = None,
    extra_ldflags: Flags = None,
    extra_include_paths: Flags = None,
    build_directory: PathLike | None = None,
    embed_cubin: EmbedCubin = None,
    verbose: bool = False,
) -> Any:
    """Compile C++/CUDA source strings into a module and load it.

    Parameters
    ----------
    name:
        Module name, a C identifier; the library is ``<name>.so``.
    cpp_sources:
        C++ source text (a string or a list of strings, joined into ``main.cpp``),
        compiled with ``$CXX`` (default ``c++``) as C++17.
    cuda_sources:
        CUDA source text (joined into ``cuda.cu``), compiled with nvcc for the target
        architectures (``TVM_FFI_CUDA_ARCH_LIST``, else the visible GPUs, else a default);
        the library then links ``cudart``.
    functions:
        Names of functions in the sources to export (a list, or a dict name -> docstring),
        so you need not write ``TVM_FFI_DLL_EXPORT_TYPED_FUNC`` yourself.
    extra_cflags, extra_cuda_cflags, extra_ldflags:
        Flags appended for the C++ compiler, for nvcc, and for the link.
    extra_include_paths:
        More ``-I`` directories (the package's headers and, with CUDA, the toolkit's are
        always included).
    build_directory:
        Build there (incrementally) instead of in the cache.
    embed_cubin:
        ``{"name": image_bytes}`` or ``{"name": {"sm_80": bytes, "sm_90": bytes}}``: images
        embedded as ``__tvm_ffi__cubin_<name>`` for ``TVM_FFI_EMBED_CUBIN(name)``.
    verbose:
        Stream the build output to stderr (also ``TVM_FFI_BUILD_VERBOSE=1``).

    Returns
    -------
    The loaded module: its functions are attributes and ``mod["name"]``.

    Raises
    ------
    BuildError
        A compiler or the linker failed; the message starts with the first error line.
    ValueError, TypeError
        A name is not a C identifier, or an argument has the wrong type.
    TimeoutError
        Another process kept building the same module past ``TVM_FFI_BUILD_LOCK_TIMEOUT``.
    """
    spec = _inline_spec(
        "load_inline", name, cpp_sources, cuda_sources, functions, extra_cflags,
        extra_cuda_cflags, extra_ldflags, extra_include_paths, embed_cubin,
    )  # fmt: skip
    return _attach_docs(build_and_load(spec, build_directory, verbose), spec.docs)


def build(
    name: str,
    sources: PathLike | Sequence[PathLike],
    *,
    extra_cflags: Flags = None,
    extra_cuda_cflags: Flags = None,
    extra_ldflags: Flags = None,
    extra_include_paths: Flags = None,
    build_directory: PathLike | None = None,
    embed_cubin: EmbedCubin = None,
    verbose: bool = False,
) -> str:
    """Build a shared library from source files (``.cu`` with nvcc, others with ``c++``).

    The files are compiled where they are (relative ``#include "..."`` works); their
    content is part of the cache key. Returns the library's path.
    """
    spec = _file_spec(
        "build", name, sources, extra_cflags, extra_cuda_cflags, extra_ldflags,
        extra_include_paths, embed_cubin,
    )  # fmt: skip
    return str(build_library(spec, build_directory, verbose))


def load(
    name: str,
    sources: PathLike | Sequence[PathLike],
    *,
    extra_cflags: Flags = None,
    extra_cuda_cflags: Flags = None,
    extra_ldflags: Flags = None,
    extra_include_paths: Flags = None,
    build_directory: PathLike | None = None,
    embed_cubin: EmbedCubin = None,
    verbose: bool = False,
) -> Any:
    """Like :func:`build`, then load the library and return the module."""
    spec = _file_spec(
        "load", name, sources, extra_cflags, extra_cuda_cflags, extra_ldflags,
        extra_include_paths, embed_cubin,
    )  # fmt: skip
    return build_and_load(spec, build_directory, verbose)
