"""Recognise a library built for this package's previous ABI ("ABI v3") before loading it.

Libraries now speak the tvm-ffi C ABI (apache-tvm-ffi 0.1's): each ``__tvm_ffi_<name>`` is a
safe call of 16-byte values. A v3 library exports the same names with another entry signature
(24-byte values and a call context), so calling one could only fail obscurely. Its symbols
tell it apart:

- it imports one of the v3 registry functions that the tvm-ffi C ABI does not have
  (``_V3_ONLY``: v3 headers reached them through weak references), or
- it exports functions but neither links ``libtvm_ffi.so`` nor imports any ``TVMFFI*``
  function, and exports no ``__tvm_ffi__metadata_<name>``: every library built with the tvm-ffi
  headers (ours or apache's) links the runtime and imports its error functions, which each
  export calls when its C++ code throws, while v3 libraries never linked it.

A library hand-written on the C ABI alone falls under the second rule unless it links
``libtvm_ffi.so`` (``-ltvm_ffi``), as the C ABI asks.
"""

from __future__ import annotations

import os

from . import _elf

__all__ = ["old_abi_evidence", "refuse_old_abi", "vet"]

_V3_ONLY = frozenset(
    {
        "TVMFFIFunctionListGlobalNames",
        "TVMFFITypeSetMember",
        "TVMFFITypeGetMember",
        "TVMFFILibraryPathOf",
        "TVMFFIInitErrorRecord",
        "TVMFFIInitErrorsTake",
    }
)
_PREFIX = "__tvm_ffi_"
_STT_FUNC = 2
# Paths found to be of the current ABI: a later load costs one set lookup. A file rebuilt in
# place is a new load (module.load_module keys it by inode and mtime) and is checked again.
_CHECKED: set[tuple[str, int, int]] = set()


def _is_runtime(needed: str) -> bool:
    """``needed`` (a DT_NEEDED name) is libtvm_ffi.so, bare or versioned (libtvm_ffi.so.0.1).
    Plain string tests: re would be imported by every library load in a fresh process."""
    stem, dot, version = needed.partition("libtvm_ffi.so")
    return (
        not stem
        and bool(dot)
        and all(p.isascii() and p.isdigit() for p in version.split(".")[1:])
        and version[:1] in ("", ".")
    )


def old_abi_evidence(path: str) -> str | None:
    """What marks ``path`` as a library of ABI v3, or None."""
    found = _elf.symbols(path, dynamic=True)
    if not found:
        return None  # no symbol table to judge by: the loader decides
    exports = sorted(
        s.name[len(_PREFIX) :]
        for s in found
        if s.defined and s.type == _STT_FUNC and s.name.startswith(_PREFIX)
        and not s.name.startswith("__tvm_ffi__")
    )  # fmt: skip
    if not exports:
        return None
    imports = {s.name for s in found if not s.defined and s.name.startswith("TVMFFI")}
    old = sorted(imports & _V3_ONLY)
    if old:
        return f"it imports {', '.join(old)}, which only ABI v3 had"
    if imports or any(s.name.startswith("__tvm_ffi__metadata_") for s in found):
        return None
    if any(_is_runtime(lib) for lib in _elf.needed_libraries(path) or ()):
        return None
    shown = ", ".join(exports[:3]) + (", ..." if len(exports) > 3 else "")
    return (
        f"it exports TVM-FFI functions ({shown}) but neither links libtvm_ffi.so nor calls "
        "into it, as every library built with the tvm-ffi C ABI headers does"
    )


def _message(path: str, evidence: str) -> str:
    return (
        f"cannot load library '{path}': it was built for tvm_ffi's previous ABI (ABI v3, "
        f"before the switch to the tvm-ffi C ABI of apache-tvm-ffi 0.1: {evidence}); rebuild "
        "it from its sources with this package (tvm_ffi.cpp.load / tvm_ffi.cpp.build, or "
        "CMake's find_package(tvm_ffi)), which links libtvm_ffi.so"
    )


def vet(path: str) -> str | None:
    """old_abi_evidence(path), remembering a pass so that loading the file later skips the
    check (a JIT build vets its library before recording it, then loads it)."""
    evidence = old_abi_evidence(path)
    if evidence is None:
        try:
            st = os.stat(path)
        except OSError:
            return None
        _CHECKED.add((path, st.st_ino, st.st_mtime_ns))
    return evidence


def refuse_old_abi(path: str) -> None:
    """Raises OSError naming the rebuild when ``path`` is a library of ABI v3."""
    try:
        st = os.stat(path)
    except OSError:
        return  # the loader names the missing file
    if (path, st.st_ino, st.st_mtime_ns) in _CHECKED:
        return
    evidence = vet(path)
    if evidence is not None:
        raise OSError(_message(path, evidence))
