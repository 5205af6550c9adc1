"""The package build's C++ runtime check (setup.py's ``cxx_runtime_problem``) for libraries the
test helpers link: a library carrying its own static C++ runtime can crash a process that
later imports torch (docs/dev/cxx_runtime.md), so a helper refuses it as the package build does.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def _setup_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tvm_ffi_setup_for_helpers", ROOT / "setup.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # setup() runs only under __main__
    return module


def check(path: Path, what: str) -> None:
    """Raise RuntimeError naming ``what`` when the C++ library at ``path`` carries its own C++
    runtime (the caller then deletes it, so no such library is ever cached)."""
    problem = _setup_module().cxx_runtime_problem(str(path), "c++")
    if problem is not None:
        raise RuntimeError(
            f"{what} was refused: {problem}; tests would run a library that can crash a later "
            "`import torch` (docs/dev/cxx_runtime.md). Build with a compiler that links the "
            "shared libstdc++ (CXX=/usr/bin/g++)"
        )
