"""The build cache: where it lives, how entries are named, who may build and publish one.

Layout (``$TVM_FFI_CACHE_DIR``, default ``$XDG_CACHE_HOME/tvm-ffi`` or ``~/.cache/tvm-ffi``)::

    toolchain/<tool>-<hash>.json   compiler identities (see _toolchain.tool_identity)
    gpu_archs.json                 the visible GPUs' architectures (see _arch.detected_capabilities)
    <name>_<key>/                  one entry per content hash
        lock                       flock()ed while a process builds the entry
        build.ninja, sources, obj/, embed/
        obj/<name>.so              what ninja links; never loaded from there
        <name>.so                  published last: its presence means "built"

An entry's key hashes everything that can change the library, so an entry is never
rebuilt in place: a process that finds a sound ``<name>.so`` just loads it, without the
lock. Only a lock holder publishes, by hard-linking ninja's finished, fsync()ed output
to ``<name>.so``, which never replaces an existing file; ninja itself never writes that
name, so a build step left running by a killed builder cannot replace it either.

Every step inside the cache goes through directory descriptors opened with
``O_NOFOLLOW`` (see :mod:`tvm_ffi._private_dir`): a symbolic link there is never followed.
"""

from __future__ import annotations

import _thread  # get_ident for temp names: threading itself is a costly import
import contextlib
import errno
import os
import stat
import sys

from .._private_dir import (
    DIR_FLAGS,
    PrivateDirError,
    open_private_dir,
    replace_at,
    replace_atomically,  # noqa: F401  (re-exported: _arch writes its record through it)
)

# A cache hit imports this module: what only a build needs (fcntl, time, math, pathlib) is
# imported where it is used.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

__all__ = [
    "KeyHasher",
    "build_lock",
    "cache_root",
    "clean_entry",
    "lock_timeout",
    "open_cache_root",
    "open_cache_root_str",
    "open_entry",
    "private_root",
    "publish",
    "write_if_changed",
]

_CACHE_ENV = "TVM_FFI_CACHE_DIR"
_LOCK_TIMEOUT_ENV = "TVM_FFI_BUILD_LOCK_TIMEOUT"
_DEFAULT_LOCK_TIMEOUT = 600.0
# File names longer than this are shortened (NAME_MAX is 255 and "<name>_<key>" adds 33).
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC


def _default_root() -> str:
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):  # the XDG spec: a relative path is invalid and ignored
        return os.path.join(xdg, "tvm-ffi")
    home = os.path.expanduser("~")  # what Path.home() reads, without importing pathlib
    if home.startswith("~"):  # no HOME and no passwd entry
        raise RuntimeError(
            "cannot find the default cache directory ~/.cache/tvm-ffi: HOME is not set "
            f"and this user has no home directory; set {_CACHE_ENV} to a directory you own"
        )
    return os.path.join(home, ".cache", "tvm-ffi")


# TVM_FFI_CACHE_DIR's value -> the absolute root it named where this process first used it:
# a relative value is resolved once, so a process that changes directory keeps one cache.
_configured: dict[str, str] = {}


def _configured_root(value: str) -> str:
    """The absolute cache root that ``TVM_FFI_CACHE_DIR=value`` names: ``~`` expanded as a
    shell would have, a relative path resolved against the working directory of its first
    use in this process."""
    root = _configured.get(value)
    if root is not None:
        return root
    if "\n" in value or "\r" in value:
        # build.ninja names files of other entries by path, and ninja cannot write these.
        raise ValueError(
            f"{_CACHE_ENV} holds a newline or a carriage return (got {value!r}); "
            "choose a cache directory without one"
        )
    root = os.path.expanduser(value)
    if root.startswith("~"):  # no such user, or no HOME and no passwd entry
        raise ValueError(
            f"{_CACHE_ENV}={value!r}: cannot expand {root.split('/', 1)[0]!r} (no such user, "
            "or HOME is not set); give an absolute path"
        )
    root = _configured[value] = os.path.abspath(root)
    return root


def open_cache_root() -> tuple[Path, int]:
    """:func:`open_cache_root_str` with the root as a Path."""
    from pathlib import Path

    root, fd = open_cache_root_str()
    return Path(root), fd


def open_cache_root_str() -> tuple[str, int]:
    """The checked cache root (resolved) and an open descriptor of it (mode 0700 when
    created). A str: a cache hit in a fresh process does not import pathlib.

    Raises
    ------
    PermissionError
        The directory, or one above it, can be changed by another user, who could then
        plant a library this process would load and run.
    OSError
        The directory cannot be created or opened; the message names it and the variable.
    """
    configured = os.environ.get(_CACHE_ENV)
    root = _configured_root(configured) if configured else _default_root()
    shared_hint = f"set {_CACHE_ENV} to a private directory (e.g. {_CACHE_ENV}=~/.cache/tvm-ffi)"
    if not configured:
        shared_hint = f"make it private (chmod 700 {root}) or set {_CACHE_ENV}"
    try:
        resolved, fd = open_private_dir(
            root,
            label="cache directory",
            mode=0o700,
            hint=f"set {_CACHE_ENV} to a directory you own",
            shared_hint=shared_hint,
        )
    except PrivateDirError:
        raise
    except OSError as err:
        if configured:
            raise
        # The default lives under HOME: say so, and how to put the cache elsewhere.
        raise type(err)(
            f"{err}; it is the default cache directory, under HOME={os.environ.get('HOME', '')}:"
            f" set {_CACHE_ENV} to a directory you own"
        ) from None
    return resolved, fd


def cache_root() -> Path:
    """The checked cache root (see :func:`open_cache_root`)."""
    root, fd = open_cache_root()
    os.close(fd)
    return root


# CPython's own SHA-256: importing hashlib starts OpenSSL, most of a cache hit's import.
# The module of this version is tried first (a failed import searches all of sys.path).
try:
    if sys.version_info >= (3, 12):
        from _sha2 import sha256 as _small_sha256
    else:
        from _sha256 import sha256 as _small_sha256
except ImportError:  # a build without them
    from hashlib import sha256 as _small_sha256

# Above this size data is hashed by hashlib (OpenSSL), several times faster on big images.
_SMALL = 1 << 16


def sha256(data: bytes = b"") -> object:
    """A SHA-256 object (``update``, ``digest``, ``hexdigest``) for small inputs, without
    the cost of importing hashlib."""
    return _small_sha256(data)


def digest(data: bytes) -> bytes:
    """SHA-256 of ``data``: the built-in code for small data, OpenSSL for large."""
    if len(data) <= _SMALL:
        return _small_sha256(data).digest()
    import hashlib

    return hashlib.sha256(data).digest()


class KeyHasher:
    """SHA-256 over labelled, length-prefixed fields, so no two inputs can collide by
    shifting bytes from one field into the next."""

    def __init__(self) -> None:
        self._hash = _small_sha256()

    def add(self, label: str, value: str | bytes) -> None:
        data = value.encode() if isinstance(value, str) else bytes(value)
        if len(data) > _SMALL:  # a large file: its digest stands for it (OpenSSL is faster)
            label, data = f"{label}:sha256", digest(data)
        self._hash.update(f"{label}:{len(data)}:".encode())
        self._hash.update(data)

    def hexdigest(self, length: int = 32) -> str:
        return self._hash.hexdigest()[:length]


def lock_timeout() -> float:
    """Seconds to wait for another process's build (``TVM_FFI_BUILD_LOCK_TIMEOUT``)."""
    text = os.environ.get(_LOCK_TIMEOUT_ENV, "").strip()
    if not text:
        return _DEFAULT_LOCK_TIMEOUT
    import math

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    # nan, inf and 1e400 (which parses to inf) would make the wait endless.
    if not math.isfinite(value) or value < 0:
        raise ValueError(
            f"{_LOCK_TIMEOUT_ENV} must be a number of seconds, finite and >= 0 (got {text!r})"
        )
    return value


def open_entry(root_fd: int, name: str, path: Path, *, create: bool) -> int | None:
    """Open the entry directory ``name`` under the root; None if absent and not ``create``."""
    for _ in range(2):
        try:
            fd = os.open(name, DIR_FLAGS, dir_fd=root_fd)
            break
        except FileNotFoundError:
            if not create:
                return None
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o700, dir_fd=root_fd)
        except OSError as err:
            if err.errno in (errno.ELOOP, errno.ENOTDIR):
                raise PrivateDirError(
                    f"refusing cache entry {path}: not a directory (a symbolic link or a "
                    "file where the entry should be); remove it"
                ) from None
            raise
    else:
        fd = os.open(name, DIR_FLAGS, dir_fd=root_fd)
    st = os.fstat(fd)
    if st.st_uid != os.geteuid() or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        os.close(fd)
        raise PrivateDirError(
            f"refusing cache entry {path}: owned by uid {st.st_uid} with mode "
            f"{stat.S_IMODE(st.st_mode):o}; only you may write it"
        )
    if create and not os.access(".", os.W_OK, dir_fd=fd, effective_ids=True):
        # An entry there already (a build that failed) in a cache this process cannot write:
        # said now, as a new entry's mkdir would say it, not by the lock file's open.
        read_only = os.fstatvfs(fd).f_flag & os.ST_RDONLY
        os.close(fd)
        code = errno.EROFS if read_only else errno.EACCES
        raise OSError(code, f"cannot build in cache entry {path}: {os.strerror(code)}")
    return fd


#: The errors of a cache that this process cannot write (see private_root).
READ_ONLY = (errno.EROFS, errno.EACCES)
_private: list[tuple[Path, int]] = []
_private_lock = _thread.allocate_lock()


def private_root() -> tuple[Path, int]:
    """This process's own build root, for the entries a cache it cannot write (mounted
    read-only, or not writable by this user) lacks: made on first need under the temporary
    directory, mode 0700 and checked as the cache root is; removed when the process exits
    (a library loaded from there stays loaded). ``(path, descriptor)``, kept open."""
    with _private_lock:
        if not _private:
            import atexit
            import shutil
            import tempfile
            from pathlib import Path

            made = tempfile.mkdtemp(prefix="tvm-ffi-")
            pid = os.getpid()  # a forked child must not remove its parent's builds
            atexit.register(lambda: os.getpid() == pid and shutil.rmtree(made, True))
            resolved, fd = open_private_dir(
                made,
                label="private build directory",
                mode=0o700,
                hint="set TMPDIR to a directory you own",
                shared_hint="set TMPDIR to a private directory",
            )
            _private.append((Path(resolved), fd))
        return _private[0]


# A process waiting on another's build says so after this many seconds (once on stderr,
# see _progress), then logs every _WAIT_LOG_EVERY seconds, naming the holder that the lock
# file records.
_WAIT_LOG_AFTER = 1.5
_WAIT_LOG_EVERY = 15.0


@contextlib.contextmanager
def build_lock(
    dir_fd: int, directory: Path, timeout: float, *, what: str = "", verbose: bool = False
) -> Iterator[Path]:
    """Hold an exclusive flock on ``<directory>/lock`` for the duration of the block.

    flock belongs to the open file, so the kernel drops it when the holder exits or is
    killed: a crashed build never leaves the entry locked. We poll with LOCK_NB rather
    than block so the wait has a timeout and stays interruptible. The holder writes its
    pid and host into the file (whose mtime then says since when it holds the lock), for
    the processes that wait on it; they say so, naming ``what`` they wait for (see
    _progress; ``verbose``: always).
    """
    import fcntl
    import time

    lock_path = directory / "lock"
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open("lock", flags, 0o600, dir_fd=dir_fd)
    try:
        start = time.monotonic()
        deadline = start + timeout
        next_log = start + _WAIT_LOG_AFTER
        first = True  # the first wait record is also said on stderr (once)
        delay = 0.005
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as err:
                if err.errno == errno.ENOLCK:
                    raise OSError(
                        err.errno,
                        f"cannot lock {lock_path}: {err.strerror}: the file system holding it "
                        "has no flock (NFS mounted nolock?), which builds need to exclude each "
                        f"other; set {_CACHE_ENV} (or build_directory) to a local directory",
                    ) from None
                if not isinstance(err, BlockingIOError):
                    raise
                now = time.monotonic()
                if now >= deadline:
                    raise TimeoutError(
                        f"timed out after {timeout:g} s waiting for the build lock "
                        f"{lock_path} ({_holder(fd)} is building the same module; "
                        f"raise {_LOCK_TIMEOUT_ENV} to wait longer)"
                    ) from None
                if now >= next_log:
                    _log_wait(lock_path, fd, now - start, timeout, what if first else None, verbose)
                    first, next_log = False, now + _WAIT_LOG_EVERY
                time.sleep(delay)
                delay = min(delay * 2, 0.1)
        with contextlib.suppress(OSError):  # only for the log of others
            record = f"pid {os.getpid()} on {os.uname().nodename}\n".encode()
            os.ftruncate(fd, 0)
            os.pwrite(fd, record, 0)
        yield lock_path
    finally:
        os.close(fd)  # also releases the lock


def _holder(fd: int) -> str:
    """Who holds the lock, as its holder recorded it: "pid 123 on host"."""
    try:
        text = os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
    except OSError:
        text = ""
    return f"another process ({text})" if text.startswith("pid ") else "another process"


def _log_wait(
    lock_path: Path, fd: int, waited: float, timeout: float, what: str | None, verbose: bool
) -> None:
    """Log the wait (INFO); the first time (``what`` given), also say it on stderr."""
    from .. import _log  # a wait is slow anyway: importing logging is not
    from . import _progress

    holder = _holder(fd)
    _log.get_logger("tvm_ffi.cpp").info(
        "waiting for the build lock %s: %s is building the same module (waited %.0f s; "
        "timeout %g s)", lock_path, holder, waited, timeout,
    )  # fmt: skip
    if what is not None:
        _progress.waiting(holder, fd, what or "the same module", lock_path, verbose)


@contextlib.contextmanager
def parent_of(dir_fd: int, relpath: str, *, create: bool = True) -> Iterator[tuple[int, str]]:
    """``(descriptor of the directory holding relpath, its last component)``.

    Walks ``a/b/`` with ``O_NOFOLLOW`` from ``dir_fd``, making missing directories."""
    *dirs, name = relpath.split("/")
    fd = os.dup(dir_fd)
    try:
        for part in dirs:
            try:
                child = os.open(part, DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
                child = os.open(part, DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
        yield fd, name
    finally:
        os.close(fd)


def write_if_changed(dir_fd: int, directory: Path, relpath: str, data: bytes) -> bool:
    """Write ``data`` to ``relpath`` under ``dir_fd`` (``directory``, named in errors)
    unless it holds exactly that.

    Keeping the mtime of unchanged inputs is what lets ninja skip up-to-date steps.
    The write goes through a temp file + rename, so a killed process never leaves a
    half-written input that a later run would take as current. True if written.
    """
    with parent_of(dir_fd, relpath) as (fd, name):
        try:
            old = os.open(name, _FILE_FLAGS, dir_fd=fd)
        except FileNotFoundError:
            pass
        else:
            try:
                if os.fstat(old).st_size == len(data) and _read_all(old) == data:
                    return False
            finally:
                os.close(old)
        replace_at(fd, name, data, shown=str(directory / relpath))
    return True


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def clean_entry(dir_fd: int, keep: tuple[str, ...] = ("lock",)) -> None:
    """Remove everything in a cache entry but ``keep``: leftovers of a killed build.

    Only called with the entry's lock held and its library absent, so nothing in it
    can be in use or complete. Symbolic links are removed, never followed. A killed
    builder's ninja may still be removing its own files as it exits: what vanishes
    meanwhile is fine.
    """
    with os.scandir(dir_fd) as entries:
        names = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
    for name, is_dir in names:
        if name in keep:
            continue
        with contextlib.suppress(FileNotFoundError):
            if not is_dir:
                os.unlink(name, dir_fd=dir_fd)
                continue
            for _ in range(3):
                child = os.open(name, DIR_FLAGS, dir_fd=dir_fd)
                try:
                    clean_entry(child, keep=())
                finally:
                    os.close(child)
                try:
                    os.rmdir(name, dir_fd=dir_fd)
                    break
                except OSError as err:
                    if err.errno != errno.ENOTEMPTY:
                        raise


def publish(dir_fd: int, built: str, name: str, *, replace: bool) -> bool:
    """Put ninja's output ``built`` (relative to ``dir_fd``) in place as ``name``.

    The data reaches the disk (fsync of the file) before the name appears, and the name
    before we return (fsync of the directory), so a crash leaves the old state or the
    complete new one. Without ``replace`` an existing ``name`` is kept: a publish never
    replaces an entry that is already there. Returns False when nothing was changed.
    """
    with parent_of(dir_fd, built, create=False) as (src_dir, src_name):
        src = os.open(src_name, _FILE_FLAGS, dir_fd=src_dir)
        try:
            os.fsync(src)
            src_st = os.fstat(src)
        finally:
            os.close(src)
        with contextlib.suppress(FileNotFoundError):
            dst_st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            if (dst_st.st_dev, dst_st.st_ino) == (src_st.st_dev, src_st.st_ino):
                return False  # ninja relinked nothing: already published
            if not replace:
                return False
        if replace:
            tmp = f".{name}.{os.getpid()}.{_thread.get_ident()}.tmp"
            _link(src_dir, src_name, dir_fd, tmp)
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        else:
            try:
                _link(src_dir, src_name, dir_fd, name)
            except FileExistsError:
                return False
    os.fsync(dir_fd)
    return True


def _link(src_dir: int, src_name: str, dst_dir: int, dst_name: str) -> None:
    """Hard-link; FileExistsError if ``dst_name`` exists (it is never replaced)."""
    try:
        os.link(src_name, dst_name, src_dir_fd=src_dir, dst_dir_fd=dst_dir, follow_symlinks=False)
        return
    except OSError as err:
        if err.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK):
            raise
    # A file system without hard links: publish a copy instead, with the same guarantees
    # (only the lock holder publishes, so nobody creates dst_name between check and rename).
    src = os.open(src_name, _FILE_FLAGS, dir_fd=src_dir)
    try:
        data = _read_all(src)
    finally:
        os.close(src)
    tmp = f".{dst_name}.{os.getpid()}.{_thread.get_ident()}.copy"
    replace_at(dst_dir, tmp, data, shown=dst_name)
    try:
        os.stat(dst_name, dir_fd=dst_dir, follow_symlinks=False)
    except FileNotFoundError:
        os.rename(tmp, dst_name, src_dir_fd=dst_dir, dst_dir_fd=dst_dir)
        return
    os.unlink(tmp, dir_fd=dst_dir)
    raise FileExistsError(errno.EEXIST, "exists", dst_name)
