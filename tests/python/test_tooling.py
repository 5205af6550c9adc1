"""The lint configuration stays runnable where CI runs it (.ci/run runs every hook): hooks
need no GitHub, their tools are pinned, and the clang-format exclusions name real files."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CONFIG = (REPO / ".pre-commit-config.yaml").read_text()


def test_every_hook_is_local_with_pinned_tools():
    # CI and developer machines reach PyPI, not GitHub, where a `repo: https://...` hook lives.
    assert re.findall(r"^\s*- repo: (\S+)", CONFIG, re.M) == ["local"]
    hooks = re.findall(r"^\s*- id: (\S+)", CONFIG, re.M)
    assert hooks == ["ruff-check", "ruff-format", "clang-format", "shellcheck", "codespell", "mypy"]
    deps = re.findall(r"^\s*additional_dependencies: \[(.*)\]", CONFIG, re.M)
    assert len(deps) == len(hooks)
    for dep in deps:
        assert re.fullmatch(r"[\w.-]+==[\w.]+", dep), f"unpinned hook tool: {dep}"


def test_ci_runs_every_hook_with_pinned_pre_commit():
    ci = (REPO / ".ci" / "run").read_text()
    assert "pre_commit run --all-files --show-diff-on-failure" in ci
    assert re.search(r"^pre-commit==[\d.]+$", (REPO / ".ci" / "constraints.txt").read_text(), re.M)


def test_clang_format_ignore_names_existing_files():
    # A file moved or deleted leaves a line that excludes nothing: the file's new path would
    # be checked while its old name stays here looking like an exclusion.
    lines = (REPO / ".clang-format-ignore").read_text().splitlines()
    entries = [ln for ln in lines if ln.strip() and not ln.startswith("#")]
    assert entries
    missing = [e for e in entries if not (REPO / e).is_file()]
    assert not missing, f".clang-format-ignore names files that do not exist: {missing}"
