"""How many compile jobs run at once: :func:`job_count`, the one answer for ninja's ``-j``
of a module, for the modules ``load_inline_many`` builds at once, and for the builds that
run side by side in one call.

Cores alone are not the limit: a kernel library's heavy translation unit takes several GiB
per nvcc process (FlashInfer reports ~8 GiB for a CUTLASS unit), and a host that runs one
per core runs out of memory and locks up. So the count is the cores this process may use,
cut to the memory available (``MemAvailable``, and what a cgroup limit leaves) divided by an
estimate of one job's peak, at least one. ``MAX_JOBS`` (or ``max_jobs=``) sets it outright.
Read at every build, never on a cache hit.
"""

from __future__ import annotations

import os
import re

from . import _env

__all__ = ["DEVICE_JOB_MEMORY", "HOST_JOB_MEMORY", "available_memory", "job_count", "job_memory"]

JOB_MEMORY_ENV = "TVM_FFI_BUILD_JOB_MEMORY"
# A small module's compile peaks at ~70 MB (c++) and ~250 MB (nvcc, one architecture); code
# with heavy headers (torch's, CUTLASS's) takes GiBs: the estimates cover the common heavy
# case, and TVM_FFI_BUILD_JOB_MEMORY the heavier one.
HOST_JOB_MEMORY = 1 << 30
DEVICE_JOB_MEMORY = 4 << 30
# A cgroup limit at or above this is "no limit" (v1 writes that as a page-rounded LLONG_MAX).
_NO_LIMIT = 1 << 60
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def job_count(
    *,
    device: bool,
    limit: int | None = None,
    cores: int | None = None,
    proc: str = "/proc",
    cgroup: str = "/sys/fs/cgroup",
) -> int:
    """Compile jobs to run at once: ``limit`` (a caller's ``max_jobs``) or ``MAX_JOBS`` when
    given; else ``cores`` (default: those this process may run on), cut to the available
    memory over :func:`job_memory` (``device``: some job compiles device code), at least 1.
    ``proc`` and ``cgroup`` are where ``/proc`` and the cgroup file system are read.

    Raises
    ------
    ValueError
        ``MAX_JOBS`` or ``TVM_FFI_BUILD_JOB_MEMORY`` is malformed.
    """
    if limit is None:
        limit = _env.max_jobs()
    if limit is not None:
        return limit
    if cores is None:
        cores = _usable_cores()
    per_job = job_memory(device)
    available = available_memory(proc, cgroup)
    if available is None:
        return cores
    return max(1, min(cores, available // per_job))


def job_memory(device: bool) -> int:
    """Bytes one compile job is taken to need: ``TVM_FFI_BUILD_JOB_MEMORY`` when set, else
    :data:`DEVICE_JOB_MEMORY` for a build with device code, :data:`HOST_JOB_MEMORY` for one
    without."""
    text = os.environ.get(JOB_MEMORY_ENV, "").strip()
    if not text:
        return DEVICE_JOB_MEMORY if device else HOST_JOB_MEMORY
    match = re.fullmatch(r"(\d+(?:\.\d*)?)\s*([KMGT]?)(?:i?B)?", text, re.IGNORECASE)
    size = int(float(match.group(1)) * _UNITS[match.group(2).upper()]) if match else 0
    if size < 1:
        raise ValueError(
            f"{JOB_MEMORY_ENV} must be a size such as 4G, 512M or 1.5GiB (got {text!r})"
        )
    return size


def available_memory(proc: str = "/proc", cgroup: str = "/sys/fs/cgroup") -> int | None:
    """Bytes new processes can take: ``MemAvailable`` of ``<proc>/meminfo``, or less where
    a memory cgroup of this process (its own or an ancestor; v2 ``memory.max``, v1
    ``memory.limit_in_bytes``) leaves less. Reclaimable page cache (``inactive_file``)
    counts as free, as the kernel would reclaim it. None when nothing could be read."""
    found = []
    meminfo = _read(f"{proc}/meminfo")
    match = re.search(r"^MemAvailable:\s*(\d+) kB", meminfo or "", re.MULTILINE)
    if match:
        found.append(int(match.group(1)) * 1024)
    for directory, files in _memory_cgroups(proc, cgroup):
        limit, usage = (_number(_read(f"{directory}/{name}")) for name in files[:2])
        if limit is None or usage is None or limit >= _NO_LIMIT:
            continue
        stat = _read(f"{directory}/memory.stat") or ""
        match = re.search(rf"^{files[2]} (\d+)$", stat, re.MULTILINE)
        inactive = int(match.group(1)) if match else 0
        found.append(max(0, limit - max(0, usage - inactive)))
    return min(found) if found else None


# (limit, usage, reclaimable cache in memory.stat) of each cgroup version.
_V2_FILES = ("memory.max", "memory.current", "inactive_file")
_V1_FILES = ("memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file")


def _memory_cgroups(proc: str, cgroup: str) -> list[tuple[str, tuple[str, str, str]]]:
    """The memory cgroup directories of this process and of their ancestors that exist
    under ``cgroup``, with the file names of their version. A container that sees the
    host's path in ``/proc/self/cgroup`` has its own cgroup mounted as the root: the
    ancestors that do exist are then the mount's root and what lies under it."""
    out = []
    for line in (_read(f"{proc}/self/cgroup") or "").splitlines():
        fields = line.split(":", 2)  # hierarchy id, controllers, path
        if len(fields) != 3:
            continue
        _, controllers, path = fields
        if controllers == "" and os.path.exists(f"{cgroup}/cgroup.controllers"):
            base, files = cgroup, _V2_FILES
        elif "memory" in controllers.split(","):
            base, files = f"{cgroup}/memory", _V1_FILES
        else:
            continue
        parts = [part for part in path.split("/") if part]
        for depth in range(len(parts), -1, -1):
            directory = "/".join([base, *parts[:depth]])
            if os.path.isdir(directory):
                out.append((directory, files))
    return out


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as file:
            return file.read()
    except OSError:
        return None


def _number(text: str | None) -> int | None:
    """An integer file's value; "max" (cgroup v2's "no limit") is None, as is junk."""
    try:
        return int(text.strip()) if text is not None else None
    except ValueError:
        return None


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1
