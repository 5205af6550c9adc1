"""Choose the GPU architectures nvcc compiles ``cuda_sources`` for.

Order: an architecture flag in ``extra_cuda_cflags``; else ``arch=``; else
``TVM_FFI_CUDA_ARCH_LIST`` if set; else the compute capabilities of the visible GPUs;
else :data:`DEFAULT_ARCH_LIST`.

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

__all__ = [
    "DEFAULT_ARCH_LIST",
    "Arch",
    "arch_argument",
    "choose",
    "gencode_flags",
    "parse_arch_list",
    "target_archs",
    "user_arch_flag",
]

#: Used when no GPU is visible and the variable is unset. SASS for Turing (7.5),
#: Ampere and Ada (8.0 runs on 8.6/8.7/8.9), Hopper (9.0), plus compute_90 PTX that the
#: driver JIT-compiles for anything newer (Blackwell). Needs CUDA 11.8 or newer.
DEFAULT_ARCH_LIST = "7.5;8.0;9.0+PTX"

_ENV = "TVM_FFI_CUDA_ARCH_LIST"
# 8.0 | 9.0a | 10.0f | sm_90 | sm_90a | compute_90 | 90 | 100a, each optionally +PTX.
_DOTTED = re.compile(r"^(\d+)\.(\d)([af]?)$")
_PACKED = re.compile(r"^(?:sm_|compute_)?(\d+)(\d)([af]?)$")


class Arch(NamedTuple):
    """One target: compute capability ``major.minor``, suffix ``""``/``"a"``/``"f"``, and
    what to build for it: machine code (``sass``, the default) and/or PTX (``ptx``)."""

    major: int
    minor: int
    suffix: str = ""
    ptx: bool = False
    sass: bool = True

    def __str__(self) -> str:
        number = f"{self.major}{self.minor}{self.suffix}"
        if not self.sass:  # PTX only: nvcc's name for it
            return f"compute_{number}"
        return f"{self.major}.{self.minor}{self.suffix}" + ("+PTX" if self.ptx else "")


#: The spellings every architecture argument accepts (for error messages).
GRAMMAR = "9.0, 90, sm_90, compute_90, 9.0a, sm_90a, 10.0f, each optionally +PTX"


def parse_arch_list(text: str, *, source: str = _ENV) -> list[Arch]:
    """Parse a list of architectures; entries are separated by ``;``, ``,`` or spaces.

    One grammar for ``TVM_FFI_CUDA_ARCH_LIST``, ``arch=`` of the JIT functions and of
    ``nvrtc_compile``, and CMake's ``ARCH``: ``9.0``, ``90`` and ``sm_90`` name the
    machine code of compute capability 9.0; ``compute_90`` its PTX only; ``a``/``f``
    suffixes (``9.0a``, ``sm_90a``, ``10.0f``) the arch- and family-specific targets;
    ``+PTX`` adds the PTX of that entry. Two entries for one target are merged.

    Raises
    ------
    ValueError
        An entry is not understood or the list is empty; the message names ``source``.
    """
    archs: dict[tuple[int, int, str], Arch] = {}
    for token in re.split(r"[;,\s]+", text.strip()):
        if not token:
            continue
        body, ptx = token, False
        if body.lower().endswith("+ptx"):
            body, ptx = body[:-4], True
        match = _DOTTED.match(body) or _PACKED.match(body)
        if match is None or int(match.group(1)) == 0:
            raise ValueError(f"{source}: cannot parse {token!r} (expected {GRAMMAR})")
        sass = not body.startswith("compute_")
        ptx = ptx or not sass  # compute_90 is PTX
        key = (int(match.group(1)), int(match.group(2)), match.group(3))
        seen = archs.get(key)
        if seen is not None:
            ptx, sass = ptx or seen.ptx, sass or seen.sass
        archs[key] = Arch(*key, ptx=ptx, sass=sass)
    if not archs:
        raise ValueError(f"{source}: no architecture given (got {text!r})")
    return list(archs.values())


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
    return target_archs_and_origin(cache_root)[0]


def target_archs_and_origin(cache_root: Path | None = None) -> tuple[list[Arch], str]:
    """:func:`target_archs`, and where they came from (for the log)."""
    text = os.environ.get(_ENV, "").strip()
    if text:
        return parse_arch_list(text), _ENV
    caps = sorted(set(detected_capabilities(cache_root)))
    if caps:
        return [Arch(major, minor) for major, minor in caps], "the visible GPUs"
    default = parse_arch_list(DEFAULT_ARCH_LIST, source="DEFAULT_ARCH_LIST")
    return default, "the default list (no GPU visible)"


# nvcc options that choose architectures, alone ("-arch", "sm_90") or with "=".
_ARCH_OPTIONS = ("-gencode", "--generate-code", "-arch", "--gpu-architecture")


def user_arch_flag(flags: list[str]) -> str | None:
    """The first flag in ``flags`` that chooses nvcc's architectures, None if none does."""
    for flag in flags:
        for option in _ARCH_OPTIONS:
            if flag == option or flag.startswith(option + "="):
                return flag
    return None


def arch_argument(api: str, value: object) -> list[Arch] | None:
    """Check ``arch=`` of the JIT functions: None, a str in the grammar of
    :func:`parse_arch_list`, or a list of such str."""
    if value is None:
        return None
    if isinstance(value, str):
        return parse_arch_list(value, source=f"{api}: arch")
    if isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value):
        return parse_arch_list(";".join(value), source=f"{api}: arch")
    raise TypeError(f"{api}: arch must be a str or a list of str (got {value!r:.80})")


def choose(
    requested: list[Arch] | None, cuda_cflags: list[str], cache_root: Path | None
) -> tuple[list[str], str]:
    """The ``-gencode`` flags of a build, and a line for the log saying which and why.

    An architecture flag of the user's own in ``cuda_cflags`` replaces ours (as in
    torch), so a ``-gencode ... sm_90a`` is not built for sm_75 as well; ``arch=``
    comes next, then :func:`target_archs`.
    """
    flag = user_arch_flag(cuda_cflags)
    if flag is not None:
        return [], f"those of extra_cuda_cflags ({flag})"
    if requested is not None:
        archs, origin = requested, "arch="
    else:
        archs, origin = target_archs_and_origin(cache_root)
    return gencode_flags(archs), f"{' '.join(map(str, archs))} (from {origin})"


def gencode_flags(archs: list[Arch]) -> list[str]:
    """nvcc ``-gencode`` flags: machine code and/or PTX for each arch, as it asks."""
    flags = []
    for arch in archs:
        number = f"{arch.major}{arch.minor}{arch.suffix}"
        if arch.sass:
            flags.append(f"-gencode=arch=compute_{number},code=sm_{number}")
        if arch.ptx:
            flags.append(f"-gencode=arch=compute_{number},code=compute_{number}")
    return flags
