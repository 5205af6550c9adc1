"""Loading libraries and calling their functions (the Python face of ``tvm_ffi._core``).

A library exports each function ``NAME`` as the C symbol ``__tvm_ffi_NAME`` with the
tvm-ffi C ABI's safe-call signature (``TVM_FFI_DLL_EXPORT_TYPED_FUNC`` in
``tvm/ffi/function.h`` writes it, as apache-tvm-ffi's does); :func:`load_module` opens the
library through the runtime's loader and hands out :class:`Function` objects, which are called
like Python functions.
"""

from __future__ import annotations

import functools
import os
import stat

from . import _core
from ._core import Function
from ._elf import EM_CUDA, elf_machine, file_kind, library_problem, symbols

__all__ = ["Function", "Module", "load_module"]


class Module(_core.Module):
    """A loaded library (or a module object a function returned). Its exported functions are
    attributes and items: ``mod.add_one(x, y)`` or ``mod["add_one"]``; ``"add_one" in mod``.

    Raises (on lookup):
        AttributeError / KeyError: no such function (the message lists the module's functions).
        TypeError: the name is not a str.
    """

    __slots__ = ()

    @property
    def functions(self) -> list[str]:
        """The names of the functions the library exports, sorted (from its ELF ``.dynsym``;
        empty for a module object that is no file)."""
        path = self.path
        if path is None:
            return []
        st = os.stat(path)
        return list(_exported_functions(path, st.st_ino, st.st_mtime_ns))

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *self.functions})


_core._register_object_class("ffi.Module", Module)


@functools.lru_cache(maxsize=256)
def _exported_functions(path: str, inode: int, mtime_ns: int) -> tuple[str, ...]:
    # `__tvm_ffi_<name>`, defined and visible; names starting with `_` after the prefix are the
    # ABI's own (metadata, doc, library_ctx, embedded CUBINs), not functions.
    found = symbols(path, dynamic=True) or []
    names = {
        s.name[len(_PREFIX) :]
        for s in found
        if s.defined and s.type == _STT_FUNC and s.bind in (1, 2) and s.visibility == 0
        and s.name.startswith(_PREFIX) and len(s.name) > len(_PREFIX)
        and not s.name.startswith(_RESERVED)
    }  # fmt: skip
    return tuple(sorted(names))


_PREFIX = "__tvm_ffi_"
_RESERVED = "__tvm_ffi__"
_STT_FUNC = 2


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
            truncated, built for this package's previous ABI (v3, before the tvm-ffi C
            ABI: rebuild it), or the dynamic loader rejects it; the message names the file
            and says why (for a CUDA image, that ``tvm_ffi.cuda.CubinModule`` loads it).
    """
    name = os.fspath(path)
    if isinstance(name, bytes):
        if b"\0" in name:
            raise ValueError(f"load_module: the path holds a NUL byte: {name!r}")
        name = os.fsdecode(name)
    elif "\0" in name:
        raise ValueError(f"load_module: the path holds a NUL byte: {name!r}")
    st = _check_file(name)
    real = os.path.realpath(name)
    identity = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)
    loaded = _LOADED.get(real)
    if loaded is not None and loaded[0] == identity:
        return loaded[1]
    # Imported here: a JIT cache hit gets its Module class from this file but loads through
    # _core.load_module, so the foreign-library checks stay off its path.
    from ._old_abi import refuse_old_abi

    refuse_old_abi(real)
    # The dynamic loader matches a loaded library by path and inode: a rebuilt file at a loaded
    # path is loaded from a private copy beside it (TMPDIR may be mounted noexec), so the new
    # code is what runs. The copy goes once loaded; the mapping stays.
    if loaded is None:
        module = _load(real, real, name)
    else:
        copy = _private_copy(real)
        try:
            module = _load(copy, real, name)
        finally:
            os.unlink(copy)
    _LOADED[real] = (identity, module)
    return module


# Real path -> (the file's identity when loaded, its Module). Libraries are never unloaded.
_LOADED: dict[str, tuple[tuple[int, int, int, int], Module]] = {}


def _private_copy(real: str) -> str:
    import shutil  # only a reload pays for these imports
    import tempfile

    for folder in (os.path.dirname(real), tempfile.gettempdir()):
        try:
            fd, copy = tempfile.mkstemp(prefix="tvm_ffi_reload_", suffix=".so", dir=folder)
        except OSError:
            continue
        with os.fdopen(fd, "wb") as out, open(real, "rb") as src:
            shutil.copyfileobj(src, out)
        return copy
    raise OSError(f"cannot load library '{real}': no folder to copy the rebuilt library into")


def _load(file: str, real: str, name: str) -> Module:
    try:
        return _core.load_module(file, real)  # type: ignore[return-value]  # our Module class
    except RuntimeError as err:
        # The runtime's loader says "load_module(): cannot load '<file>': cannot load library
        # '<file>': <dlopen's reason>"; the reason is what the caller needs.
        reason = str(err)
        for prefix in (f"load_module(): cannot load '{file}': ", f"cannot load library '{file}': "):
            if reason.startswith(prefix):
                reason = reason[len(prefix) :]
        raise OSError(f"cannot load library '{name}': {reason}") from None


# A CUDA image is the likeliest wrong file a user hands load_module; its kind comes from the
# image reader of _core, judged on the first bytes (PTX may open with comments).
_IMAGE_NAMES = {"cubin": "CUBIN", "ptx": "PTX", "fatbin": "fatbin"}


def _image_hint(fd: int, st: os.stat_result, name: str) -> str | None:
    kind = _core.image_kind(os.pread(fd, 4096, 0))
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
