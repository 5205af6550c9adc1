"""The CUDA architecture grammar: the one parser behind every place a user names a target.

``TVM_FFI_CUDA_ARCH_LIST``, ``arch=`` of the JIT functions and of ``nvrtc_compile``, and the
keys of ``CubinModule({arch: image})`` and ``make_fatbin`` all read it. CMake's
``tvm_ffi_generate_cubin(ARCH ...)`` parses in CMake (there is no Python at configure time);
tests/python/test_arch_grammar.py holds both to one table of spellings.

``9.0``, ``90`` and ``sm_90`` name the machine code (SASS) of compute capability 9.0;
``compute_90`` its PTX; ``a``/``f`` suffixes (``9.0a``, ``sm_90a``, ``10.0f``) the arch- and
family-specific targets; ``+PTX`` (any case) adds the PTX of an entry; ``native`` the GPUs of
this machine, alone in its list. Entries are separated by ``;``, ``,`` or spaces; a target
named twice is one target.

Imports only ``re`` and ``typing``; the driver is asked only to resolve ``native``.
"""

from __future__ import annotations

import re
from typing import Any, Callable, NamedTuple, Optional

__all__ = [
    "GRAMMAR",
    "Arch",
    "ArchSpellingError",
    "arch_text",
    "gencode_flags",
    "parse_arch",
    "parse_arch_list",
]

#: The spellings, for error messages (CMake's messages say the same).
GRAMMAR = "9.0, 90, sm_90, compute_90, 9.0a, sm_90a or 10.0f, each optionally +PTX, or native"

# 9.0a | sm_90a | compute_90a | 90a: (prefix, major, minor, suffix) alike.
_DOTTED = re.compile(r"()([1-9]\d*)\.(\d)([af]?)\Z")
_PACKED = re.compile(r"(sm_|compute_)?([1-9]\d*)(\d)([af]?)\Z")

#: Returns the ``(major, minor)`` that ``native`` stands for; empty when no GPU is visible.
Native = Optional[Callable[[], "list[tuple[int, int]]"]]


class ArchSpellingError(ValueError):
    """An entry that is no spelling of the grammar (the callers that name the value the
    user gave, as ``nvrtc_compile`` does, catch this one and let the others through)."""


class Arch(NamedTuple):
    """One target: compute capability ``major.minor``, suffix ``""``/``"a"``/``"f"``, and
    what to build for it: machine code (``sass``, the default) and/or PTX (``ptx``)."""

    major: int
    minor: int
    suffix: str = ""
    ptx: bool = False
    sass: bool = True

    @property
    def number(self) -> str:
        """``"90a"``: what follows ``sm_``/``compute_`` in nvcc's, NVRTC's and fatbinary's names."""
        return f"{self.major}{self.minor}{self.suffix}"

    def nvcc_names(self) -> list[str]:
        """``["sm_90", "compute_90"]``: the machine code and the PTX this target asks for."""
        sass = [f"sm_{self.number}"] if self.sass else []
        return sass + ([f"compute_{self.number}"] if self.ptx else [])

    def __str__(self) -> str:
        if not self.sass:  # PTX only: nvcc's name for it
            return f"compute_{self.number}"
        return f"{self.major}.{self.minor}{self.suffix}" + ("+PTX" if self.ptx else "")


def parse_arch_list(
    text: str, *, source: str = "TVM_FFI_CUDA_ARCH_LIST", native: Native = None
) -> list[Arch]:
    """The targets of a list in the grammar, in first-named order.

    ``native`` (default: the visible GPUs, asked through the driver) gives the compute
    capabilities that the spelling ``native`` stands for.

    Raises
    ------
    ValueError
        An entry is not understood (:class:`ArchSpellingError`), the list is empty, or
        ``native`` comes with other entries; the message starts with ``source``.
    RuntimeError
        ``native`` is asked for and no GPU is visible.
    """
    archs: dict[tuple[int, int, str], Arch] = {}
    natives = 0
    for token in re.split(r"[;,\s]+", text.strip()):
        if token == "native":
            natives += 1
        elif token:
            arch = _entry(token, source)
            seen = archs.get(arch[:3])
            if seen is not None:
                arch = arch._replace(ptx=arch.ptx or seen.ptx, sass=arch.sass or seen.sass)
            archs[arch[:3]] = arch
    if natives and archs:  # as nvcc, whose -arch=native takes no -gencode beside it
        raise ValueError(
            f"{source}: native cannot be combined with other architectures (got {text!r})"
        )
    if natives:
        return _native(source, native)
    if not archs:
        raise ArchSpellingError(f"{source}: no architecture given (got {text!r})")
    return list(archs.values())


def _entry(token: str, source: str) -> Arch:
    body, ptx = token, False
    if body.lower().endswith("+ptx"):
        body, ptx = body[:-4], True
    match = _DOTTED.match(body) or _PACKED.match(body)
    if match is None:
        raise ArchSpellingError(f"{source}: cannot parse {token!r} (expected {GRAMMAR})")
    prefix, major, minor, suffix = match.groups()
    sass = prefix != "compute_"
    return Arch(int(major), int(minor), suffix, ptx=ptx or not sass, sass=sass)


def _native(source: str, native: Native) -> list[Arch]:
    if native is None:
        from ._cuda_driver import compute_capabilities

        native = compute_capabilities
    capabilities = sorted(set(native()))
    if not capabilities:
        raise RuntimeError(
            f"{source}: native names the GPUs of this machine, but no CUDA GPU is visible; "
            "name the architecture (e.g. 9.0)"
        )
    return [Arch(major, minor) for major, minor in capabilities]


def arch_text(value: Any) -> str | None:
    """``value`` as a spelling: a str as it is, ``90`` as ``"90"``, ``(9, 0)`` as ``"9.0"``;
    None for any other type."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if (
        isinstance(value, tuple)
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        return f"{value[0]}.{value[1]}"
    return None


def parse_arch(value: Any, *, source: str, native: Native = None) -> Arch:
    """One target, for a key that names one image: a str of the grammar, ``90`` or
    ``(9, 0)``; ``native`` must then stand for one compute capability. Raises as
    :func:`parse_arch_list`: :class:`ArchSpellingError` for another type too, ValueError
    for several targets."""
    text = arch_text(value)
    if text is None:
        raise ArchSpellingError(f"{source}: cannot parse {value!r} (expected {GRAMMAR})")
    archs = parse_arch_list(text, source=source, native=native)
    if len(archs) != 1:
        named = ", ".join(map(str, archs))
        raise ValueError(f"{source}: {value!r} names {named}; give one architecture")
    return archs[0]


def gencode_flags(archs: list[Arch]) -> list[str]:
    """nvcc ``-gencode`` flags: machine code and/or PTX for each target, as it asks."""
    return [
        f"-gencode=arch=compute_{arch.number},code={name}"
        for arch in archs
        for name in arch.nvcc_names()
    ]
