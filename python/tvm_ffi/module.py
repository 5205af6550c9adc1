"""Loading libraries and calling their functions (the Python face of ``tvm_ffi._core``).

A library exports each function ``NAME`` as the C symbol ``__tvm_ffi_NAME``
(``TVM_FFI_DLL_EXPORT_TYPED_FUNC`` in ``tvm/ffi/function.h`` writes it);
:func:`load_module` opens the library and hands out :class:`Function` objects, which are
called like Python functions.
"""

from __future__ import annotations

import os

from ._core import Function, Module
from ._core import load_module as _load_module
from ._foreign import load_checked

__all__ = ["Function", "Module", "load_module"]


def load_module(path: str | os.PathLike, keep_module_alive: bool = True) -> Module:
    """Load the shared library at ``path`` and return its :class:`Module`.

    The functions the library exports are attributes and items of the module
    (``mod.add_one(x, y)`` or ``mod["add_one"]``); ``mod.functions`` lists them. A function
    named like a Module attribute (``path``, ``functions``) is reachable as an item only.
    Loading the same unchanged file again reuses the loaded library; a file rebuilt since
    it was loaded is loaded anew. Libraries are never unloaded: ``keep_module_alive``
    (apache-tvm-ffi's switch for unloading with the last module object) is accepted and
    both values keep the library loaded.

    Raises:
        OSError: the file does not exist, the dynamic loader rejects it (the message
            carries the loader's reason), or it was built against apache-tvm-ffi's binary
            ABI (the message says so).
    """
    return load_checked(_load_module, os.fspath(path))
