"""What the package build compiles ahead for the JIT, and when a build may use it.

A cold ``load_inline`` of a small wrapper spends most of its time on code that is the same
for every user: the CUDA launcher's run-once functions (see ``_launcher``) and the parse of
the prelude headers. The package build (``setup.py``) therefore leaves in
``tvm_ffi/lib/jit/``:

- ``cuda_launcher.o``: the launcher's run-once code as one relocatable object, compiled
  with the JIT's default flags against the package's own CUDA driver declarations (the
  launcher reaches the driver through ``cuGetProcAddress`` only, so no toolkit version is
  baked in). Every module links its own copy: its symbols are hidden, so no module binds
  to another's.
- ``prelude.h`` and, with GCC, ``prelude.h.gch``: the load_inline prelude as one header and
  its precompiled form for the JIT's default flags. GCC takes the ``.gch`` only when it
  matches the compiler and the options, and reads ``prelude.h`` itself otherwise; the JIT
  names it only for the compiler that built it.
- ``ninja_launch``: starts ninja for a build (see ``src/jit/ninja_launch.c``), in place of
  a Python interpreter that would cost about 15 ms more per build step.
- ``prebuilt.json``: what they were built from (the headers' digest, the compiler, the
  flags, the text the precompiled prelude holds and its size), and the fastest linker
  (``LINKERS``) with which that compiler linked ``cuda_launcher.o`` into a library: a
  linker on ``PATH`` may still fail with a given compiler (gold cannot read some GCC
  installs' ``libstdc++.so``), so it is tried once, there, rather than by every user's
  first build (and a build checks it again where it uses it, see
  ``_toolchain.find_linker``).

A build uses them only when the package headers still have that digest (an editable
checkout whose headers were edited since falls back to compiling in the cache), the
precompiled header and the linker only with the compiler that built them, the
precompiled header only for the prelude text it was compiled from and with flags known
to leave it as it is (:func:`pch_flags_fit`), and the launcher object only with flags
known to leave it as it is (:func:`launcher_flags_fit`).

This module (like ``_spec``, which holds the prelude) has no package-relative imports at
module level: ``setup.py`` loads it by path.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

__all__ = [
    "BASE_FLAGS",
    "FOLDER",
    "LAUNCHER_DEFINE",
    "LAUNCHER_OBJECT",
    "LAUNCHER_PARTS",
    "LINKERS",
    "NINJA_LAUNCH",
    "PCH_HEADER",
    "STAMP",
    "current",
    "headers_digest",
    "launcher_flags_fit",
    "linker",
    "ninja_launch",
    "pch_flags_fit",
    "pch_header",
    "pch_identity",
    "prelude_text",
    "read_stamp",
]

#: The flags the JIT compiles every C++ translation unit with, before the user's.
BASE_FLAGS = ("-std=c++17", "-O2", "-fPIC", "-fvisibility=hidden")

#: The define of every translation unit of a module that links the launcher's runtime.
LAUNCHER_DEFINE = "-DTVM_FFI_CUDA_SEPARATE_LAUNCHER"
#: The launcher runtime's translation units and the one header each includes (see
#: ``include/tvm/ffi/extra/cuda/detail/launcher_linkage.h``): 1 defines images, driver and
#: error texts, 2 modules and kernels; about equal in cost, they compile in parallel.
LAUNCHER_PARTS = {
    1: "tvm/ffi/extra/cuda/detail/launcher_definitions_driver.h",
    2: "tvm/ffi/extra/cuda/detail/launcher_definitions_modules.h",
}

#: Under the package: ``tvm_ffi/lib/jit/``.
FOLDER = ("lib", "jit")
#: Linkers faster than GNU ld, fastest first: (the compiler's -fuse-ld= name, its binary).
LINKERS = (("mold", "mold"), ("lld", "ld.lld"), ("gold", "ld.gold"))
LAUNCHER_OBJECT = "cuda_launcher.o"
NINJA_LAUNCH = "ninja_launch"
PCH_HEADER = "prelude.h"
STAMP = "prebuilt.json"


def prelude_text(includes: tuple[str, ...]) -> str:
    """The text of ``prelude.h``: the prelude's ``includes`` (``_spec.PRELUDE_INCLUDES``),
    in order."""
    lines = ["// Written by the tvm_ffi package build: load_inline's prelude as one header."]
    lines += [f"#include <{header}>" for header in includes]
    return "\n".join(lines) + "\n"


def headers_digest(include_dir: str | os.PathLike[str]) -> str:
    """SHA-256 of every file under ``include_dir`` (relative path and contents), in path
    order: the same headers give the same digest wherever they are installed."""
    hasher = hashlib.sha256()
    root = Path(include_dir)
    files = sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith("."))
    for path in files:
        data = path.read_bytes()
        hasher.update(f"{path.relative_to(root).as_posix()}\0{len(data)}\0".encode())
        hasher.update(data)
    return hasher.hexdigest()


# Flags known to leave what was compiled ahead as it is: the launcher object's code and
# ABI, the precompiled prelude's declarations and layouts. An allow-list: whatever else a
# user passes (a code generation or layout option, -I, -include, a flag new to us) may not.
_NEUTRAL = ("-fPIC", "-fpic", "-fvisibility=hidden", "-H", "-pipe", "-pthread", "-w")
_NEUTRAL_PREFIXES = (
    "-O", "-g", "-std=c++", "-std=gnu++", "-fdiagnostics-", "-fmessage-length=",
)  # fmt: skip


def _neutral(flags: list[str], *, macros: bool) -> bool:
    """Whether every flag of ``flags`` is in the allow-list (also -W warnings); ``macros``:
    also -D and -U."""
    words = iter(flags)
    for flag in words:
        if flag.startswith(("-D", "-U")):
            if not macros:
                return False
            if flag in ("-D", "-U"):
                next(words, None)
        elif flag.startswith("-W") and not flag.startswith(("-Wl,", "-Wa,", "-Wp,")):
            continue
        elif flag not in _NEUTRAL and not flag.startswith(_NEUTRAL_PREFIXES):
            return False
    return True


def launcher_flags_fit(flags: list[str]) -> bool:
    """Whether a module whose (host) flags beyond the defaults are ``flags`` may link the
    prebuilt launcher object: optimisation, debug info, warnings and a C++ standard leave
    the launcher as it is. Anything else compiles the runtime with the module's flags:
    another C++ library ABI, code generation options, and any macro, which may rename
    what the launcher defines (``-Dtvm=tvm_v2``) or change a header it includes."""
    return _neutral(flags, macros=False)


def pch_flags_fit(flags: list[str]) -> bool:
    """Whether a translation unit whose flags beyond the defaults are ``flags`` may read
    the precompiled prelude. GCC checks the macros (-D, -U and those an option defines:
    -std, -g, -O0, -fno-rtti) and the -m target options against the ones it was built
    with, and reads ``prelude.h`` itself on a mismatch; it does not check every option
    that changes a layout (``-fpack-struct``, ``-funsigned-char``, ``-fshort-enums``,
    ...), so only the allow-list may use it."""
    return _neutral(flags, macros=True)


def read_stamp(folder: str | os.PathLike[str]) -> dict | None:
    """``prebuilt.json`` of ``folder``, or None when there is none or it does not parse."""
    try:
        with open(os.path.join(folder, STAMP), encoding="utf-8") as f:
            stamp = json.load(f)
    except (OSError, ValueError):
        return None
    return stamp if isinstance(stamp, dict) else None


_current: list = []  # memo: [(folder, stamp) or None], once per process


def current() -> tuple[Path, dict] | None:
    """``(folder, stamp)`` of the package's prebuilt files when they were built from the
    headers the package has now, else None (once per process: a build asks on a miss)."""
    if not _current:
        _current.append(_find_current())
    return _current[0]


def _find_current() -> tuple[Path, dict] | None:
    import tvm_ffi

    from . import _hit_index

    folder = Path(tvm_ffi.__file__).parent.joinpath(*FOLDER)
    stamp = read_stamp(folder)
    if stamp is None or stamp.get("headers") != headers_digest(_hit_index.include_dir()):
        return None
    return folder, stamp


def _built_by(compiler: str | os.PathLike[str]) -> tuple[Path, dict] | None:
    """``current()`` when ``compiler`` is the one that built it (the same file: path, size
    and modification time), else None."""
    found = current()
    if found is None:
        return None
    real = os.path.realpath(compiler)
    try:
        st = os.stat(real)
    except OSError:
        return None
    stamp = found[1]
    if stamp.get("compiler") != real or stamp.get("compiler_stamp") != [st.st_size, st.st_mtime_ns]:
        return None
    return found


def linker(compiler: str | os.PathLike[str]) -> str | None:
    """The ``-fuse-ld=`` name of the linker the package build linked with ``compiler``,
    or None (GNU ld: none faster worked, or another compiler)."""
    found = _built_by(compiler)
    name = found[1].get("linker") if found is not None else None
    return name if name in dict(LINKERS) else None


def pch_identity(text: str, gch_size: int) -> dict:
    """What ``prebuilt.json`` records of a precompiled prelude: the digest of the text it
    was compiled from and its size. GCC takes ``prelude.h.gch`` for ``prelude.h`` by its
    name alone, whatever text it was compiled from."""
    return {"pch_source": hashlib.sha256(text.encode()).hexdigest(), "pch_size": gch_size}


def pch_header(compiler: str | os.PathLike[str]) -> Path | None:
    """``prelude.h`` when its precompiled form was built by ``compiler`` with the
    package's current headers, from the prelude the JIT includes now (the text that
    ``prebuilt.json`` records, which is also ``prelude.h``'s), else None."""
    found = _built_by(compiler)
    if found is None or not found[1].get("pch"):
        return None
    from ._spec import PRELUDE_INCLUDES

    folder, stamp = found
    header = folder / PCH_HEADER
    text = prelude_text(PRELUDE_INCLUDES)
    try:
        on_disk = header.read_text(encoding="utf-8")
        size = os.stat(folder / (PCH_HEADER + ".gch")).st_size
    except (OSError, ValueError):
        return None
    recorded = {key: stamp.get(key) for key in ("pch_source", "pch_size")}
    return header if on_disk == text and recorded == pch_identity(text, size) else None


def ninja_launch() -> str | None:
    """The package's ``ninja_launch`` program, or None when this install has none."""
    import tvm_ffi

    path = os.path.join(os.path.dirname(tvm_ffi.__file__), *FOLDER, NINJA_LAUNCH)
    return path if os.access(path, os.X_OK) else None
