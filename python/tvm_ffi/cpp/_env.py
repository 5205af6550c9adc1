"""Build settings read from the environment, and the platform check, at call time."""

from __future__ import annotations

import os
import sys

__all__ = ["MOST_JOBS", "max_jobs", "require_linux"]


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


def require_linux(api: str) -> None:
    """JIT builds make ELF shared libraries with a GNU-style toolchain and lean on Linux
    (flock, O_NOFOLLOW directory walks, PR_SET_PDEATHSIG): say so up front elsewhere,
    rather than fail later with a compiler or import error."""
    if not sys.platform.startswith("linux"):
        raise RuntimeError(
            f"{api}: tvm_ffi.cpp builds libraries on Linux only (this platform is {sys.platform!r})"
        )
