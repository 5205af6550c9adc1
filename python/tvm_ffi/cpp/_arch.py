"""Choose the GPU architectures nvcc compiles ``cuda_sources`` for.

Order: an architecture flag in ``extra_cuda_cflags``; else ``arch=``; else
``TVM_FFI_CUDA_ARCH_LIST`` if set; else the compute capabilities of the visible GPUs;
else :data:`DEFAULT_ARCH_LIST`. ``arch=`` and the variable are read by the package's one
grammar (``tvm_ffi._arch_grammar``); their ``native`` is the visible GPUs.

Asking the driver means ``cuInit``: tens of milliseconds, which would dominate a process
that only loads cached modules. So a build remembers the answer in
``<cache root>/gpu_archs.json``, keyed by :func:`tvm_ffi._cuda_driver.visible_gpus_fingerprint`
(visible-device variables, driver version, PCI bus ids). Without that fingerprint (no
``/proc/driver/nvidia``) the GPUs are asked live, once per process.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

# The grammar is the package's one (tvm_ffi.cuda and tvm_ffi.utils read it too); the
# names stay here for the JIT's callers.
from .._arch_grammar import GRAMMAR, Arch, gencode_flags, parse_arch_list

__all__ = [
    "DEFAULT_ARCH_LIST",
    "GRAMMAR",
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
        return parse_arch_list(text, native=lambda: detected_capabilities(cache_root)), _ENV
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
    :func:`parse_arch_list`, or a list of such str. ``native`` is resolved here, so that
    the cache key holds the GPUs' own targets."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value):
        value = ";".join(value)
    if isinstance(value, str):
        return parse_arch_list(value, source=f"{api}: arch", native=_live_capabilities)
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
