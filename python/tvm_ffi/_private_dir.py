"""Open a directory that only this user (or root) can change, and keep it open.

A JIT library is code this process will run, so the directory it is built and loaded in
must be one no other user can write, and no other user may be able to swap it, or any
directory above it, for one of their own. :func:`open_private_dir` resolves the path
once (following only links that are ours or root's, see :func:`_resolve`), then walks
it from ``/`` one component at a time with ``O_NOFOLLOW``, checking each directory as it
holds it open:

- every directory above the target is owned by root or by us, and is writable by group
  or others only when it is sticky (``/tmp``), where nobody can rename what we own;
- the target is owned by us and writable by nobody else.

What stays true after the check is what makes it last: no other user can rename or
replace any directory on that path. Everything inside is then done relative to the
returned descriptor, never by path, so a symbolic link appearing there is not followed.
"""

from __future__ import annotations

import _thread  # get_ident for temp names: threading itself is a costly import
import contextlib
import errno
import os
import stat

from ._elf import file_kind

# A cache hit imports this module: pathlib is named for checkers only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "DIR_FLAGS",
    "PrivateDirError",
    "open_private_dir",
    "replace_at",
    "replace_atomically",
]

# O_NOFOLLOW: a symbolic link where a directory should be fails the open (ELOOP/ENOTDIR).
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class PrivateDirError(PermissionError):
    """A directory that other users could write, or a path that changed under us."""


def _check_ancestor(label: str, path: str, directory: str, st: os.stat_result, hint: str) -> None:
    # Whoever owns a directory above ours, or can write into it, can put their own
    # directory where ours was between two of our steps.
    uid = os.geteuid()
    if st.st_uid not in (0, uid):
        raise PrivateDirError(
            f"refusing {label} {path}: {directory} above it is owned by uid {st.st_uid} "
            f"(neither you nor root), who could swap what lies under it; {hint}"
        )
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
        raise PrivateDirError(
            f"refusing {label} {path}: {directory} above it is writable by group or others "
            f"(mode {stat.S_IMODE(st.st_mode):o}), who could swap what lies under it; {hint}"
        )


def _check_target(label: str, path: str, st: os.stat_result, hint: str, shared_hint: str) -> None:
    uid = os.geteuid()
    if st.st_uid != uid:
        raise PrivateDirError(
            f"refusing {label} {path}: owned by uid {st.st_uid}, not by you (uid {uid}); {hint}"
        )
    mode = stat.S_IMODE(st.st_mode)
    if mode & stat.S_ISVTX and mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise PrivateDirError(
            f"refusing {label} {path}: a shared directory (mode {mode:o}) where other users "
            f"can create files; {shared_hint}"
        )
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise PrivateDirError(
            f"refusing {label} {path}: writable by group or others (mode {mode:o}); {shared_hint}"
        )


def open_private_dir(
    path: str | os.PathLike,
    *,
    label: str,
    mode: int,
    hint: str,
    shared_hint: str,
) -> tuple[str, int]:
    """Resolve ``path``, check it and every directory above it, create what is missing.

    Returns ``(resolved path, descriptor)``; the caller closes the descriptor. Missing
    directories above the target are made with mode 0755 and the target with ``mode``
    (the umask can only take permissions away).

    ``label`` names the directory in messages ("cache directory", "build_directory");
    ``hint`` says what to do about a directory owned by someone else, ``shared_hint``
    about one that others can write.

    Raises
    ------
    PrivateDirError
        (a PermissionError) the directory, or one above it, can be changed by another user.
    NotADirectoryError
        a component of the path is a file.
    OSError
        the directory cannot be created or opened (the message names it).
    """
    given = os.fspath(path)
    memo_key = (given, os.getcwd() if not os.path.isabs(given) else "", label, os.geteuid())
    known = _verified.get(memo_key)
    if known is not None:
        fd = _reopen(known, label, hint, shared_hint)
        if fd is not None:
            return known[0], fd
    resolved = _resolve(os.path.abspath(given), label, hint)
    shown = resolved if resolved == os.path.abspath(given) else f"{resolved} (reached from {given})"
    names = [part for part in resolved.split("/") if part]
    fd = os.open("/", DIR_FLAGS)
    current = "/"
    try:
        for index, name in enumerate(names):
            _check_ancestor(label, shown, current, os.fstat(fd), hint)
            child = os.path.join(current, name)
            last = index == len(names) - 1
            try:
                next_fd = _open_or_make(fd, name, mode if last else 0o755)
            except NotADirectoryError:
                kind = _kind_at(fd, name)
                if kind == "a symbolic link":  # realpath resolved them all: it is new
                    raise PrivateDirError(
                        f"refusing {label} {shown}: {child} became a symbolic link while it "
                        "was being checked"
                    ) from None
                what = "it" if last else child
                raise NotADirectoryError(
                    f"{label} {shown} is not a directory ({what} is {kind})"
                ) from None
            except OSError as err:
                raise type(err)(f"cannot use {label} {shown}: {child}: {err.strerror}") from None
            os.close(fd)
            fd, current = next_fd, child
        st = os.fstat(fd)
        _check_target(label, shown, st, hint, shared_hint)
    except BaseException:
        os.close(fd)
        raise
    _verified[memo_key] = (resolved, st.st_dev, st.st_ino)
    return resolved, fd


# Linux's own limit on links followed in one lookup (ELOOP beyond it).
_MAX_LINKS = 40


def _resolve(absolute: str, label: str, hint: str) -> str:
    """``os.path.realpath``, except that it follows only links that no other user can
    change: each link is owned by us or root, and each directory looked in on the way
    passes :func:`_check_ancestor`. A link another user planted in a sticky directory
    (``/tmp``) may point at one of our own private directories, which the walk of the
    resolved path alone would accept.
    """
    pending = [name for name in reversed(absolute.split("/")) if name]
    parts: list[str] = []
    followed = 0
    exists = True  # below a missing component the rest is taken as written, like realpath
    while pending:
        name = pending.pop()
        if name == ".":
            continue
        if name == "..":
            if parts:
                parts.pop()
            continue
        current = "/" + "/".join(parts)
        link = os.path.join(current, name)
        st = None
        if exists:
            try:
                parent = os.stat(current)
                st = os.lstat(link)
            except OSError:
                exists = False  # missing or unreadable: the walk that follows says which
            else:
                _check_ancestor(label, absolute, current, parent, hint)
        if st is None or not stat.S_ISLNK(st.st_mode):
            parts.append(name)
            continue
        if st.st_uid not in (0, os.geteuid()):
            raise PrivateDirError(
                f"refusing {label} {absolute}: {link} is a symbolic link owned by uid "
                f"{st.st_uid} (neither you nor root), who could point it anywhere, even at "
                f"a directory of yours; {hint}"
            )
        followed += 1
        if followed > _MAX_LINKS:
            raise OSError(errno.ELOOP, f"cannot use {label} {absolute}: too many symbolic links")
        target = os.readlink(link)
        if target.startswith("/"):
            parts = []
        pending.extend(name for name in reversed(target.split("/")) if name)
    return "/" + "/".join(parts)


# (path as given, cwd for a relative one, label, euid) -> (resolved, st_dev, st_ino) of a
# directory checked in full. Only root or we can change a directory that passed, or any
# directory above it, so a later call just reopens it and checks it is the same one.
_verified: dict[tuple[str, str, str, int], tuple[str, int, int]] = {}


def _reopen(known: tuple[str, int, int], label: str, hint: str, shared_hint: str) -> int | None:
    resolved, dev, ino = known
    try:
        fd = os.open(resolved, DIR_FLAGS)
    except OSError:
        return None  # gone or replaced: the full walk says why
    st = os.fstat(fd)
    if (st.st_dev, st.st_ino) != (dev, ino):
        os.close(fd)
        return None
    try:
        _check_target(label, resolved, st, hint, shared_hint)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_or_make(parent_fd: int, name: str, mode: int) -> int:
    for _ in range(3):  # a concurrent rmdir between our mkdir and open: try again
        try:
            return _open_dir(parent_fd, name)
        except FileNotFoundError:
            pass
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, mode, dir_fd=parent_fd)
    return _open_dir(parent_fd, name)


def _open_dir(parent_fd: int, name: str) -> int:
    try:
        return os.open(name, DIR_FLAGS, dir_fd=parent_fd)
    except OSError as err:
        # Linux says ELOOP for a symbolic link under O_NOFOLLOW, ENOTDIR for a file.
        if err.errno in (errno.ELOOP, errno.ENOTDIR):
            raise NotADirectoryError(err.errno, err.strerror) from None
        raise


def _kind_at(parent_fd: int, name: str) -> str:
    try:
        return file_kind(os.stat(name, dir_fd=parent_fd, follow_symlinks=False).st_mode)
    except OSError:
        return "not a directory"


def replace_at(dir_fd: int, name: str, data: bytes, *, shown: str) -> None:
    """Write ``data`` to ``name`` in the directory ``dir_fd`` through a temp file, fsync
    and a rename; ``shown`` names the file in an error."""
    # Per process and thread: concurrent writers of the same file never share a temp name.
    tmp = f"{name}.{os.getpid()}.{_thread.get_ident()}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(tmp, flags, 0o644, dir_fd=dir_fd)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException as err:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        if isinstance(err, OSError) and err.filename is None:
            # os.write names no file: a full disk would otherwise say only "[Errno 28]".
            raise type(err)(err.errno, err.strerror, shown) from None
        raise


def replace_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` (a file under the checked cache root) through a temp
    file, fsync and a rename: readers see the whole old file or the whole new one."""
    fd = os.open(path.parent, DIR_FLAGS)
    try:
        replace_at(fd, path.name, data, shown=str(path))
    finally:
        os.close(fd)
