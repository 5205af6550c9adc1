"""Claims the docs make about the repository that drifted once, checked against what they
describe: what the `test` extra brings, and how many doc blocks the docs test leaves out."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _test_extra() -> set[str]:
    """Distribution names of pyproject.toml's `test` extra, without version specifiers."""
    pyproject = (REPO / "pyproject.toml").read_text()
    body = re.search(r"^test = \[\n(.*?)^\]", pyproject, re.M | re.S)
    assert body, "pyproject.toml: no multi-line `test = [...]` extra"
    specs = re.findall(r'^\s*"([^"]+)"', body[1], re.M)
    return {re.split(r"[<>=!~;\[ ]", spec, maxsplit=1)[0] for spec in specs}


def test_install_md_lists_what_the_test_extra_brings():
    text = (REPO / "docs" / "install.md").read_text()
    sentence = re.search(r"The `test` extra brings (.*?)\. It", text, re.S)
    assert sentence, "docs/install.md: the sentence 'The `test` extra brings ...' is gone"
    listed = set(re.findall(r"`([\w.-]+)`", sentence[1])) - {"redis-server", ".ci/run"}
    assert listed == _test_extra()


def test_index_md_counts_the_doc_blocks_left_untested():
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    marker = re.compile(r"^\s*<!--\s*test:\s*skip\b")
    skipped = sum(
        1 for page in pages for line in page.read_text().splitlines() if marker.match(line)
    )
    claim = re.search(
        r"run or compiled by `tests/python/test_docs.py` except the\s+(\d+) marked",
        (REPO / "docs" / "index.md").read_text(),
    )
    assert claim, "docs/index.md no longer says how many blocks are marked skip"
    assert int(claim[1]) == skipped
