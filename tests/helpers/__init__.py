"""What several test modules share: C/C++ sources built into test libraries, source texts and
GPU helpers. pyproject's ``[tool.pytest.ini_options] pythonpath`` puts tests/ on sys.path, so
a test imports them as ``from helpers import gpu``; ``helpers.SOURCES`` is this folder, for
the C/C++ files the tests compile."""

from __future__ import annotations

from pathlib import Path

SOURCES = Path(__file__).resolve().parent
