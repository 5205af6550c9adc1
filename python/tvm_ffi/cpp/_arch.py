"""Choose the GPU architectures nvcc compiles ``cuda_sources`` for.

Order: ``TVM_FFI_CUDA_ARCH_LIST`` if set; else the compute capabilities of the visible
GPUs; else :data:`DEFAULT_ARCH_LIST`.

Asking the driver means ``cuInit``: tens of milliseconds, which would dominate a process
that only loads cached modules. So a build remembers the answer in
``<cache root>/gpu_archs.json``, keyed by :func:`tvm_ffi._cuda_driver.visible_gpus_fingerprint`
(visible-device variables, driver version, PCI bus ids). Without that fingerprint (no
``/proc/driver/nvidia``) the GPUs are asked live, once per process.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path
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


_ARCH_CACHE_FILE = "gpu_archs.json"
_ARCH_CACHE_FORMAT = 1
# (cache root, fingerprint) -> capabilities: a process reads the file at most once.
_arch_memo: dict[tuple[str, str], list[tuple[int, int]]] = {}


def _live_capabilities() -> list[tuple[int, int]]:
    from tvm_ffi import _cuda_driver

    caps = _cuda_driver.torch_capabilities()
    return caps if caps is not None else _cuda_driver.compute_capabilities()


def _read_arch_cache(path: Path, fingerprint: str) -> list[tuple[int, int]] | None:
    import json

    try:
        record = json.loads(path.read_text())
        if record["format"] != _ARCH_CACHE_FORMAT or record["fingerprint"] != fingerprint:
            return None
        caps = [(int(major), int(minor)) for major, minor in record["capabilities"]]
    except (OSError, ValueError, TypeError, KeyError):  # absent, corrupt or foreign: ask again
        return None
    return caps or None


def _write_arch_cache(path: Path, fingerprint: str, caps: list[tuple[int, int]]) -> None:
    import json

    record = {"format": _ARCH_CACHE_FORMAT, "fingerprint": fingerprint, "capabilities": caps}
    from ._cache import replace_atomically

    # Several processes may write at once: a reader sees a whole record or none. A read-only
    # cache still builds; the next process just asks again.
    with contextlib.suppress(OSError):
        replace_atomically(path, json.dumps(record).encode())


def detected_capabilities(cache_root: Path | None = None) -> list[tuple[int, int]]:
    """``(major, minor)`` of the visible GPUs; remembered under ``cache_root`` if given.

    An empty answer (no GPU, or a driver that failed) is never remembered, so a fixed
    machine is seen at the next build.
    """
    from tvm_ffi import _cuda_driver

    fingerprint = None if cache_root is None else _cuda_driver.visible_gpus_fingerprint()
    if fingerprint is None:
        return _live_capabilities()
    memo_key = (str(cache_root), fingerprint)
    caps = _arch_memo.get(memo_key)
    if caps is None:
        path = cache_root / _ARCH_CACHE_FILE
        caps = _read_arch_cache(path, fingerprint)
        if caps is None:
            caps = _live_capabilities()
            if not caps:
                return caps
            _write_arch_cache(path, fingerprint, caps)
        _arch_memo[memo_key] = caps
    return list(caps)


def target_archs(cache_root: Path | None = None) -> list[Arch]:
    """The architectures of this build (see the module doc for the order).

    With ``cache_root`` (the build cache's root, already checked to be private), the
    detected GPUs are remembered there across processes.
    """
    text = os.environ.get(_ENV, "").strip()
    if text:
        return parse_arch_list(text)
    caps = sorted(set(detected_capabilities(cache_root)))
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
