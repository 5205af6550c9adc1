"""docs/guides/safety.md: every promise names the tests that hold it, and they exist."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SAFETY = REPO / "docs" / "guides" / "safety.md"

_TESTS = re.compile(r"<!--\s*tests:\s*(.*?)\s*-->", re.S)


def _promises() -> list[str]:
    """The text of each bullet ("- **promise.** ...", up to the next bullet or heading)."""
    return re.split(r"\n(?=- \*\*|#)", SAFETY.read_text(encoding="utf-8"))


def test_every_promise_names_its_tests():
    bullets = [part for part in _promises() if part.startswith("- **")]
    assert len(bullets) >= 15
    untested = [part.splitlines()[0] for part in bullets if not _TESTS.search(part)]
    assert untested == []


def test_named_tests_exist():
    named = [
        name for comment in _TESTS.findall(SAFETY.read_text(encoding="utf-8"))
        for name in comment.split()
    ]  # fmt: skip
    missing = []
    for item in named:
        path, _, test = item.partition("::")
        source = REPO / path
        if not source.is_file() or not re.search(
            rf"^def {re.escape(test)}\(", source.read_text(encoding="utf-8"), re.M
        ):
            missing.append(item)
    assert missing == []
    assert len(named) >= 40
