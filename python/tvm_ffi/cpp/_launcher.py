"""The launcher's run-once code, compiled once and linked into every module that uses it.

Half of a small wrapper's compile is code for functions that run once per process (loading
the driver, checking images, loading modules, error texts). A module whose sources include
``cubin_launcher.h`` (or ``embed_cubin.h``) is therefore compiled with
``-DTVM_FFI_CUDA_SEPARATE_LAUNCHER``, which leaves those functions declared only, and links
the two translation units that define them (see
``include/tvm/ffi/extra/cuda/detail/launcher_linkage.h``). With the default flags (and only
flags that do not change the launcher, see ``_prebuilt.launcher_flags_fit``) that is the
object the package build left in ``tvm_ffi/lib/jit/`` (:func:`prebuilt_object`): a user's
first build compiles only the user's code. Otherwise the two are built into a cache entry of
their own, ``cuda_launcher_<key>/cuda_launcher.o``, keyed by the compiler, the flags and the
package headers, so every later module with the same flags reuses it.

The text check is plain: an include it misses (through a header of the user's) leaves the
module header-only, which is always correct. Every compiled source of the module must have
the same flags once the load_inline prelude is set aside, since the runtime objects are
compiled with them (flags such as ``-D_GLIBCXX_USE_CXX11_ABI=0`` change the ABI); otherwise
the module stays header-only too.
"""

from __future__ import annotations

from pathlib import Path

from . import _host_cuda, _prebuilt
from ._spec import PRELUDE_INCLUDES, Spec

__all__ = [
    "DEFINE",
    "OPTIMIZE",
    "PARTS",
    "STEM",
    "part_source",
    "prebuilt_object",
    "runtime_flags",
    "runtime_spec",
]

#: The define that every translation unit of a module in separate mode is compiled with.
DEFINE = _prebuilt.LAUNCHER_DEFINE
#: The runtime's translation units, compiled in parallel, and the header each includes.
PARTS = _prebuilt.LAUNCHER_PARTS
#: Code that runs once per process: -O1 compiles it a quarter faster than -O2 (the module's
#: own flags come after it, and win).
OPTIMIZE = "-O1"
#: The runtime entry's file stem: ``cuda_launcher_<key>/cuda_launcher.o``.
STEM = "cuda_launcher"

_PRELUDE = [[header] for header in PRELUDE_INCLUDES]
_HEADERS = ("tvm/ffi/extra/cuda/cubin_launcher.h", "tvm/ffi/extra/cuda/embed_cubin.h")


def part_source(part: int) -> str:
    """The text of runtime translation unit ``part``."""
    return (
        "// Written by tvm_ffi.cpp: part of the CUDA launcher's run-once code.\n"
        f"#include <{PARTS[part]}>\n"
    )


def _uses_launcher(spec: Spec) -> bool:
    texts: list[str | bytes] = [t for t in (spec.inline_cpp, spec.inline_cuda) if t is not None]
    for path, kind in zip(spec.files, spec.file_kinds):
        if kind in ("cxx", "cuda"):
            try:
                texts.append(path.read_bytes())
            except OSError:
                continue  # the build names the missing file
    for text in texts:
        for header in _HEADERS:
            if (header if isinstance(text, str) else header.encode()) in text:
                return True
    return False


def _without_prelude(flags: list[str]) -> list[str]:
    """``flags`` less the ``-include`` pairs of the load_inline prelude: the runtime parts
    include what they need, and parse faster without the rest."""
    out: list[str] = []
    index = 0
    while index < len(flags):
        if flags[index] == "-include" and flags[index + 1 : index + 2] in _PRELUDE:
            index += 2
            continue
        out.append(flags[index])
        index += 1
    return out


def runtime_flags(spec: Spec) -> list[str] | None:
    """The flags the runtime parts of ``spec``'s module are compiled with, or None when the
    module stays header-only: output="x.o", no source includes the launcher, or sources
    whose (host) flags differ or cannot be given to the host compiler."""
    if spec.object_output or not _uses_launcher(spec):
        return None
    seen: set[tuple[str, ...]] = set()
    if spec.inline_cpp is not None or "cxx" in spec.file_kinds:
        seen.add(tuple(_without_prelude(spec.cflags)))
    if spec.has_cuda_sources:
        # What nvcc (or the host compile of cuda.cu) passes to the host compiler.
        host = _host_cuda.host_flags("", spec.cuda_cflags)
        if host is None:
            return None
        seen.add(tuple(_without_prelude(host)))
    if len(seen) != 1:
        return None
    return list(seen.pop())


def runtime_spec(spec: Spec, flags: list[str], cuda_includes: list[str] | None) -> Spec:
    """The spec of the runtime entry for a module of ``spec`` (compiled with ``flags``): no
    sources of the user's, only the include paths, which decide the headers it sees.

    ``cuda_includes`` are the CUDA include directories the module itself compiles with:
    the runtime must see the same ``cuda.h`` (its ``CUDA_VERSION`` picks the driver entry
    points), and a search of its own could find another toolkit (one without nvcc, say).
    None: the module found none, so the runtime searches for the headers as C++ that
    launches images does."""
    return Spec(
        spec.api,
        f"{spec.name} (its CUDA launcher runtime)",  # names the user's module in errors
        cflags=[OPTIMIZE, *flags, DEFINE],
        # In the module's order: the CUDA directories before the user's (see _plan).
        include_paths=spec.include_paths,
        cuda_include_dirs=cuda_includes or [],
        object_output=True,
        cuda_runtime=cuda_includes is None,
        entry_stem=STEM,
    )


def prebuilt_object(flags: list[str], include_paths: list[str]) -> Path | None:
    """The package's prebuilt launcher object for a module compiled with ``flags`` (from
    :func:`runtime_flags`) and ``include_paths``, or None when the runtime must be compiled
    with the module's flags: a flag that may change the launcher, an include path that
    holds headers of the package's name (they would shadow the ones it was built from),
    or no prebuilt object whose headers are the package's current ones."""
    if not _prebuilt.launcher_flags_fit(flags):
        return None
    for path in map(Path, include_paths):
        if (path / "tvm" / "ffi").exists() or (path / "dlpack").exists():
            return None
    found = _prebuilt.current()
    if found is None:
        return None
    obj = found[0] / _prebuilt.LAUNCHER_OBJECT
    return obj if obj.is_file() else None
