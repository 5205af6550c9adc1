"""What the core headers make every translation unit instantiate, on load_inline's common path.

Compile time itself is benchmarks/header_cost.py's to measure (tests assert no timings). What is
asserted here is what keeps it low, read from g++'s list of the classes a translation unit
instantiated (``-fdump-lang-class``): the wrappers of header_cost.py, compiled as it compiles
them, instantiate no ``std::optional`` and the prelude alone no ``std::shared_ptr``. g++ 12 spends
on one ``std::optional<T>`` as long as on some 300 lines of these headers; the conversion path
(TypeTraits<T>::TryFromView, returning details::Maybe<T>) once named fourteen of them in every
translation unit, and Error's text one shared_ptr (+8% CPU on -fsyntax-only against 1ba4b65).
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
INCLUDE = ROOT / "include"
CXX = os.environ.get("CXX", "c++")


def _header_cost():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        return importlib.import_module("header_cost")
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def _is_gcc() -> bool:
    proc = subprocess.run([CXX, "--version"], capture_output=True, text=True)
    return proc.returncode == 0 and "Free Software Foundation" in proc.stdout


pytestmark = pytest.mark.skipif(not _is_gcc(), reason=f"{CXX} is not g++ (-fdump-lang-class)")


def instantiated_classes(tmp_path: Path, source: str) -> list[str]:
    """The classes g++ laid out for `source` compiled as header_cost.py compiles it."""
    hc = _header_cost()
    src = tmp_path / "wrapper.cc"
    src.write_text(source)
    cmd = hc.command(CXX, INCLUDE, hc.cuda_include(), src, ["-fsyntax-only", "-fdump-lang-class"])
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr}"
    (dump,) = tmp_path.glob("*.class")
    return re.findall(r"^Class (\S.*)$", dump.read_text(), re.MULTILINE)


def test_prelude_wrapper_instantiates_no_optional_and_no_shared_ptr(tmp_path):
    classes = instantiated_classes(tmp_path, _header_cost().APACHE_STYLE)
    assert [c for c in classes if c.startswith("std::optional<")] == []
    assert [c for c in classes if c.startswith("std::__shared_ptr<")] == []


def test_guide_wrapper_instantiates_no_optional(tmp_path):
    hc = _header_cost()
    if hc.cuda_include() is None:
        pytest.skip("no cuda.h (set CUDA_HOME): the guide-style wrapper includes the launcher")
    classes = instantiated_classes(tmp_path, hc.GUIDE_STYLE)
    assert [c for c in classes if c.startswith("std::optional<")] == []
