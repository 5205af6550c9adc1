"""Recognise a library built against apache-tvm-ffi's binary ABI before loading it.

apache-tvm-ffi's libraries export ``__tvm_ffi_<name>`` like ours, but with another entry
signature, and call into its runtime library ``libtvm_ffi.so`` (``TVMFFIErrorSetRaisedFromCStr``
and friends). Our ``libtvm_ffi.so`` (same name) defines only the registry of ABI version 3,
and no header of ours leaves any other ``TVMFFI*`` symbol undefined: an import of another
one is proof, and linking ``libtvm_ffi.so`` is named beside it. Calling such an entry with
our convention could only fail obscurely; load_module names the cause instead.
"""

from __future__ import annotations

import os
import re
from typing import Callable, TypeVar

from . import _elf

__all__ = ["apache_evidence", "load_checked", "vet"]

T = TypeVar("T")
_RUNTIME = re.compile(r"libtvm_ffi\.so(\.\d+)*\Z")
# What our libtvm_ffi.so defines (c_api.h): libraries reach these through weak references.
_REGISTRY = frozenset(
    {
        "TVMFFIFunctionSetGlobal",
        "TVMFFIFunctionGetGlobal",
        "TVMFFIFunctionListGlobalNames",
        "TVMFFITypeSetMember",
        "TVMFFITypeGetMember",
        "TVMFFILibraryPathOf",
        "TVMFFIInitErrorRecord",
        "TVMFFIInitErrorsTake",
    }
)
# Paths found to be ours: a cache hit costs one dict lookup. A file rebuilt in place is
# checked again when loading it fails (the usual fate of an apache-built library here).
_CHECKED: set[str] = set()


def apache_evidence(path: str) -> str | None:
    """What marks ``path`` as built against apache-tvm-ffi, or None."""
    imported = sorted(set(_elf.imported_symbols(path, b"TVMFFI") or ()) - _REGISTRY)
    if not imported:
        return None
    needed = [lib for lib in _elf.needed_libraries(path) or () if _RUNTIME.match(lib)]
    shown = ", ".join(imported[:3]) + (", ..." if len(imported) > 3 else "")
    calls = f"it calls {shown} from apache-tvm-ffi's runtime"
    return f"it links {needed[0]} and {calls}" if needed else calls


def vet(path: str) -> str | None:
    """apache_evidence(path), remembering a pass so that loading the file later skips the
    check (a JIT build vets its library before recording it, then loads it)."""
    evidence = apache_evidence(path)
    if evidence is None and os.path.isfile(path):
        _CHECKED.add(path)
    return evidence


def _error(path: str, evidence: str) -> OSError:
    return OSError(
        f"cannot load library '{path}': it was built against apache-tvm-ffi's binary ABI "
        f"({evidence}). tvm-ffi-cubin runs apache-tvm-ffi's source code, not its binaries: "
        "rebuild the library from its sources with this package (tvm_ffi.cpp.load / "
        "tvm_ffi.cpp.build, or CMake's find_package(tvm_ffi))"
    )


def load_checked(load: Callable[[str], T], path: str) -> T:
    """``load(path)``, refusing an apache-tvm-ffi library first (with OSError); once a path
    passed, the check costs a set lookup."""
    if path not in _CHECKED:
        evidence = vet(path)
        if evidence is not None:
            raise _error(path, evidence)
    try:
        return load(path)
    except OSError:
        _CHECKED.discard(path)  # rebuilt in place since it passed? look again
        evidence = apache_evidence(path)
        if evidence is None:
            raise
        raise _error(path, evidence) from None
