"""``FileLock``: an advisory, exclusive, inter-process lock on a file (apache-tvm-ffi's API).

The lock is an ``flock`` on an open descriptor, so the kernel drops it when the holder
exits or is killed: a crashed holder never leaves the file locked. The file itself is
created if missing and never deleted (deleting a lock file lets two processes lock two
different files of the same name).
"""

from __future__ import annotations

import errno
import fcntl
import math
import os
import time
from types import TracebackType

__all__ = ["FileLock"]


class FileLock:
    """``with FileLock(path): ...`` holds the lock for the block (waiting as long as it
    takes); :meth:`acquire` tries once, :meth:`blocking_acquire` waits up to a timeout,
    :meth:`release` lets go. Not reentrant: one holder per object."""

    def __init__(self, lock_file_path: str | os.PathLike[str]) -> None:
        self.lock_file_path = os.fspath(lock_file_path)
        self._file_descriptor: int | None = None

    @property
    def is_locked(self) -> bool:
        """True while this object holds the lock."""
        return self._file_descriptor is not None

    def acquire(self) -> bool:
        """Take the lock if no one holds it; True if taken, False if another holder has it.

        Raises OSError (naming the file) when the lock file cannot be opened, and
        RuntimeError when this object already holds the lock.
        """
        if self._file_descriptor is not None:
            raise RuntimeError(f"FileLock({self.lock_file_path!r}) is already held by this object")
        fd = _open_lock_file(self.lock_file_path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        except BaseException:
            os.close(fd)
            raise
        self._file_descriptor = fd
        return True

    def blocking_acquire(self, timeout: float | None = None, poll_interval: float = 0.1) -> bool:
        """Wait for the lock, trying every ``poll_interval`` seconds; return True once held.

        ``timeout`` (seconds, None: no limit) bounds the wait: TimeoutError after it.
        """
        if timeout is not None and not (isinstance(timeout, (int, float)) and timeout >= 0):
            raise ValueError(f"timeout must be None or a number of seconds >= 0 (got {timeout!r})")
        if not (isinstance(poll_interval, (int, float)) and 0 < poll_interval < math.inf):
            raise ValueError(
                f"poll_interval must be a number of seconds > 0 (got {poll_interval!r})"
            )
        deadline = None if timeout is None or math.isinf(timeout) else time.monotonic() + timeout
        while not self.acquire():
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(
                        f"could not lock {self.lock_file_path!r} within {timeout:g} s "
                        "(another process holds it)"
                    )
                time.sleep(min(poll_interval, left))
            else:
                time.sleep(poll_interval)
        return True

    def release(self) -> None:
        """Let go of the lock (nothing happens if this object does not hold it)."""
        fd, self._file_descriptor = self._file_descriptor, None
        if fd is not None:
            os.close(fd)  # closing the descriptor drops the flock

    def __enter__(self) -> FileLock:
        self.blocking_acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def __repr__(self) -> str:
        state = "locked" if self.is_locked else "unlocked"
        return f"<FileLock {self.lock_file_path!r} {state}>"


def _open_lock_file(path: str) -> int:
    """Open (creating) the lock file, following a symbolic link only if it is ours or
    root's: another user's link in a shared directory (``/tmp``) would have us create or
    lock any file it names, with our rights."""
    flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC
    try:
        return os.open(path, flags | os.O_NOFOLLOW, 0o666)
    except OSError as err:
        if err.errno != errno.ELOOP:
            raise
    owner = os.lstat(path).st_uid
    if owner not in (0, os.geteuid()):
        raise PermissionError(
            errno.EPERM,
            f"refusing lock file {path!r}: it is a symbolic link owned by uid {owner} (neither "
            "you nor root), who could point it at any file; remove it or choose another path",
        )
    return os.open(path, flags, 0o666)
