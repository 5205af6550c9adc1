"""The build cache's fast front: an index from a request to its entry, so that a hit needs
no toolchain discovery (see docs/dev/jit_cache.md).

A full key (see ``_cached_build._key``) needs the compiler's path and identity, the CUDA
toolkit, the target architectures and the rendered build file: fast once a process has
them, but a fresh process that only loads cached modules would find tools it never runs.
So every build or full lookup leaves a record under ``<cache root>/hits/``, named by a
hash of the request alone: the spec (sources, file contents, flags, images), the package
and recipe, and the environment variables the discovery reads. The record names the
entry and what the request's key was made of beyond that: the tools' paths (as found
and resolved) with their size and mtime, and the fingerprint of the package's headers
and prebuilt files. A lookup that finds the record, sees the same tools and package
files, and a sound library, loads it; anything else goes the full way (which writes a
new record).

What the index cannot see: a compiler that appears earlier on an unchanged ``PATH`` (the
tools it names are checked, not searched again). Records are written atomically under
the private cache root and read without following symbolic links, like the entries.
"""

from __future__ import annotations

import _thread  # get_ident for temp names: threading itself is a costly import
import contextlib
import errno
import os
import stat
import sys

import tvm_ffi

from .. import config
from .._elf import file_kind
from .._elf import library_problem as elf_problem
from .._elf import object_problem as elf_object_problem
from . import _cache

# A fresh process's hit does not import pathlib (with re, urllib, ...): paths are str here.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "ABI",
    "RECIPE",
    "feed_spec",
    "file_stamp",
    "find",
    "include_dir",
    "library_problem",
    "linked_files",
    "lookup",
    "package_fingerprint",
    "published_library",
    "record",
    "request_key",
]

# Variables that decide which tools, toolkit and archs a build finds (see _toolchain, _arch).
_DISCOVERY_ENV = (
    "CXX", "PATH", "CUDA_HOME", "CUDA_PATH", "TVM_FFI_CUDA_ARCH_LIST", "LD", "OBJCOPY",
    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "TVM_FFI_COMPILER_LAUNCHER", "CONDA_PREFIX",
)  # fmt: skip
_DIR = "hits"
_VERBOSE_ENV = "TVM_FFI_BUILD_VERBOSE"

#: The per-cache file of hit statistics: a line "<local hits> <remote hits> <builds>" per
#: process that used the cache (see count, and ``python -m tvm_ffi.cache stats``).
STATS_FILE = "stats.log"
LOCAL, REMOTE, BUILT = range(3)
# Cache root -> this process's counts, appended to the root's STATS_FILE at exit: a hit
# pays a list increment, never a file write.
_events: dict[str, list[int]] = {}

#: Bump when the build recipe changes in a way that must invalidate cached libraries.
RECIPE = "4"
#: The C ABI the JIT's modules are built for and linked against (the package's libtvm_ffi.so):
#: apache-tvm-ffi's of the 0.1 series. Named in every key (request, module, remote entry), so
#: that no module built for another one (ABI version 3, before this package took tvm-ffi's)
#: is ever found for a request, even where the package's files did not change.
ABI = "tvm-ffi-c-abi-0.1"
_memo: dict[str, str] = {}


def count(root: str, event: int) -> None:
    """Count a module found here (LOCAL), fetched from a remote (REMOTE) or BUILT."""
    counts = _events.get(root)
    if counts is None:
        if not _events:
            import atexit

            atexit.register(_flush_counts)
            os.register_at_fork(after_in_child=_events.clear)  # the parent reports its own
        counts = _events[root] = [0, 0, 0]
    counts[event] += 1


def _flush_counts() -> None:
    for root, counts in _events.items():
        line = " ".join(map(str, counts)) + "\n"
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        with contextlib.suppress(OSError):  # a cache gone or read-only: counts are a hint
            fd = os.open(os.path.join(root, STATS_FILE), flags, 0o600)
            try:
                os.write(fd, line.encode())  # one write: O_APPEND keeps lines whole
            finally:
                os.close(fd)
    _events.clear()


def verbose_requested(verbose: bool) -> bool:
    return verbose or os.environ.get(_VERBOSE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def find(spec, build_directory: object, verbose: bool) -> str | None:
    """The cached library of ``spec`` when the index knows it (see the module doc), else
    None. Checks the lock timeout variable as every call does, hit or not."""
    _cache.lock_timeout()
    if build_directory is not None:
        return None
    request = request_key(spec, RECIPE)
    # Kept with the spec: a miss records its entry under this request after the build,
    # without hashing the request again (see _cached_build._built).
    spec.request = request
    found = None if request is None else lookup(request, verbose_requested(verbose))
    if found is not None and "TVM_FFI_RECORD" in os.environ:  # see _record
        from . import _record

        _record.note(spec, found)
    # Without logging imported no handler can show the record (see _log.logging_enabled):
    # then _log is not imported either.
    if found is not None and "logging" in sys.modules:
        from tvm_ffi import _log

        if _log.logging_enabled("tvm_ffi.cpp", 10):  # logging.DEBUG, without importing it
            _log.get_logger("tvm_ffi.cpp").debug("%s %r: cached %s", spec.api, spec.name, found)
    return found


def include_dir() -> Path:
    """The package's include directory (once per process)."""
    from pathlib import Path

    return Path(_include_str())


def _include_str() -> str:
    found = _memo.get("include_dir")
    if found is None:
        found = _memo["include_dir"] = config.get_include_dir()
    return found


def package_fingerprint(include: str | os.PathLike[str]) -> str:
    """Size and mtime of every package header, and size, mtime and inode of every file
    the package build compiled (``tvm_ffi/lib/``: the core library, and what the JIT
    takes instead of compiling it, the launcher object and the precompiled prelude; see
    _prebuilt), once per process. The package version covers released files; this also
    catches edits in a development checkout, and a compiled file replaced with the
    headers unchanged (a rebuilt package, a copy that kept the mtime: a new inode). Not
    the ctime: an installer that hard-links one file into several environments changes
    it, and every cache key with it."""
    memo_key = f"package:{include}"
    found = _memo.get(memo_key)
    if found is None:
        lines: list[str] = []
        _stamp_tree(os.path.join(os.path.dirname(tvm_ffi.__file__), "lib"), lines, inode=True)
        _stamp_tree(os.path.join(include, "tvm", "ffi"), lines, inode=False)
        found = _memo[memo_key] = _cache.sha256("".join(lines).encode()).hexdigest()
    return found


def _stamp_tree(top: str, lines: list[str], *, inode: bool) -> None:
    """A line per file under ``top`` (none if it is missing): path, size, mtime (and
    inode). scandir, one line per file, one hash update: on a fresh process's cache hit
    this walk is a good part of the lookup. Directory links are not descended (as os.walk
    does); a link's target is what is stamped."""
    pending = [top]
    while pending:
        try:
            with os.scandir(pending.pop()) as scan:
                entries = sorted(scan, key=lambda entry: entry.name)
        except FileNotFoundError:  # an install without compiled files
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                pending.append(entry.path)
            else:
                st = entry.stat()
                line = f"{entry.path}:{st.st_size}:{st.st_mtime_ns}"
                lines.append(f"{line}:{st.st_ino}\n" if inode else f"{line}\n")


def _feed(hasher: _cache.KeyHasher, label: str, value: object, portable=None) -> None:
    if isinstance(value, (bytes, bytearray, memoryview)):
        hasher.add(label, _cache.digest(bytes(value)))
    elif isinstance(value, dict):
        hasher.add(label, str(len(value)))
        for key in sorted(value):
            _feed(hasher, f"{label}[{key}]", value[key], portable)
    elif isinstance(value, (list, tuple)):
        hasher.add(label, str(len(value)))
        for index, item in enumerate(value):
            _feed(hasher, f"{label}[{index}]", item, portable)
    elif portable is not None and isinstance(value, (str, os.PathLike)):
        hasher.add(label, f"{type(value).__name__}:{portable(os.fspath(value))}")
    else:
        hasher.add(label, f"{type(value).__name__}:{value}")


def request_key(spec, recipe: str = RECIPE) -> str | None:
    """The hash of the request ``spec`` alone (no tool looked up); None when the index
    cannot answer for it (CUDA sources for the visible GPUs, with no fingerprint of them).
    What this install and process add to :func:`feed_spec` (the package's path, the
    Python, the variables the tool search reads) keeps it local: it names a record of
    this cache, never a module (that is ``_keys.module_key``'s)."""
    hasher = _cache.KeyHasher()
    hasher.add("recipe", recipe)
    hasher.add("abi", ABI)
    hasher.add("version", tvm_ffi.__version__)
    hasher.add("package", os.path.dirname(tvm_ffi.__file__))
    hasher.add("python", sys.executable)
    for name in _DISCOVERY_ENV:
        hasher.add(f"env:{name}", repr(os.environ.get(name)))
    archs = os.environ.get("TVM_FFI_CUDA_ARCH_LIST", "")
    # Unset or "native": the build is for the visible GPUs, so they are part of the request.
    if spec.has_cuda_sources and (not archs.strip() or "native" in archs):
        from tvm_ffi import _cuda_driver

        gpus = _cuda_driver.visible_gpus_fingerprint()
        if gpus is None:
            return None
        hasher.add("gpus", gpus)
    feed_spec(hasher, spec)
    for path in linked_files(spec.ldflags):
        hasher.add("linked", file_stamp(path))
    return hasher.hexdigest()


def feed_spec(hasher: _cache.KeyHasher, spec, portable=None) -> None:
    """Hash what ``spec`` asks for, the one way both keys take it in: the request's (above)
    and the module's (``_keys.module_key``). Every field that can change the library (not
    ``api`` and ``docs``), and the bytes of each source file. ``portable``: str -> str,
    applied to every text and path of the spec (the module's key names the install and
    cache folders, never their paths)."""
    for field in ("name", *sorted(spec._DEFAULTS)):
        if field == "docs":  # neither docs nor api changes the library
            continue
        if field == "name" and portable is not None:
            # The module's key: the file stem it gives is in build.ninja, and modules of
            # one wrapper under other names share its objects entry.
            continue
        paths = field not in ("name", "inline_cpp", "inline_cuda")  # source text is as given
        _feed(hasher, field, getattr(spec, field), portable if paths else None)
    if not spec.keyed_files:
        for path in spec.files:
            hasher.add("file", path.read_bytes())


def linked_files(ldflags: list[str]) -> list[str]:
    """The ``extra_ldflags`` that name a file (``/x/libfoo.a``, ``libbar.so``): the link
    reads them, so a rebuilt one must change the key. Their stamp (path, size, mtime) is
    keyed, not their content: a shared library named there may be large. Libraries found
    through ``-L``/``-l`` are not looked up (see the JIT guide's cache key)."""
    return [flag for flag in ldflags if not flag.startswith("-") and os.path.isfile(flag)]


def file_stamp(path: str) -> str:
    """``path<TAB>resolved path<TAB>size<TAB>mtime_ns``: what changes when the file is
    replaced, edited or reached through a link switched elsewhere (a CUDA_HOME or an
    alternatives link: the path as given stays, the resolved one moves)."""
    real = os.path.realpath(path)
    st = os.stat(real)
    return f"{path}\t{real}\t{st.st_size}\t{st.st_mtime_ns}"


def record(root_fd: int, root: Path, request: str, entry: Path, tools: list[str]) -> None:
    """Remember that ``request`` is ``entry``'s library (a path under ``root``, open as
    ``root_fd``), built with ``tools`` and the current package files (see
    :func:`package_fingerprint`).

    No fsync: a record lost or emptied by a crash only sends the next lookup the full way.
    A record that cannot be written (a full disk) is skipped the same way."""
    lines = [
        str(entry.relative_to(root)),
        package_fingerprint(_include_str()),
        *(file_stamp(tool) for tool in tools),
    ]
    data = ("\n".join(lines) + "\n").encode()
    with contextlib.ExitStack() as stack:
        try:
            # Making hits/ fails on a read-only cache (EROFS) as a write would: skipped alike.
            dir_fd, name = stack.enter_context(_cache.parent_of(root_fd, f"{_DIR}/{request}"))
        except OSError:
            return
        tmp = f".{name}.{os.getpid()}.{_thread.get_ident()}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(tmp, flags, 0o600, dir_fd=dir_fd)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)


# Out of descriptors or memory: says nothing about the file being opened.
_SHORTAGES = (errno.EMFILE, errno.ENFILE, errno.ENOMEM)


def library_problem(dir_fd: int, relpath: str) -> str | None:
    """Why the library at ``relpath`` under the directory cannot be loaded (a ``.o``: why
    a link cannot read it, see :func:`tvm_ffi._elf.object_problem`); None if it can, ""
    when there is none. No symbolic link on the way is followed. OSError when the process
    is out of descriptors or memory (that is no reason to rebuild)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        with _cache.parent_of(dir_fd, relpath, create=False) as (parent, name):
            fd = os.open(name, flags, dir_fd=parent)
    except FileNotFoundError:
        return ""
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.ENOTDIR):  # O_NOFOLLOW met a symbolic link
            return "a symbolic link, never followed"
        if err.errno in _SHORTAGES:  # the process's fault, not the library's: no rebuild
            raise OSError(
                err.errno,
                f"cannot check the cached library {relpath}: {err.strerror} (a limit of this "
                "process or system, e.g. ulimit -n, not damage to the library)",
            ) from None
        return f"cannot open it: {err.strerror}"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return f"not a regular file ({file_kind(st.st_mode)})"
        if relpath.endswith(".o"):  # a relocatable object (output="x.o", an entry the link
            return elf_object_problem(fd, st)  # reads): never loaded, but linked
        return elf_problem(fd, st)
    finally:
        os.close(fd)


def lookup(request: str, verbose: bool) -> str | None:
    """The library recorded for ``request`` if its tools and package files are unchanged
    and the library is sound; else None (then the caller builds or looks up the full way)."""
    root, root_fd = _cache.open_cache_root_str()
    try:
        try:
            fd = os.open(
                f"{_DIR}/{request}", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=root_fd
            )
        except OSError:
            return None
        try:
            text = os.read(fd, 1 << 16).decode("utf-8", "replace")
        finally:
            os.close(fd)
        relpath, headers, *tools = text.splitlines()
        if ".." in relpath.split("/") or relpath.startswith("/"):
            return None
        if headers != package_fingerprint(_include_str()):
            return None
        for stamp in tools:
            try:
                if file_stamp(stamp.split("\t", 1)[0]) != stamp:
                    return None
            except OSError:
                return None
        found = published_library(root_fd, root, relpath, verbose)
        if found is not None:
            count(root, LOCAL)
        return found
    except ValueError:  # a record of another shape: not ours to trust
        return None
    finally:
        os.close(root_fd)


def published_library(root_fd: int, root: str, relpath: str, verbose: bool) -> str | None:
    """``root/relpath`` if the library published there is sound, else None: where both
    lookups end, the index's (a recorded entry) and the full key's (the computed entry)."""
    if library_problem(root_fd, relpath) is not None:
        return None
    found = os.path.join(root, relpath)
    if verbose:
        sys.stderr.write(f"tvm_ffi.cpp: using cached {found}\n")
    return found
