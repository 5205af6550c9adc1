"""Build settings read from the environment, and the platform check, at call time."""

from __future__ import annotations

import os
import sys

__all__ = ["MOST_JOBS", "max_jobs", "python_executable", "require_linux"]


def max_jobs(default: int | None = None) -> int | None:
    """The number of compile jobs to run at once: ``MAX_JOBS`` (as in torch's
    cpp_extension), else ``default`` (None: ninja's own choice).

    Raises
    ------
    ValueError
        ``MAX_JOBS`` is set but not a positive integer.
    """
    text = os.environ.get("MAX_JOBS", "").strip()
    if not text:
        return default
    try:
        jobs = int(text)
    except ValueError:
        jobs = 0
    if jobs < 1:
        raise ValueError(f"MAX_JOBS must be a positive integer (got {text!r})")
    if jobs > MOST_JOBS:
        raise ValueError(f"MAX_JOBS is too large (got {text!r}; ninja takes at most {MOST_JOBS})")
    return jobs


# ninja reads -j into a C int: a larger count fails the build with "invalid -j parameter".
MOST_JOBS = 2**31 - 1


def python_executable() -> str:
    """The Python interpreter that runs build steps (ninja's launcher, the embed step).

    ``TVM_FFI_PYTHON`` when set; else ``sys.executable`` when it is named like Python; else
    the interpreter of this installation (``<exec_prefix>/bin/python3.X``). An embedded
    interpreter's ``sys.executable`` is the host application, or empty: running that with
    Python's arguments would start the application, not Python.

    Raises
    ------
    RuntimeError
        No interpreter was found (the message says how to name one).
    """
    import re

    configured = os.environ.get("TVM_FFI_PYTHON", "").strip()
    if configured:
        return configured
    exe = sys.executable
    if exe and re.match(r"(python|pypy)[\w.-]*$", os.path.basename(exe)):
        return exe
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    for prefix in dict.fromkeys((sys.exec_prefix, sys.base_exec_prefix)):
        for name in (f"python{version}", f"python{sys.version_info[0]}", "python"):
            candidate = os.path.join(prefix, "bin", name)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate
    raise RuntimeError(
        f"tvm_ffi.cpp: no Python interpreter to run build steps: sys.executable is {exe!r} "
        f"(an embedded interpreter?) and {sys.exec_prefix}/bin holds no python{version}; "
        "set TVM_FFI_PYTHON to the path of a python executable"
    )


def require_linux(api: str) -> None:
    """JIT builds make ELF shared libraries with a GNU-style toolchain and lean on Linux
    (flock, O_NOFOLLOW directory walks, PR_SET_PDEATHSIG): say so up front elsewhere,
    rather than fail later with a compiler or import error."""
    if not sys.platform.startswith("linux"):
        raise RuntimeError(
            f"{api}: tvm_ffi.cpp builds libraries on Linux only (this platform is {sys.platform!r})"
        )
