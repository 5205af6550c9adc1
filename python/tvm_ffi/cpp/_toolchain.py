"""Find the tools a JIT build runs: the C++ compiler (and its launcher, such as ccache),
ninja, and (through ``tvm_ffi._cuda_toolkit``) CUDA.

Everything is looked up lazily, on the first build that needs it, and cached per
process keyed by the environment variables it depends on (so a test or a user who
changes ``CUDA_HOME`` or ``CXX`` sees the change). A compiler's identity (its resolved
path and ``--version`` text, part of every cache key) is also cached on disk, keyed by
the binary's (path, size, mtime), so a process that only loads cached modules never
spawns a compiler.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from .. import _cuda_toolkit
from .._private_dir import replace_atomically

__all__ = [
    "Linker",
    "fall_back",
    "file_sha256",
    "find_cuda_home",
    "find_cuda_tool",
    "find_cxx",
    "find_launcher",
    "find_linker",
    "find_ninja",
    "launcher_handles_nvcc",
    "may_fall_back",
    "tool_identity",
]


def find_cuda_home() -> Path:
    """Return the root of the CUDA toolkit that has nvcc (see :mod:`tvm_ffi._cuda_toolkit`
    for the search: ``CUDA_HOME``, ``CUDA_PATH``, ``nvcc`` on ``PATH``, cuda-pathfinder,
    ``/usr/local/cuda``...).

    Raises
    ------
    RuntimeError
        Nothing was found (the message lists every place tried), or ``CUDA_HOME`` /
        ``CUDA_PATH`` is set to something that is not a toolkit.
    """
    install = _cuda_toolkit.find_cuda(nvcc=True, cudart=False)
    assert install.nvcc is not None
    return install.nvcc.parent.parent


def find_cuda_tool(name: str) -> Path:
    """Return the CUDA tool ``name`` (``nvcc``, ``fatbinary``...) of the toolkit that has
    nvcc; RuntimeError if absent."""
    return _cuda_toolkit.find_cuda_binary(name)


def _split_cxx(env_cxx: str | None) -> tuple[list[str], str]:
    """``CXX`` as (launcher words, compiler): ``"ccache g++"`` -> (["ccache"], "g++")."""
    import shlex

    try:
        words = shlex.split(env_cxx or "")
    except ValueError as err:
        raise RuntimeError(f"CXX={env_cxx!r} cannot be split like a shell would: {err}") from None
    if not words:
        return [], "c++"
    flag = next((word for word in words if word.startswith("-")), None)
    if flag is not None:
        # Flags here would also reach the link, unlike extra_cflags; keep one place for them.
        raise RuntimeError(
            f"CXX={env_cxx!r} holds the flag {flag!r}; CXX names a compiler, optionally "
            "after a launcher (CXX='ccache g++'): pass flags in extra_cflags/extra_ldflags"
        )
    return words[:-1], words[-1]


@functools.cache
def _find_cxx(env_cxx: str | None, search_path: str | None) -> Path:
    wanted = _split_cxx(env_cxx)[1]
    found = shutil.which(wanted, path=search_path)
    if not found:
        origin = f"CXX={env_cxx}" if env_cxx else "'c++' on PATH"
        raise RuntimeError(f"C++ compiler not found ({origin}); install one or set CXX")
    return Path(found)


def find_cxx() -> Path:
    """Return the C++ compiler: ``$CXX`` (a name on PATH or a path, after an optional
    launcher such as ``ccache``), else ``c++``."""
    return _find_cxx(os.environ.get("CXX"), os.environ.get("PATH"))


_LAUNCHER_ENV = "TVM_FFI_COMPILER_LAUNCHER"
# Launchers known to cache nvcc's compiles too; any other wraps the C++ compiles only.
_NVCC_LAUNCHERS = ("ccache", "sccache")


@functools.cache
def _find_launcher(
    env_launcher: str | None, env_cxx: str | None, search_path: str | None
) -> tuple[str, ...]:
    import shlex

    if env_launcher is not None:
        origin = f"{_LAUNCHER_ENV}={env_launcher!r}"
        try:
            words = shlex.split(env_launcher)
        except ValueError as err:
            raise RuntimeError(f"{origin} cannot be split like a shell would: {err}") from None
    else:
        origin = f"CXX={env_cxx!r}"
        words = _split_cxx(env_cxx)[0]
    if not words:
        return ()
    found = shutil.which(words[0], path=search_path)
    if not found:
        raise RuntimeError(
            f"compiler launcher {words[0]!r} not found (from {origin}); install it, or "
            f"remove it from {origin.split('=', 1)[0]}"
        )
    return (found, *words[1:])


def find_launcher() -> list[str]:
    """The compiler launcher (``ccache``, ``sccache``, ...) and its arguments, or [].

    ``TVM_FFI_COMPILER_LAUNCHER`` if set (empty: none), else the words before the
    compiler in ``CXX``. The first word is resolved on ``PATH``.

    Raises
    ------
    RuntimeError
        The launcher is not found; the message names it and where it came from.
    """
    env = os.environ
    return list(_find_launcher(env.get(_LAUNCHER_ENV), env.get("CXX"), env.get("PATH")))


_LINKER_ENV = "TVM_FFI_LINKER"


@dataclasses.dataclass(frozen=True)
class Linker:
    """The linker a link passes as ``-fuse-ld=<name>`` (None stands for the compiler's
    default, GNU ld)."""

    name: str  # mold, lld or gold
    path: str  # the binary found on PATH: its identity keys the link
    automatic: bool  # the package's choice, not TVM_FFI_LINKER's: it may fall back


@functools.cache
def _chosen_linker(env_linker: str, search_path: str | None) -> Linker | None:
    from ._prebuilt import LINKERS

    wanted = env_linker.strip()
    if wanted in ("", "bfd", "default"):
        return None
    binaries = dict(LINKERS)
    if wanted not in binaries:
        raise RuntimeError(
            f"{_LINKER_ENV}={env_linker!r} is not a linker this package knows: use one of "
            f"{', '.join(binaries)}, or bfd (the compiler's default)"
        )
    found = shutil.which(binaries[wanted], path=search_path)
    if not found:
        raise RuntimeError(f"{_LINKER_ENV}={env_linker!r}: {binaries[wanted]} not found on PATH")
    return Linker(wanted, found, automatic=False)


# The automatic linkers that failed in this process (see fall_back): it links with the
# compiler's default from then on, and says so once.
_fallen_back: set[str] = set()


def find_linker(cxx: str | os.PathLike[str], cache_root: Path) -> Linker | None:
    """The linker for a link with ``cxx``, or None for the compiler's default (GNU ld).
    ``TVM_FFI_LINKER`` (mold, lld, gold, bfd) decides; else the fastest one the package
    build linked with when ``cxx`` built it (a small module links about twice as fast with
    gold as with GNU ld; mold and lld are faster still).

    That choice was tried where the package was built: here, ``PATH`` may find another
    binary of that name. It is used only if it tells its version (which keys the link),
    and not after it failed a link of this process; otherwise :func:`fall_back` says why
    and the default is used."""
    env = os.environ
    if _LINKER_ENV in env:
        return _chosen_linker(env[_LINKER_ENV], env.get("PATH"))
    from ._prebuilt import LINKERS, linker

    name = linker(cxx)
    if name is None or name in _fallen_back:
        return None
    found = shutil.which(dict(LINKERS)[name], path=env.get("PATH"))
    if found is None:
        return None
    choice = Linker(name, found, automatic=True)
    try:
        tool_identity(Path(found), cache_root)  # remembered: the key asks for it next
    except RuntimeError as err:
        fall_back(choice, f"it cannot tell its version: {err}")
        return None
    return choice


def may_fall_back(linker: Linker | None, command: str) -> bool:
    """Whether a build whose step ``command`` failed may be retried with the compiler's
    default linker: the step is a link with the automatic choice ``linker``."""
    if linker is None or not linker.automatic:
        return False  # TVM_FFI_LINKER's choice is the user's: its failure is the error
    return f"-fuse-ld={linker.name}" in command.split()


def fall_back(linker: Linker, reason: str) -> None:
    """Link with the compiler's default from now on in this process, instead of the
    automatic ``linker``, which failed for ``reason``; one warning says so."""
    if linker.name in _fallen_back:
        return  # another build of this process said it already
    _fallen_back.add(linker.name)
    from .. import _log

    _log.warn(
        f"tvm_ffi.cpp: the linker {linker.name} ({linker.path}) failed ({reason}); this "
        f"process links with the compiler's default linker instead (TVM_FFI_LINKER=bfd "
        f"skips {linker.name}; TVM_FFI_LINKER={linker.name} makes its failure an error)"
    )


def launcher_handles_nvcc(launcher: list[str]) -> bool:
    """Whether ``launcher`` (from :func:`find_launcher`) also caches nvcc's compiles."""
    return bool(launcher) and os.path.basename(launcher[0]) in _NVCC_LAUNCHERS


@functools.cache
def _find_ninja(search_path: str | None) -> Path:
    found = shutil.which("ninja", path=search_path)
    if found:
        return Path(found)
    try:
        import ninja  # the PyPI package ships the binary
    except ImportError:
        ninja = None
    if ninja is not None:
        candidate = Path(ninja.BIN_DIR) / "ninja"
        if candidate.is_file():
            return candidate
    raise RuntimeError(
        "ninja not found on PATH or as the 'ninja' Python package; "
        "install it with `pip install ninja` or your system's package manager"
    )


def find_ninja() -> Path:
    """Return the ninja binary: ``ninja`` on PATH, else the one of the ``ninja`` PyPI package."""
    return _find_ninja(os.environ.get("PATH"))


# (cache root, realpath, size, mtime_ns) -> identity; saves even the JSON read in a process.
_identity_memo: dict[tuple[str, str, int, int], str] = {}


def tool_identity(tool: Path, cache_root: Path) -> str:
    """Return ``"<tool --version output>\nsha256 <digest of the binary>"`` for a cache key:
    what the tool is, never where it is, so that two hosts with the same compiler at
    different paths agree on a module's key (a wrapper script's text is its digest).

    Remembered in ``<cache_root>/toolchain/`` keyed by the binary's resolved path, size
    and mtime, so only the first use of a given binary (ever, on this machine) runs it.
    """
    real = os.path.realpath(tool)
    st = os.stat(real)
    stat_key = (real, st.st_size, st.st_mtime_ns, st.st_ino)
    memo_key = (str(cache_root), *stat_key)
    if memo_key in _identity_memo:
        return _identity_memo[memo_key]
    digest = hashlib.sha256(real.encode()).hexdigest()[:16]
    # -3: the identity without the path, keyed with the inode (older records are not read).
    identity = remembered(
        cache_root,
        f"{os.path.basename(real)}-{digest}-3.json",
        read=lambda record: _read_identity(record, stat_key),
        compute=lambda: f"{_run_version(real)}\nsha256 {file_sha256(real)}",
        write=lambda record, value: _write_identity(record, stat_key, value),
    )
    _identity_memo[memo_key] = identity
    return identity


def remembered(
    cache_root: Path,
    name: str,
    read: Callable[[Path], str | None],
    compute: Callable[[], str],
    write: Callable[[Path, str], None],
) -> str:
    """The value recorded as ``name`` in the cache's ``toolchain/`` folder, else in the
    host's (host_memo), else ``compute()``'s; written into each of those folders that lacked
    it. A folder that cannot be written (a read-only cache) is skipped: the next process
    computes again."""
    missing = []
    for folder in [cache_root / "toolchain", *host_memo(cache_root)]:
        value = read(folder / name)
        if value is not None:
            break
        missing.append(folder)
    else:
        value = compute()
    for folder in missing:
        with contextlib.suppress(OSError):
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            write(folder / name, value)
    return value


# The user's default cache root -> its checked toolchain/ folder (empty: none to be had).
_host_memo: dict[str, list[Path]] = {}


def host_memo(cache_root: Path) -> list[Path]:
    """The user's default cache's ``toolchain/`` folder, where the tools' identities and the
    package's digest are remembered for every other cache directory of this user on this
    host too: their records are keyed by the files' path, size, mtime and inode, which
    hold on the whole host. A fresh ``TVM_FFI_CACHE_DIR`` then runs no ``--version`` and
    hashes no file the host has seen (a first use that fetches from a remote cache, see
    docs/dev/remote_cache.md). Empty where that is the cache's own, or not private."""
    from . import _cache

    try:
        default = _cache._default_root()
    except RuntimeError:  # no home: no such folder
        return []
    found = _host_memo.get(default)
    if found is None:
        from .._private_dir import open_private_dir

        found = []
        with contextlib.suppress(OSError):  # another user's, or unwritable: not used
            resolved, fd = open_private_dir(
                os.path.join(default, "toolchain"), label="toolchain records", mode=0o700,
                hint="", shared_hint="",
            )  # fmt: skip
            os.close(fd)
            found.append(Path(resolved))
        _host_memo[default] = found
    return [] if found and found[0] == Path(cache_root, "toolchain") else found


def file_sha256(path: str) -> str:
    """SHA-256 of the file's bytes, read 1 MiB at a time (a tool's binary, a key's inputs)."""
    hasher = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            hasher.update(chunk)
    return hasher.hexdigest()


def _read_identity(record_path: Path, memo_key: tuple[str, int, int, int]) -> str | None:
    try:
        record = json.loads(record_path.read_text())
    except (OSError, ValueError):
        return None
    if [record.get(field) for field in ("path", "size", "mtime_ns", "inode")] != list(memo_key):
        return None
    identity = record.get("identity")
    return identity if isinstance(identity, str) else None


def _write_identity(record_path: Path, memo_key: tuple[str, int, int, int], identity: str) -> None:
    real, size, mtime_ns, inode = memo_key
    record = {"path": real, "size": size, "mtime_ns": mtime_ns, "inode": inode,
              "identity": identity}  # fmt: skip
    # Several processes may record the same tool at once: a reader sees a whole record or none.
    replace_atomically(record_path, json.dumps(record).encode())


def _run_version(tool: str) -> str:
    import subprocess

    try:
        proc = subprocess.run(
            [tool, "--version"], capture_output=True, text=True, timeout=120, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise RuntimeError(f"cannot run {tool} --version: {err}") from err
    if proc.returncode != 0:
        raise RuntimeError(
            f"{tool} --version failed with exit code {proc.returncode}: "
            f"{(proc.stderr or proc.stdout).strip()}"
        )
    return proc.stdout.strip()
