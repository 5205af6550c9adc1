"""The public JIT entry points: build or load a module from source strings or files.

The names and keywords are apache-tvm-ffi's (``cpp_files=``, ``cuda_files=``,
``keep_module_alive=``, ``backend=``), next to this package's own (``sources=``,
``output=``, ``verbose=``).
"""

from __future__ import annotations

import contextlib
import os
import sys

from . import _spec

# A cache hit in a fresh process pays for every module imported and every statement run
# here: the argument types are for checkers only (annotations stay strings), and _arch,
# _env, pathlib and typing come with their first use.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path
    from typing import Any, Literal, Union

    from ..module import Module

    Sources = Union[str, Sequence[str], None]
    Flags = Union[str, Sequence[str], None]
    Functions = Union[str, Sequence[str], Mapping[str, Union[str, None]], None]
    EmbedCubin = Union[Mapping[str, _spec.EmbedValue], None]
    PathLike = Union[str, "os.PathLike[str]"]
    Files = Union[PathLike, Sequence[PathLike], None]
    Archs = Union[str, Sequence[str], None]
    Backend = Union[Literal["cuda"], None]  # the one GPU toolchain offered


__all__ = ["build", "build_inline", "load", "load_inline"]


def _arch_choice(api: str, arch: Archs, cuda_cflags: list[str]) -> list | None:
    if arch is None:  # the default choice is made by the build (_arch.choose), on a miss
        return None
    from . import _arch

    archs = _arch.arch_argument(api, arch)
    flag = _arch.user_arch_flag(cuda_cflags)
    if archs is not None and flag is not None:
        raise ValueError(
            f"{api}: arch={arch!r} and {flag!r} in extra_cuda_cflags both choose the "
            "architectures; give one of them"
        )
    return archs


def _output_path(api: str, output: object) -> Path | None:
    if output is None:
        return None
    if not isinstance(output, (str, os.PathLike)):
        raise TypeError(f"{api}: output must be a path (got {type(output).__name__})")
    from pathlib import Path

    path = Path(output)
    if not path.name or str(output).endswith(os.sep):
        raise ValueError(f"{api}: output must name a file (got {str(output)!r})")
    return path.resolve()


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
    backend: Backend,
    output: Path | None = None,
    arch: Archs = None,
) -> _spec.Spec:
    _spec.check_module_name(api, name)
    _spec.check_backend(api, backend)
    cpp = _spec.source_texts(api, "cpp_sources", cpp_sources)
    cuda = _spec.source_texts(api, "cuda_sources", cuda_sources)
    if not cpp and not cuda:
        raise ValueError(f"{api}: give cpp_sources or cuda_sources (both are empty)")
    docs = _spec.function_docs(api, functions)
    cuda_cflags = _spec.flag_list(api, "extra_cuda_cflags", extra_cuda_cflags)
    exports = _spec.export_block(docs)
    # As in apache-tvm-ffi, every source sees the prelude includes (through -include
    # flags); the export lines go after the C++ sources when there are any (where the
    # functions are usually declared), else after the CUDA sources.
    cpp_text = "\n".join(cpp) + exports if cpp else None
    cuda_text = "\n".join(cuda) + ("" if cpp else exports) if cuda else None
    prelude = list(_spec.PRELUDE_FLAGS)
    return _spec.Spec(
        api=api,
        name=name,
        inline_cpp=cpp_text,
        inline_cuda=cuda_text,
        cflags=prelude + _spec.flag_list(api, "extra_cflags", extra_cflags),
        cuda_cflags=prelude + cuda_cflags,
        ldflags=_spec.flag_list(api, "extra_ldflags", extra_ldflags),
        include_paths=_spec.include_list(api, extra_include_paths),
        embeds=_spec.embed_images(api, embed_cubin),
        docs=docs,
        object_output=output is not None and output.suffix == ".o",
        archs=_arch_choice(api, arch, cuda_cflags),
    )


def _file_spec(
    api: str,
    name: str,
    sources: Files,
    cpp_files: Files,
    cuda_files: Files,
    extra_cflags: Flags,
    extra_cuda_cflags: Flags,
    extra_ldflags: Flags,
    extra_include_paths: Flags,
    embed_cubin: EmbedCubin,
    backend: Backend,
    output: Path | None = None,
    arch: Archs = None,
) -> _spec.Spec:
    _spec.check_module_name(api, name)
    _spec.check_backend(api, backend)
    files, kinds = _spec.typed_files(api, sources, cpp_files, cuda_files)
    cuda_cflags = _spec.flag_list(api, "extra_cuda_cflags", extra_cuda_cflags)
    return _spec.Spec(
        api=api,
        name=name,
        files=files,
        file_kinds=kinds,
        cflags=_spec.flag_list(api, "extra_cflags", extra_cflags),
        cuda_cflags=cuda_cflags,
        ldflags=_spec.flag_list(api, "extra_ldflags", extra_ldflags),
        include_paths=_spec.include_list(api, extra_include_paths),
        embeds=_spec.embed_images(api, embed_cubin),
        object_output=output is not None and output.suffix == ".o",
        archs=_arch_choice(api, arch, cuda_cflags),
    )


def _publish(built: str | Path, output: Path | None) -> str:
    """Copy the built file to ``output`` (atomically: readers never see a partial file);
    return the path the caller gets."""
    if output is None:
        return str(built)
    output.parent.mkdir(parents=True, exist_ok=True)
    # Created by us with the usual modes (the umask applies): 0777 for a library, as the
    # linker writes them, 0666 for an object.
    mode = 0o666 if output.suffix == ".o" else 0o777
    import secrets  # not at import: only an output= copy needs it

    staged = output.with_name(f".{output.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    try:
        with open(fd, "wb") as dst, open(built, "rb") as src:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
        os.replace(staged, output)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(staged)
        raise
    return str(output)


# _cached_build (tool discovery, ninja, the full key) is imported on a miss only: a cache hit
# in a fresh process goes through _hit_index.find alone. It is imported here, not at the top,
# also because the build machinery needs Linux (flock, O_NOFOLLOW) and importing
# tvm_ffi.cpp elsewhere must still work, so that require_linux can speak first.


def _indexed_hit(spec: _spec.Spec, build_directory, verbose: bool) -> str | None:
    """The cached library the hit index knows for ``spec``, after the platform check."""
    if not sys.platform.startswith("linux"):
        from . import _env

        _env.require_linux(spec.api)
    from . import _hit_index

    return _hit_index.find(spec, build_directory, verbose)


def _build_library(spec: _spec.Spec, build_directory, verbose: bool) -> str | Path:
    found = _indexed_hit(spec, build_directory, verbose)
    if found is not None:
        return found
    from ._cached_build import build_library

    return build_library(spec, build_directory, verbose)


def _build_and_load(spec: _spec.Spec, build_directory, verbose: bool) -> Any:
    found = _indexed_hit(spec, build_directory, verbose)
    if found is not None:
        # Built by this package into its private cache, and found sound by the lookup (an
        # ELF library for this CPU, whole, reached without following a link): load_module's
        # file check would repeat that.
        from tvm_ffi._core import load_module

        return load_module(found)
    from ._cached_build import build_and_load

    return build_and_load(spec, build_directory, verbose)


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
    arch: Archs = None,
    backend: Backend = None,
    output: PathLike | None = None,
    verbose: bool = False,
) -> str:
    """Build a shared library from source strings and return its path.

    Takes the same arguments as :func:`load_inline`, which documents them, and skips the
    loading. Reuses the cached library when the inputs are unchanged.

    ``output``: also copy the result to this path, and return it. A path ending in
    ``.o`` asks for a relocatable object (everything, embedded images included, in one
    object to link into your own library) instead of a shared library.
    """
    out = _output_path("build_inline", output)
    spec = _inline_spec(
        "build_inline", name, cpp_sources, cuda_sources, functions, extra_cflags,
        extra_cuda_cflags, extra_ldflags, extra_include_paths, embed_cubin, backend, out, arch,
    )  # fmt: skip
    return _publish(_build_library(spec, build_directory, verbose), out)


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
    arch: Archs = None,
    keep_module_alive: bool = True,
    backend: Backend = None,
    verbose: bool = False,
) -> Module:
    """Compile C++/CUDA source strings into a module and load it.

    Parameters
    ----------
    name:
        Module name, any non-empty string (``my_ops``, ``my-ops``, ``v1.2``); the library is
        ``<name>.so``, with characters unsafe in a file name replaced (plus a hash).
    cpp_sources:
        C++ source text (a string or a list of strings, joined into ``main.cpp``),
        compiled with ``$CXX`` (default ``c++``) as C++17.
    cuda_sources:
        CUDA source text (joined into ``cuda.cu``), compiled with nvcc for the target
        architectures (see ``arch``); the library then links ``cudart``. Both kinds of
        source start with the includes ``tvm/ffi/container/tensor.h``, ``dtype.h``,
        ``error.h``, ``extra/c_env_api.h`` and ``function.h``, so a source needs no
        ``#include`` of its own for those.
    functions:
        Names of functions in the sources to export (a name, a list, or a dict name ->
        docstring or None), so you need not write ``TVM_FFI_DLL_EXPORT_TYPED_FUNC``.
    extra_cflags, extra_cuda_cflags, extra_ldflags:
        Flags appended for the C++ compiler, for nvcc, and for the link: a list (one flag
        per item) or a str, split as a shell would (``"-O0 -g"`` is two flags).
    extra_include_paths:
        More ``-I`` directories (the package's headers and, with CUDA, the toolkit's are
        always included).
    build_directory:
        Build there (incrementally) instead of in the cache.
    embed_cubin:
        ``{"name": image_bytes}`` or ``{"name": {"sm_80": bytes, "sm_90": bytes}}``: images
        embedded as ``__tvm_ffi__cubin_<name>`` for ``TVM_FFI_EMBED_CUBIN(name)``.
    arch:
        The architectures nvcc builds ``cuda_sources`` for: ``"9.0a"``, ``"8.0;9.0+PTX"``,
        ``["sm_80", "sm_90a"]`` (spellings: ``9.0``, ``90``, ``sm_90``, ``compute_90``,
        ``9.0a``, ``sm_90a``, ``10.0f``, each optionally ``+PTX``). None: an ``-arch`` or
        ``-gencode`` in ``extra_cuda_cflags`` if there is one, else
        ``TVM_FFI_CUDA_ARCH_LIST``, else the visible GPUs, else ``7.5;8.0;9.0+PTX``.
    keep_module_alive:
        apache-tvm-ffi's switch for unloading the library with the last module object.
        Libraries loaded by this package are never unloaded, so both values keep it loaded.
    backend:
        ``"cuda"`` or None (the same): the GPU toolchain. No other backend is offered.
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
        A function or embed name is not a C identifier, ``arch`` is not understood (or
        given next to an ``-arch``/``-gencode`` flag), or an argument has the wrong type.
    RuntimeError
        A tool (compiler, launcher, nvcc, ninja) is missing, or this is not Linux.
    TimeoutError
        Another process kept building the same module past ``TVM_FFI_BUILD_LOCK_TIMEOUT``.
    """
    _spec.check_flag("load_inline", "keep_module_alive", keep_module_alive)
    spec = _inline_spec(
        "load_inline", name, cpp_sources, cuda_sources, functions, extra_cflags,
        extra_cuda_cflags, extra_ldflags, extra_include_paths, embed_cubin, backend, None, arch,
    )  # fmt: skip
    return _attach_docs(_build_and_load(spec, build_directory, verbose), spec.docs)


def build(
    name: str,
    sources: Files = None,
    *,
    cpp_files: Files = None,
    cuda_files: Files = None,
    extra_cflags: Flags = None,
    extra_cuda_cflags: Flags = None,
    extra_ldflags: Flags = None,
    extra_include_paths: Flags = None,
    build_directory: PathLike | None = None,
    embed_cubin: EmbedCubin = None,
    arch: Archs = None,
    backend: Backend = None,
    output: PathLike | None = None,
    verbose: bool = False,
) -> str:
    """Build a shared library from source files and return its path.

    ``cpp_files`` are compiled with ``$CXX`` (``.c`` files as C), ``cuda_files`` with nvcc;
    ``.o`` files in either list are linked as they are. ``sources`` takes any of them and
    goes by the suffix (``.cu``: nvcc, ``.c``: C, ``.o``: linked, else C++). The files are
    compiled where they are (relative ``#include "..."`` works); their content is part of
    the cache key. Unlike :func:`build_inline`, nothing is added to the sources.

    ``output``: as for :func:`build_inline` (``.o``: one relocatable object).
    """
    out = _output_path("build", output)
    spec = _file_spec(
        "build", name, sources, cpp_files, cuda_files, extra_cflags, extra_cuda_cflags,
        extra_ldflags, extra_include_paths, embed_cubin, backend, out, arch,
    )  # fmt: skip
    return _publish(_build_library(spec, build_directory, verbose), out)


def load(
    name: str,
    sources: Files = None,
    *,
    cpp_files: Files = None,
    cuda_files: Files = None,
    extra_cflags: Flags = None,
    extra_cuda_cflags: Flags = None,
    extra_ldflags: Flags = None,
    extra_include_paths: Flags = None,
    build_directory: PathLike | None = None,
    embed_cubin: EmbedCubin = None,
    arch: Archs = None,
    keep_module_alive: bool = True,
    backend: Backend = None,
    verbose: bool = False,
) -> Module:
    """Like :func:`build`, then load the library and return the module
    (``keep_module_alive`` as for :func:`load_inline`)."""
    _spec.check_flag("load", "keep_module_alive", keep_module_alive)
    spec = _file_spec(
        "load", name, sources, cpp_files, cuda_files, extra_cflags, extra_cuda_cflags,
        extra_ldflags, extra_include_paths, embed_cubin, backend, None, arch,
    )  # fmt: skip
    return _build_and_load(spec, build_directory, verbose)
