"""Choose the GPU architectures nvcc compiles ``cuda_sources`` for.

Order: ``TVM_FFI_CUDA_ARCH_LIST`` if set; else the compute capabilities of the visible
GPUs (asked of the driver once per process); else :data:`DEFAULT_ARCH_LIST`.
"""

from __future__ import annotations

import os
import re
from typing import NamedTuple

__all__ = ["DEFAULT_ARCH_LIST", "Arch", "gencode_flags", "parse_arch_list", "target_archs"]

#: Used when no GPU is visible and the variable is unset. SASS for Turing (7.5),
#: Ampere and Ada (8.0 runs on 8.6/8.7/8.9), Hopper (9.0), plus compute_90 PTX that the
#: driver JIT-compiles for anything newer (Blackwell). Needs CUDA 11.8 or newer.
DEFAULT_ARCH_LIST = "7.5;8.0;9.0+PTX"

_ENV = "TVM_FFI_CUDA_ARCH_LIST"
# 8.0 | 9.0a | 10.0f | sm_90 | sm_90a | compute_90 | 90 | 100a, each optionally +PTX.
_DOTTED = re.compile(r"^(\d+)\.(\d)([af]?)$")
_PACKED = re.compile(r"^(?:sm_|compute_)?(\d+)(\d)([af]?)$")


class Arch(NamedTuple):
    """One target: compute capability ``major.minor``, suffix ``""``/``"a"``/``"f"``, PTX too?"""

    major: int
    minor: int
    suffix: str = ""
    ptx: bool = False

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}{self.suffix}" + ("+PTX" if self.ptx else "")


def parse_arch_list(text: str, *, source: str = _ENV) -> list[Arch]:
    """Parse ``"8.0;9.0a"``, ``"8.0 9.0+PTX"``, ``"sm_90"``, ``"90"`` (``;``, ``,`` or spaces).

    Raises
    ------
    ValueError
        An entry is not understood or the list is empty; the message names ``source``.
    """
    archs: list[Arch] = []
    for token in re.split(r"[;,\s]+", text.strip()):
        if not token:
            continue
        body, ptx = token, False
        if body.lower().endswith("+ptx"):
            body, ptx = body[:-4], True
        match = _DOTTED.match(body) or _PACKED.match(body)
        if match is None:
            raise ValueError(
                f"{source}: cannot parse {token!r} (expected entries like "
                "8.0, 9.0a, 9.0+PTX, sm_90 or 90)"
            )
        arch = Arch(int(match.group(1)), int(match.group(2)), match.group(3), ptx)
        if arch not in archs:
            archs.append(arch)
    if not archs:
        raise ValueError(f"{source}: no architecture given (got {text!r})")
    return archs


def target_archs() -> list[Arch]:
    """The architectures of this build (see the module doc for the order)."""
    text = os.environ.get(_ENV, "").strip()
    if text:
        return parse_arch_list(text)
    from tvm_ffi._cuda_driver import compute_capabilities

    caps = sorted(set(compute_capabilities()))
    if caps:
        return [Arch(major, minor) for major, minor in caps]
    return parse_arch_list(DEFAULT_ARCH_LIST, source="DEFAULT_ARCH_LIST")


def gencode_flags(archs: list[Arch]) -> list[str]:
    """nvcc ``-gencode`` flags: SASS for each arch, plus PTX where ``+PTX`` was asked."""
    flags = []
    for arch in archs:
        number = f"{arch.major}{arch.minor}{arch.suffix}"
        flags.append(f"-gencode=arch=compute_{number},code=sm_{number}")
        if arch.ptx:
            flags.append(f"-gencode=arch=compute_{number},code=compute_{number}")
    return flags
