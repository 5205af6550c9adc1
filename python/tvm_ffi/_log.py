"""The package's loggers: ``logging.getLogger("tvm_ffi")`` and its children
(``tvm_ffi.cpp`` for JIT builds).

The library adds no handler and sets no level: what is shown is the application's
choice (``logging.basicConfig(level=logging.INFO)`` shows every build). ``logging`` is
imported only when there is something to say, so a cache hit stays import-free.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["caller", "get_logger", "logging_enabled", "warn"]


def get_logger(name: str = "tvm_ffi") -> Any:
    """``logging.getLogger(name)``; ``name`` is ``tvm_ffi`` or ``tvm_ffi.<child>``."""
    import logging

    return logging.getLogger(name)


def logging_enabled(name: str, level: int) -> bool:
    """Would a record of ``level`` on logger ``name`` be handled? False, without importing
    ``logging``, when nobody imported it: then no handler can exist to show it."""
    logging = sys.modules.get("logging")
    if logging is None:
        return False
    return logging.getLogger(name).isEnabledFor(level)


def caller() -> str:
    """``file:line`` of the nearest frame outside this package: who asked for the build."""
    frame = sys._getframe(1)
    while frame is not None and _ours(frame):
        frame = frame.f_back
    return "?" if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"


def warn(message: str, category: type[Warning] = RuntimeWarning) -> None:
    """``warnings.warn`` shown at the nearest frame outside this package (the user's call
    of load_inline, build_inline, ...), the one :func:`caller` names."""
    import warnings

    frame, level = sys._getframe(1), 2
    while frame is not None and _ours(frame):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


def _ours(frame: Any) -> bool:
    module = frame.f_globals.get("__name__", "")
    # contextlib: the build runs in a generator-based context manager of ours.
    return module == "contextlib" or module == "tvm_ffi" or module.startswith("tvm_ffi.")
