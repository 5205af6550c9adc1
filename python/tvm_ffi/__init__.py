"""tvm_ffi: load C++/CUDA libraries that export functions through the TVM-FFI C ABI, and
call them from Python.

Importing the package is cheap: the compiled core and the submodules (``tvm_ffi.cpp``,
``tvm_ffi.utils``) load on first use, and nothing here imports torch or numpy.
"""

from __future__ import annotations

import importlib
import os

from ._version import __version__

# typing is not imported: a cache hit in a fresh process pays for every module imported.
TYPE_CHECKING = False


def _refuse_mixed_install() -> None:
    # apache-tvm-ffi installs the same import package, `tvm_ffi`, into the same folder (see
    # _mixed_install.py). One stat for its marker (_mixed_install.MARKER) keeps the import
    # cheap; the module that words the error loads only when there is one.
    here = os.path.dirname(os.path.abspath(__file__))
    if os.path.exists(os.path.join(here, "_ffi_api.py")):
        from ._mixed_install import refuse

        refuse(here)


_refuse_mixed_install()

if TYPE_CHECKING:
    # For type checkers only: at run time __getattr__ imports them on first use.
    from typing import Any

    from . import _dtype, config, cpp, error, libinfo, utils  # noqa: F401
    from ._core import Tensor
    from ._dlpack import DLDeviceType, Shape, from_dlpack
    from ._dtype import dtype
    from ._object import Object, get_global_func, register_global_func, register_object
    from ._stream import Device, device, get_raw_stream, use_raw_stream, use_torch_stream
    from .error import register_error
    from .module import Function, Module, load_module

__all__ = [
    "DLDeviceType",
    "Device",
    "Function",
    "Module",
    "Object",
    "Shape",
    "Tensor",
    "__version__",
    "device",
    "dtype",
    "from_dlpack",
    "get_global_func",
    "get_raw_stream",
    "load_module",
    "register_error",
    "register_global_func",
    "register_object",
    "use_raw_stream",
    "use_torch_stream",
]

_FROM_MODULE = ("Function", "Module", "load_module")
_FROM_STREAM = ("Device", "device", "get_raw_stream", "use_raw_stream", "use_torch_stream")
_FROM_OBJECT = ("Object", "get_global_func", "register_global_func", "register_object")
_FROM_DLPACK = ("DLDeviceType", "Shape", "from_dlpack")
_SUBPACKAGES = ("config", "cpp", "cuda", "error", "libinfo", "utils")
# compat: apache-tvm-ffi (code written for it reads tvm_ffi._dtype.DataTypeCode after `import
# tvm_ffi` alone)
_PRIVATE_REACHED = ("_dtype",)
# compat: apache-tvm-ffi (its data type constants: tvm_ffi.float32 is tvm_ffi.dtype("float32"))
_DTYPE_CONSTANTS = frozenset(
    {
        "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float64", "float32", "float16", "bfloat16", "float8_e3m4", "float8_e4m3",
        "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
        "float8_e5m2fnuz", "float8_e8m0fnu", "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn",
        "float4_e2m1fnx2",
    }
)  # fmt: skip


def __getattr__(name: str) -> Any:
    if name in _FROM_MODULE:
        value = getattr(importlib.import_module(".module", __name__), name)
    elif name in _FROM_STREAM:
        value = getattr(importlib.import_module("._stream", __name__), name)
    elif name in _FROM_OBJECT:
        value = getattr(importlib.import_module("._object", __name__), name)
    elif name in _FROM_DLPACK:
        value = getattr(importlib.import_module("._dlpack", __name__), name)
    elif name == "dtype":
        value = importlib.import_module("._dtype", __name__).dtype
    elif name in _DTYPE_CONSTANTS:
        value = importlib.import_module("._dtype", __name__).dtype(name)
    elif name == "register_error":
        value = importlib.import_module(".error", __name__).register_error
    elif name == "Tensor":
        value = importlib.import_module("._core", __name__).Tensor
    elif name in _SUBPACKAGES or name in _PRIVATE_REACHED:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later lookups are plain attribute hits
    return value


def __dir__() -> list[str]:
    return sorted([*__all__, *_SUBPACKAGES])
