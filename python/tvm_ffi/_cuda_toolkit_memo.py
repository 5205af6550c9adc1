"""The process's CUDA (see :mod:`._cuda_toolkit`), remembered in the cache root: a process that
only loads cached modules then neither spawns nvcc nor imports cuda-pathfinder.

This module keeps the record (a JSON object) and knows nothing of what it describes: the
toolkit module turns it into a ``CudaInstall`` and back and checks it still holds."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path

from ._private_dir import replace_atomically

__all__ = ["memo_file", "recall", "remember"]


def memo_file(cache_root: str, search_path: str | None, watched: Iterable[str | None]) -> Path:
    """The record's path: its name changes with ``search_path``, the interpreter and the
    modification times of the ``watched`` paths (where a CUDA could be installed since)."""
    stamps = []
    for path in watched:
        try:
            stamps.append([path, os.stat(path).st_mtime_ns if path else None])
        except OSError:
            stamps.append([path, None])
    inputs = [search_path, os.environ.get("CONDA_PREFIX"), sys.prefix, stamps]
    digest = hashlib.sha256(json.dumps(inputs).encode()).hexdigest()[:20]
    return Path(cache_root) / "toolchain" / f"cuda-{digest}.json"


def recall(memo: Path) -> dict | None:
    """The record written by :func:`remember`, or None where there is none to read."""
    try:
        record = json.loads(memo.read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def remember(memo: Path, record: dict) -> None:
    try:
        memo.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        replace_atomically(memo, json.dumps(record).encode())
    except OSError:
        pass  # only a shortcut for the next process
