"""Find the tools a JIT build runs: the C++ compiler (and its launcher, such as ccache),
CUDA (nvcc, headers, cudart), ninja.

Everything is looked up lazily, on the first build that needs it, and cached per
process keyed by the environment variables it depends on (so a test or a user who
changes ``CUDA_HOME`` or ``CXX`` sees the change). A compiler's identity (its resolved
path and ``--version`` text, part of every cache key) is also cached on disk, keyed by
the binary's (path, size, mtime), so a process that only loads cached modules never
spawns a compiler.
"""

from __future__ import annotations

import functools
import glob
import hashlib
import json
import os
import re
import shutil
from pathlib import Path

from ._cache import replace_atomically

__all__ = [
    "find_cuda_home",
    "find_cuda_tool",
    "find_cxx",
    "find_launcher",
    "find_ninja",
    "launcher_handles_nvcc",
    "tool_identity",
]


def _is_cuda_home(path: Path) -> bool:
    # Both parts are needed: a build compiles with bin/nvcc and includes include/.
    return (path / "bin" / "nvcc").is_file() and (path / "include" / "cuda_runtime.h").is_file()


def _version_key(path: str) -> tuple[int, ...]:
    # /usr/local/cuda-12.10 is newer than /usr/local/cuda-12.9: compare numbers, not text.
    return tuple(int(part) for part in re.findall(r"\d+", os.path.basename(path)))


@functools.cache
def _find_cuda_home(env_home: str | None, env_path: str | None, search_path: str | None) -> Path:
    tried: list[str] = []
    for var, value in (("CUDA_HOME", env_home), ("CUDA_PATH", env_path)):
        if value:
            # A variable the user set on purpose must not be silently replaced by another
            # toolkit found elsewhere.
            if not _is_cuda_home(Path(value)):
                raise RuntimeError(
                    f"{var}={value} is not a CUDA toolkit (expected bin/nvcc and "
                    "include/cuda_runtime.h under it)"
                )
            return Path(value)
    nvcc = shutil.which("nvcc", path=search_path)
    if nvcc:
        # Try the path as found (a symlink farm like /usr/bin/nvcc -> toolkit) and the
        # resolved one; a wrapper script (/usr/local/bin/nvcc) fails both and we go on.
        for candidate in (Path(nvcc).parent.parent, Path(os.path.realpath(nvcc)).parent.parent):
            tried.append(f"nvcc on PATH ({candidate})")
            if _is_cuda_home(candidate):
                return candidate
    else:
        tried.append("nvcc on PATH (not found)")
    versioned = sorted(glob.glob("/usr/local/cuda-*"), key=_version_key, reverse=True)
    for candidate in ["/usr/local/cuda", "/opt/cuda", *versioned]:
        tried.append(candidate)
        if _is_cuda_home(Path(candidate)):
            return Path(candidate)
    raise RuntimeError(
        "CUDA toolkit not found; set CUDA_HOME to its root. Tried: CUDA_HOME (unset), "
        "CUDA_PATH (unset), " + ", ".join(tried)
    )


def find_cuda_home() -> Path:
    """Return the CUDA toolkit root.

    Looks at ``CUDA_HOME``, then ``CUDA_PATH``, then ``nvcc`` on ``PATH``, then
    ``/usr/local/cuda``, ``/opt/cuda`` and ``/usr/local/cuda-*`` (newest first). A
    directory counts when it has ``bin/nvcc`` and ``include/cuda_runtime.h``.

    Raises
    ------
    RuntimeError
        Nothing was found (the message lists every place tried), or ``CUDA_HOME`` /
        ``CUDA_PATH`` is set to something that is not a toolkit.
    """
    env = os.environ
    return _find_cuda_home(env.get("CUDA_HOME"), env.get("CUDA_PATH"), env.get("PATH"))


def find_cuda_tool(name: str) -> Path:
    """Return ``<cuda home>/bin/<name>`` (e.g. ``nvcc``, ``fatbinary``); RuntimeError if absent."""
    home = find_cuda_home()
    tool = home / "bin" / name
    if not tool.is_file():
        raise RuntimeError(f"CUDA tool {name!r} not found: tried {tool}")
    return tool


def cuda_lib_dir(home: Path) -> Path:
    """The directory holding libcudart.so (lib64 on Linux installs, lib in some others)."""
    for sub in ("lib64", "lib", os.path.join("targets", "x86_64-linux", "lib")):
        if (home / sub).is_dir():
            return home / sub
    return home / "lib64"


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
    """Return ``"<resolved path>\\n<tool --version output>"`` for a cache key.

    Remembered in ``<cache_root>/toolchain/`` keyed by the binary's resolved path, size
    and mtime, so only the first use of a given binary (ever, on this machine) runs it.
    """
    real = os.path.realpath(tool)
    st = os.stat(real)
    stat_key = (real, st.st_size, st.st_mtime_ns)
    memo_key = (str(cache_root), *stat_key)
    if memo_key in _identity_memo:
        return _identity_memo[memo_key]
    digest = hashlib.sha256(real.encode()).hexdigest()[:16]
    record_path = cache_root / "toolchain" / f"{os.path.basename(real)}-{digest}.json"
    identity = _read_identity(record_path, stat_key)
    if identity is None:
        identity = f"{real}\n{_run_version(real)}"
        _write_identity(record_path, stat_key, identity)
    _identity_memo[memo_key] = identity
    return identity


def _read_identity(record_path: Path, memo_key: tuple[str, int, int]) -> str | None:
    try:
        record = json.loads(record_path.read_text())
    except (OSError, ValueError):
        return None
    if [record.get("path"), record.get("size"), record.get("mtime_ns")] != list(memo_key):
        return None
    identity = record.get("identity")
    return identity if isinstance(identity, str) else None


def _write_identity(record_path: Path, memo_key: tuple[str, int, int], identity: str) -> None:
    real, size, mtime_ns = memo_key
    record = {"path": real, "size": size, "mtime_ns": mtime_ns, "identity": identity}
    record_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    # Several processes may record the same tool at once: a reader sees a whole record or none.
    replace_atomically(record_path, json.dumps(record).encode())


def _run_version(tool: str) -> str:
    import subprocess

    try:
        proc = subprocess.run(
            [tool, "--version"], capture_output=True, text=True, timeout=120, check=False
        )
    except OSError as err:
        raise RuntimeError(f"cannot run {tool} --version: {err}") from err
    if proc.returncode != 0:
        raise RuntimeError(
            f"{tool} --version failed with exit code {proc.returncode}: "
            f"{(proc.stderr or proc.stdout).strip()}"
        )
    return proc.stdout.strip()
