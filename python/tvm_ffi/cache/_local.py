"""The local cache's entries as ``list`` and ``prune`` see them (layout: tvm_ffi.cpp._cache).

An entry's age is the time since its library was last used: the later of its access
time (a load reads it; ``relatime`` mounts update it at most daily) and its modification
time (its build). ``prune`` removes an entry only under its build lock, never one a
process builds (the lock is held) or has loaded (its library is in a process's memory
map, ``/proc/<pid>/maps``), and takes the hit index's records of what it removed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import re
import shutil
import stat
import time

from ..cpp import _cache, _hit_index

__all__ = ["Entry", "entries", "parse_age", "parse_size", "prune"]

# Not entries: the tools' identities, the hit index, the statistics, the GPU record.
_NOT_ENTRIES = ("toolchain", "hits")
_KEY = re.compile(r"(.+)_([0-9a-f]{32})")
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SPANS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


@dataclasses.dataclass
class Entry:
    """One entry directory of the cache."""

    dirname: str  # <name>_<key>
    name: str
    key: str
    size: int  # bytes of its files
    used: float  # when its library was last used (see the module doc), seconds since epoch
    library: str | None  # the published library's file name; None: not published


def entries(root: str) -> list[Entry]:
    """The entries under ``root``, by name."""
    found = []
    for item in sorted(os.scandir(root), key=lambda item: item.name):
        if item.name in _NOT_ENTRIES or item.name.startswith("."):
            continue
        if not item.is_dir(follow_symlinks=False):
            continue
        match = _KEY.fullmatch(item.name)
        name, key = (match.group(1), match.group(2)) if match else (item.name, "")
        size, library, used = 0, None, item.stat(follow_symlinks=False).st_mtime
        for folder, _, names in os.walk(item.path):
            for file in names:
                with contextlib.suppress(OSError):
                    st = os.lstat(os.path.join(folder, file))
                    size += st.st_size
                    published = folder == item.path and file.endswith((".so", ".o"))
                    if published and stat.S_ISREG(st.st_mode):
                        library, used = file, max(st.st_atime, st.st_mtime)
        found.append(Entry(item.name, name, key, size, used, library))
    return found


def parse_size(text: str) -> int:
    """``2G``, ``500M``, ``64K``, ``1024`` (bytes; powers of 1024, an optional ``B``/``iB``)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", text, re.IGNORECASE)
    if not match:
        raise ValueError(f"--max-size must be a size like 2G, 500M or 1024 (got {text!r})")
    return int(float(match.group(1)) * _UNITS[match.group(2).upper()])


def parse_age(text: str) -> float:
    """``7d``, ``12h``, ``30m``, ``45s``, ``2w``: seconds."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", text)
    if not match:
        raise ValueError(f"--older-than must be a duration like 7d, 12h or 30m (got {text!r})")
    return float(match.group(1)) * _SPANS[match.group(2)]


def _in_use(root: str) -> dict[str, int]:
    """Entry directory -> the id of a process that has a file of it mapped."""
    prefix = root.rstrip("/") + "/"
    used: dict[str, int] = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:  # gone, or another user's
            continue
        for line in text.splitlines():
            at = line.find(prefix)
            if at >= 0:
                used.setdefault(line[at + len(prefix) :].split("/", 1)[0], int(pid))
    return used


def prune(
    root: str, root_fd: int, older_than: float | None, max_size: int | None
) -> tuple[list[Entry], list[tuple[Entry, str]]]:
    """Remove the entries last used more than ``older_than`` seconds ago, then the least
    recently used until the rest takes at most ``max_size`` bytes. (removed, [(kept, why)])."""
    now = time.time()
    listed = sorted(entries(root), key=lambda entry: entry.used)
    total = sum(entry.size for entry in listed)
    doomed = []
    for entry in listed:
        old = older_than is not None and now - entry.used > older_than
        big = max_size is not None and total > max_size
        if old or big:
            doomed.append(entry)
            total -= entry.size
    in_use = _in_use(root) if doomed else {}
    removed, kept = [], []
    for entry in doomed:
        if entry.dirname in in_use:
            kept.append((entry, f"in use by process {in_use[entry.dirname]}"))
        elif _remove(root, root_fd, entry.dirname):
            removed.append(entry)
        else:
            kept.append((entry, "locked by a build"))
    if removed:
        _forget(root_fd, {entry.dirname for entry in removed})
    return removed, kept


def _remove(root: str, root_fd: int, dirname: str) -> bool:
    """Remove entry ``dirname`` if no process holds its build lock; False if one does. Under
    the lock, the entry is first renamed away: no lookup sees half of it."""
    import fcntl

    try:
        dir_fd = os.open(dirname, _cache.DIR_FLAGS, dir_fd=root_fd)
    except FileNotFoundError:
        return True
    try:
        fd = os.open("lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                     dir_fd=dir_fd)  # fmt: skip
    finally:
        os.close(dir_fd)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            if err.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                return False
            raise
        doomed = f".pruned-{dirname}-{os.getpid()}"
        os.rename(dirname, doomed, src_dir_fd=root_fd, dst_dir_fd=root_fd)
    finally:
        os.close(fd)
    shutil.rmtree(os.path.join(root, doomed))  # never follows a link (fd-based on Linux)
    return True


def _forget(root_fd: int, removed: set[str]) -> None:
    """Remove the hit index's records of the ``removed`` entries (they would only miss)."""
    try:
        hits_fd = os.open("hits", _cache.DIR_FLAGS, dir_fd=root_fd)
    except OSError:
        return
    try:
        for name in os.listdir(hits_fd):
            with contextlib.suppress(OSError):
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=hits_fd)
                try:
                    first = os.read(fd, 4096).decode("utf-8", "replace").split("/", 1)[0]
                finally:
                    os.close(fd)
                if first in removed:
                    os.unlink(name, dir_fd=hits_fd)
    finally:
        os.close(hits_fd)


def stats(root: str) -> tuple[list[int], int]:
    """([local hits, remote hits, builds], processes) from the cache's statistics file."""
    totals, processes = [0, 0, 0], 0
    try:
        with open(
            os.path.join(root, _hit_index.STATS_FILE), encoding="ascii", errors="replace"
        ) as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        lines = []
    for line in lines:
        fields = line.split()
        if len(fields) == 3 and all(field.isdigit() for field in fields):
            totals = [a + int(b) for a, b in zip(totals, fields)]
            processes += 1
    return totals, processes
