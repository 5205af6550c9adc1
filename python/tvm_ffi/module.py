"""Loading libraries and calling their functions (the Python face of ``tvm_ffi._core``).

A library exports each function ``NAME`` as the C symbol ``__tvm_ffi_NAME``
(``TVM_FFI_DLL_EXPORT_TYPED_FUNC`` in ``tvm/ffi/function.h`` writes it);
:func:`load_module` opens the library and hands out :class:`Function` objects, which are
called like Python functions.
"""

from __future__ import annotations

import os
import stat
import threading

from ._core import Function, Module
from ._core import load_module as _load_module

__all__ = ["Function", "Module", "load_module"]

# Absolute path -> (dev, inode, mtime_ns, size) of the file when this process last loaded it.
_loaded: dict[str, tuple[int, int, int, int]] = {}
_reload_lock = threading.Lock()


def load_module(path: str | os.PathLike) -> Module:
    """Load the shared library at ``path`` and return its :class:`Module`.

    The functions the library exports are attributes and items of the module
    (``mod.add_one(x, y)`` or ``mod["add_one"]``); ``mod.functions`` lists them. A function
    named like a Module attribute (``path``, ``functions``) is reachable as an item only.
    Loading the same unchanged file again reuses the loaded library; a file rebuilt since
    it was loaded is loaded anew. Libraries are never unloaded.

    The file is checked before the dynamic loader sees it: it must be a regular file, an
    ELF shared library for this CPU, and hold every segment its headers promise (a
    library cut short would otherwise crash the process with SIGBUS).

    Raises:
        ValueError: the path holds a NUL byte.
        FileNotFoundError: the file does not exist.
        OSError: the file is not a regular file, not a shared library for this machine,
            truncated, or the dynamic loader rejects it; the message names the file and
            says why (``cannot load library '<path>': <reason>``).
    """
    name = os.fspath(path)
    if isinstance(name, bytes):
        if b"\0" in name:
            raise ValueError(f"load_module: the path holds a NUL byte: {name!r}")
        name = os.fsdecode(name)
    elif "\0" in name:
        raise ValueError(f"load_module: the path holds a NUL byte: {name!r}")
    st = _check_file(name)
    # abspath, not realpath (which costs a stat per path component on every load): a
    # library reached through two different links only loses the TMPDIR redirection below.
    real = os.path.abspath(name)
    identity = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)
    with _reload_lock:
        previous = _loaded.get(real)
        if previous is None or previous == identity:
            module = _load_module(name)
        else:
            module = _load_rebuilt(name, real)
        _loaded[real] = identity
    return module


def _check_file(name: str) -> os.stat_result:
    from ._elf_check import file_kind, library_problem

    # O_NONBLOCK: opening a FIFO must not wait for a writer; we refuse it just below.
    fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = file_kind(st.st_mode)
            raise OSError(f"cannot load library '{name}': not a regular file ({kind})")
        problem = library_problem(fd, st)
    finally:
        os.close(fd)
    if problem is not None:
        raise OSError(f"cannot load library '{name}': {problem}")
    return st


def _load_rebuilt(name: str, real: str) -> Module:
    # The loader would hand back the old image for the old path, so _core loads a rebuilt
    # file from a private copy, made in $TMPDIR. That copy must be mapped executable: put
    # it beside the library (where code is evidently allowed to run) rather than in a
    # TMPDIR that may be mounted noexec. _core reads TMPDIR, so it is set for the length
    # of this one call (under _reload_lock) and put back.
    directory = os.path.dirname(os.path.realpath(real))
    if not os.access(directory, os.W_OK | os.X_OK):
        return _load_module(name)
    saved = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = directory
    try:
        return _load_module(name)
    finally:
        if saved is None:
            del os.environ["TMPDIR"]
        else:
            os.environ["TMPDIR"] = saved
