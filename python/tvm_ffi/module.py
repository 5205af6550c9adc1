"""Loading libraries and calling their functions (the Python face of ``tvm_ffi._core``).

A library exports each function ``NAME`` as the C symbol ``__tvm_ffi_NAME``
(``TVM_FFI_DLL_EXPORT_TYPED_FUNC`` in ``tvm/ffi/function.h`` writes it);
:func:`load_module` opens the library and hands out :class:`Function` objects, which are
called like Python functions.
"""

from __future__ import annotations

import os
import stat

from ._apache_abi import load_checked
from ._core import Function, Module, image_kind
from ._core import load_module as _load_module
from ._elf import EM_CUDA, elf_machine, file_kind, library_problem

__all__ = ["Function", "Module", "load_module"]


def load_module(path: str | os.PathLike, keep_module_alive: bool = True) -> Module:
    """Load the shared library at ``path`` and return its :class:`Module`.

    The functions the library exports are attributes and items of the module
    (``mod.add_one(x, y)`` or ``mod["add_one"]``); ``mod.functions`` lists them. A function
    named like a Module attribute (``path``, ``functions``) is reachable as an item only.
    Loading the same unchanged file again reuses the loaded library; a file rebuilt since
    it was loaded is loaded anew. Libraries are never unloaded: ``keep_module_alive``
    (apache-tvm-ffi's switch for unloading with the last module object) is accepted and
    both values keep the library loaded.

    The file is checked before the dynamic loader sees it: it must be a regular file, an
    ELF shared library for this CPU, and hold every segment its headers promise (a
    library cut short would otherwise crash the process with SIGBUS).

    Raises:
        ValueError: the path holds a NUL byte.
        FileNotFoundError: the file does not exist.
        OSError: the file is not a regular file, not a shared library for this machine,
            truncated, built against apache-tvm-ffi's binary ABI, or the dynamic loader
            rejects it; the message names the file and says why (for a CUDA image, that
            ``tvm_ffi.cuda.CubinModule`` loads it).
    """
    name = os.fspath(path)
    if isinstance(name, bytes):
        if b"\0" in name:
            raise ValueError(f"load_module: the path holds a NUL byte: {name!r}")
        name = os.fsdecode(name)
    elif "\0" in name:
        raise ValueError(f"load_module: the path holds a NUL byte: {name!r}")
    _check_file(name)
    # A rebuilt file at a loaded path is loaded from a private copy that _core makes beside
    # it (TMPDIR may be mounted noexec), so the new code is what runs.
    return load_checked(_load_module, name)


# A CUDA image is the likeliest wrong file a user hands load_module; its kind comes from the
# image reader of _core, judged on the first bytes (PTX may open with comments).
_IMAGE_NAMES = {"cubin": "CUBIN", "ptx": "PTX", "fatbin": "fatbin"}


def _image_hint(fd: int, st: os.stat_result, name: str) -> str | None:
    kind = image_kind(os.pread(fd, 4096, 0))
    # Any ELF file is announced as a CUBIN; only one for CUDA is one.
    if kind is None or (kind == "cubin" and elf_machine(fd, st.st_size) != EM_CUDA):
        return None
    return (
        f"it is a {_IMAGE_NAMES[kind]} image (CUDA device code), not a shared library: load "
        f"it with tvm_ffi.cuda.CubinModule({name!r})"
    )


def _check_file(name: str) -> os.stat_result:
    # O_NONBLOCK: opening a FIFO must not wait for a writer; we refuse it just below.
    fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = file_kind(st.st_mode)
            raise OSError(f"cannot load library '{name}': not a regular file ({kind})")
        problem = library_problem(fd, st)
        if problem is not None:
            problem = _image_hint(fd, st, name) or problem
        if problem is None and os.fstatvfs(fd).f_flag & os.ST_NOEXEC:
            # The loader would only say "failed to map segment from shared object".
            problem = (
                "the file system holding it is mounted noexec, so no library on it can be "
                "mapped for execution; build or copy it elsewhere (for tvm_ffi.cpp: set "
                "TVM_FFI_CACHE_DIR, or build_directory, to a directory on another file system)"
            )
    finally:
        os.close(fd)
    if problem is not None:
        raise OSError(f"cannot load library '{name}': {problem}")
    return st
