"""Types for users' checkers and IDEs: the package is marked typed, the compiled core has a
stub that matches it, and exported functions have a signature that inspect and help() show."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import pydoc
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import tvm_ffi
from tvm_ffi import _core

PACKAGE = Path(tvm_ffi.__file__).resolve().parent

SOURCE = r"""
#include <cstdint>
#include <optional>
#include <vector>

#include <tvm/ffi/container/map.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>

TVM_FFI_DLL_EXPORT_TYPED_FUNC(add, [](int64_t a, int64_t b) { return a + b; });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(noop, []() {});
TVM_FFI_DLL_EXPORT_TYPED_FUNC(mixed, [](tvm::ffi::TensorView, std::vector<int64_t>,
                                        tvm::ffi::Map<tvm::ffi::String, int64_t>,
                                        std::optional<double>) { return std::string("x"); });
"""


@pytest.fixture(scope="module")
def mod(build_library):
    return tvm_ffi.load_module(build_library("typing_sigs", SOURCE))


def test_package_is_marked_typed():
    assert (PACKAGE / "py.typed").is_file()
    assert (PACKAGE / "_core.pyi").is_file()


def _stub_names() -> dict[str, set[str]]:
    """{"": top-level names, "Class": its members} declared in _core.pyi."""
    tree = ast.parse((PACKAGE / "_core.pyi").read_text())
    names: dict[str, set[str]] = {"": set()}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names[""].add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[""].add(node.target.id)
        if isinstance(node, ast.ClassDef):
            names[node.name] = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
    return names


def test_stub_matches_the_compiled_core():
    stub = _stub_names()
    classes = ["Function", "Module", "Object", "Tensor", "CubinKernel"]
    assert {n for n in stub[""] if not n.startswith("_")} == {
        n for n in dir(_core) if not n.startswith("_")
    }
    assert all(hasattr(_core, n) for n in stub[""])
    for cls in classes:
        runtime = getattr(_core, cls)
        public = {n for n in vars(runtime) if not n.startswith("_")}
        assert {n for n in stub[cls] if not n.startswith("_")} == public, cls
        assert all(hasattr(runtime, n) for n in stub[cls]), cls


def test_signature(mod):
    assert str(inspect.signature(mod.add)) == "(arg0: int, arg1: int, /) -> int"
    assert str(inspect.signature(mod.noop)) == "() -> None"
    assert str(inspect.signature(mod.mixed)) == (
        "(arg0: Tensor, arg1: list[int], arg2: dict[str, int], arg3: float | None, /) -> str"
    )
    assert mod.add.__text_signature__ == "(arg0, arg1, /)"
    assert mod.noop.__text_signature__ == "()"
    # Annotations are the type names as strings (forward references), not evaluated.
    param = inspect.signature(mod.mixed).parameters["arg3"]
    assert param.annotation == "float | None"
    assert param.kind is inspect.Parameter.POSITIONAL_ONLY
    # Positional-only, as the call is: binding keywords fails like calling with them does.
    with pytest.raises(TypeError):
        inspect.signature(mod.add).bind(arg0=1, arg1=2)
    assert "add(int, int) -> int" in pydoc.render_doc(mod.add, renderer=pydoc.plaintext)


def test_signature_without_types():
    from tvm_ffi._signature import from_text

    # Text without the `name(...) -> R` form, or naming another count: names only.
    assert str(from_text("f", 2)) == "(arg0, arg1, /)"
    assert str(from_text("f(int) -> int", 2)) == "(arg0, arg1, /)"
    assert str(from_text("f(tuple[int, ...], int) -> None", 2)) == (
        "(arg0: tuple[int, ...], arg1: int, /) -> None"
    )


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="needs mypy (test extra)")
def test_mypy_sees_the_types(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(
        textwrap.dedent(
            """
            import tvm_ffi
            from tvm_ffi import cpp

            mod = cpp.load_inline("m", cpp_sources="")
            reveal_type(mod)
            reveal_type(mod.add)
            reveal_type(mod.add.num_args)
            reveal_type(tvm_ffi.load_module("lib.so").functions)
            reveal_type(tvm_ffi.config.get_include_dir())
            mod.add.num_args.upper()
            """
        )
    )
    cmd = [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"), str(probe)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, check=False)
    lines = [line.removeprefix("probe.py:") for line in proc.stdout.splitlines()]
    lines = [line.split(": ", 1)[-1] for line in lines]
    assert lines == [
        'note: Revealed type is "tvm_ffi._core.Module"',
        'note: Revealed type is "tvm_ffi._core.Function"',
        'note: Revealed type is "int"',
        'note: Revealed type is "list[str]"',
        'note: Revealed type is "str"',
        'error: "int" has no attribute "upper"  [attr-defined]',
        "Found 1 error in 1 file (checked 1 source file)",
    ], proc.stdout + proc.stderr
