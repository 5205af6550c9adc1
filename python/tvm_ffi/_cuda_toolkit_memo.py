"""The process's CUDA (see :mod:`._cuda_toolkit`), remembered in the cache root: a process that
only loads cached modules then neither spawns nvcc nor imports cuda-pathfinder."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

from . import _cuda_toolkit
from ._cuda_toolkit import CudaInstall
from ._private_dir import replace_atomically

__all__ = ["memo_file", "recall", "remember"]


def memo_file(cache_root: str, search_path: str | None) -> Path:
    import glob
    import shutil

    # A wheel installed since changes the stamp of nvidia/, nvidia/cu13 or one of its
    # directories (crt/ goes to include/, nvcc to bin/); a new nvcc on PATH its own: the
    # key (and the answer) changes with them.
    watched = [shutil.which("nvcc", path=search_path), *_cuda_toolkit._SYSTEM_ROOTS]
    for site_dir in _cuda_toolkit._site_dirs():
        watched.append(os.path.join(site_dir, "nvidia"))
        watched += sorted(glob.glob(os.path.join(site_dir, "nvidia", "*", "")))
        watched += sorted(glob.glob(os.path.join(site_dir, "nvidia", "*", "*", "")))
    stamps = []
    for path in watched:
        try:
            stamps.append([path, os.stat(path).st_mtime_ns if path else None])
        except OSError:
            stamps.append([path, None])
    inputs = [search_path, os.environ.get("CONDA_PREFIX"), sys.prefix, stamps]
    digest = hashlib.sha256(json.dumps(inputs).encode()).hexdigest()[:20]
    return Path(cache_root) / "toolchain" / f"cuda-{digest}.json"


def _path(text: str | None) -> Path | None:
    return None if text is None else Path(text)


def recall(memo: Path) -> CudaInstall | None:
    try:
        record = json.loads(memo.read_text())
        install = CudaInstall(
            root=Path(record["root"]),
            how=str(record["how"]),
            include_dirs=tuple(Path(p) for p in record["include_dirs"]),
            cccl_dir=_path(record["cccl_dir"]),
            nvcc=_path(record["nvcc"]),
            cudart=_path(record["cudart"]),
            missing=tuple(str(key) for key in record["missing"]),
            passed_over=tuple(str(note) for note in record["passed_over"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
    present = [install.nvcc, install.cudart]
    headers = any((d / "cuda_runtime.h").exists() for d in install.include_dirs)
    if not headers or not all(p is None or p.exists() for p in present):
        return None  # uninstalled since: search again
    return install


def remember(memo: Path, install: CudaInstall) -> None:
    record = {
        "root": str(install.root),
        "how": install.how,
        "include_dirs": [str(d) for d in install.include_dirs],
        "cccl_dir": str(install.cccl_dir) if install.cccl_dir else None,
        "nvcc": str(install.nvcc) if install.nvcc else None,
        "cudart": str(install.cudart) if install.cudart else None,
        "missing": list(install.missing),
        "passed_over": list(install.passed_over),
    }
    try:
        memo.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        replace_atomically(memo, json.dumps(record).encode())
    except OSError:
        pass  # only a shortcut for the next process
