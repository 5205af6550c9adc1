"""The build cache: where it lives, how entries are named, and who may build one.

Layout (``$TVM_FFI_CACHE_DIR``, default ``~/.cache/tvm-ffi``)::

    toolchain/<tool>-<hash>.json   compiler identities (see _toolchain.tool_identity)
    gpu_archs.json                 the visible GPUs' architectures (see _arch.detected_capabilities)
    <name>_<key>/                  one entry per content hash
        lock                       flock()ed while a process builds the entry
        build.ninja, sources, obj/, embed/
        <name>.so                  published last, atomically: its presence means "built"

An entry's key hashes everything that can change the library, so an entry is never
rebuilt in place: a process that finds ``<name>.so`` just loads it, without the lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path

__all__ = ["KeyHasher", "build_lock", "cache_root", "clean_entry", "write_if_changed"]

_LOCK_TIMEOUT_ENV = "TVM_FFI_BUILD_LOCK_TIMEOUT"
_DEFAULT_LOCK_TIMEOUT = 600.0


def cache_root() -> Path:
    """Return the cache root, creating it (mode 0700) if needed.

    Raises
    ------
    PermissionError
        The directory is owned by another user or writable by group/others: another
        user could then plant a library that this process would load and run.
    """
    configured = os.environ.get("TVM_FFI_CACHE_DIR")
    root = Path(configured) if configured else Path.home() / ".cache" / "tvm-ffi"
    try:
        st = os.stat(root)
    except FileNotFoundError:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.stat(root)
    check_private_dir(root, st)
    return root


def check_private_dir(path: Path, st: os.stat_result) -> None:
    """Refuse a directory that another user could write into."""
    if not stat.S_ISDIR(st.st_mode):
        raise NotADirectoryError(f"cache directory {path} is not a directory")
    uid = os.geteuid()
    if st.st_uid != uid:
        raise PermissionError(
            f"refusing cache directory {path}: owned by uid {st.st_uid}, not by you "
            f"(uid {uid}); set TVM_FFI_CACHE_DIR to a directory you own"
        )
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise PermissionError(
            f"refusing cache directory {path}: writable by group or others "
            f"(mode {stat.S_IMODE(st.st_mode):o}); run `chmod go-w {path}` or set "
            "TVM_FFI_CACHE_DIR to a private directory"
        )


class KeyHasher:
    """SHA-256 over labelled, length-prefixed fields, so no two inputs can collide by
    shifting bytes from one field into the next."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256()

    def add(self, label: str, value: str | bytes) -> None:
        data = value.encode() if isinstance(value, str) else bytes(value)
        self._hash.update(f"{label}:{len(data)}:".encode())
        self._hash.update(data)

    def hexdigest(self, length: int = 32) -> str:
        return self._hash.hexdigest()[:length]


def lock_timeout() -> float:
    """Seconds to wait for another process's build (``TVM_FFI_BUILD_LOCK_TIMEOUT``)."""
    text = os.environ.get(_LOCK_TIMEOUT_ENV, "").strip()
    if not text:
        return _DEFAULT_LOCK_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value < 0:
        raise ValueError(f"{_LOCK_TIMEOUT_ENV} must be a number of seconds >= 0 (got {text!r})")
    return value


@contextlib.contextmanager
def build_lock(directory: Path) -> Iterator[Path]:
    """Hold an exclusive flock on ``<directory>/lock`` for the duration of the block.

    flock belongs to the open file, so the kernel drops it when the holder exits or is
    killed: a crashed build never leaves the entry locked. We poll with LOCK_NB rather
    than block so the wait has a timeout and stays interruptible.
    """
    lock_path = directory / "lock"
    timeout = lock_timeout()
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        deadline = time.monotonic() + timeout
        delay = 0.005
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise TimeoutError(
                        f"timed out after {timeout:g} s waiting for the build lock "
                        f"{lock_path} (another process is building the same module; "
                        f"raise {_LOCK_TIMEOUT_ENV} to wait longer)"
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.1)
        yield lock_path
    finally:
        os.close(fd)  # also releases the lock


def write_if_changed(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` unless it already holds exactly that; True if written.

    Keeping the mtime of unchanged inputs is what lets ninja skip up-to-date steps.
    The write goes through a temp file + rename, so a killed process never leaves a
    half-written input that a later run would take as current.
    """
    try:
        if path.stat().st_size == len(data) and path.read_bytes() == data:
            return False
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_atomically(path, data)
    return True


def replace_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temp file and a rename.

    Readers see the whole old file or the whole new one, never a part; the temp name is
    per process and thread, so concurrent writers of the same file never share one.
    """
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def clean_entry(directory: Path, keep: tuple[str, ...] = ("lock",)) -> None:
    """Remove everything in a cache entry but ``keep``: leftovers of a killed build.

    Only called with the entry's lock held and its library absent, so nothing in it
    can be in use or complete.
    """
    for child in directory.iterdir():
        if child.name in keep:
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
