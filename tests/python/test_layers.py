"""The package's imports go one way (CONTRIBUTING.md, Layout): its own modules, then
``utils/``, then ``cpp/``, then ``cache/`` (the command line over cpp's cache); a module
imports only its own layer and those before it.
Function-local imports count too: a cycle hidden inside a function is still a cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "tvm_ffi"
LAYERS = {"utils": 1, "cpp": 2, "cache": 3}  # any other name: the package's own modules, layer 0


def _layer(module: str) -> int:
    parts = module.split(".")
    return LAYERS.get(parts[1], 0) if len(parts) > 1 else 0


def _name(path: Path, package: Path) -> list[str]:
    parts = ["tvm_ffi", *path.relative_to(package).with_suffix("").parts]
    return parts[:-1] if parts[-1] == "__init__" else parts


def _upward_imports(path: Path, package: Path = PACKAGE) -> list[str]:
    """Every import in ``path`` (a file of ``package``) of a later layer than its own."""
    module = _name(path, package)
    here = module if path.name == "__init__.py" else module[:-1]  # where "." points
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            target = ".".join([*base, *([node.module] if node.module else [])])
            names = [f"{target}.{alias.name}" for alias in node.names]
        else:
            continue
        found += [
            f"line {node.lineno}: {name}"
            for name in names
            if name.split(".")[0] == "tvm_ffi" and _layer(name) > _layer(".".join(module))
        ]
    return found


def _modules() -> list[Path]:
    # The package's __init__ is its front door: it names cpp and utils for type checkers
    # and loads them on first attribute access.
    return [p for p in sorted(PACKAGE.rglob("*.py")) if p != PACKAGE / "__init__.py"]


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_go_one_way(path):
    assert _upward_imports(path) == []


def test_an_upward_import_is_seen_even_inside_a_function(tmp_path):
    (tmp_path / "utils").mkdir()
    module = tmp_path / "utils" / "_tool.py"
    module.write_text(
        "from . import _image\n"
        "from .. import _elf\n"
        "def find():\n"
        "    from tvm_ffi.cpp._toolchain import find_cuda_tool\n"
        "    from ..cpp import _build\n"
    )
    assert _upward_imports(module, tmp_path) == [
        "line 4: tvm_ffi.cpp._toolchain.find_cuda_tool",
        "line 5: tvm_ffi.cpp._build",
    ]
