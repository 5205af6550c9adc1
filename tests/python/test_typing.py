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

# The containers are the tvm-ffi C ABI's (Array, Map, Optional), as apache-tvm-ffi's headers
# have them.
SOURCE = r"""
#include <cstdint>

#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/optional.h>

using namespace tvm::ffi;
TVM_FFI_DLL_EXPORT_TYPED_FUNC(add, [](int64_t a, int64_t b) { return a + b; });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(noop, []() {});
TVM_FFI_DLL_EXPORT_TYPED_FUNC(mixed, [](TensorView, Array<int64_t>, Map<String, int64_t>,
                                        Optional<double>) { return String("x"); });
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
        # A C type's attribute hook is tp_getattro, which Python shows as __getattribute__;
        # the stub spells it __getattr__, the form type checkers read.
        wanted = {"__getattribute__" if n == "__getattr__" else n for n in stub[cls]}
        assert all(hasattr(runtime, n) for n in wanted), (cls, wanted)


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
        'note: Revealed type is "tvm_ffi.module.Module"',
        'note: Revealed type is "tvm_ffi._core.Function"',
        'note: Revealed type is "int"',
        'note: Revealed type is "list[str]"',
        'note: Revealed type is "str"',
        'error: "int" has no attribute "upper"  [attr-defined]',
        "Found 1 error in 1 file (checked 1 source file)",
    ], proc.stdout + proc.stderr


# Two mistakes a checker must catch before anything runs: a misspelt kernel method (the
# kernel's type comes through mod[...] and get_kernel) and a value outside a closed set.
MISTAKES = """\
from tvm_ffi import cpp
from tvm_ffi.cpp.nvrtc import nvrtc_compile
from tvm_ffi.cuda import CubinModule, LaunchConfig

mod = CubinModule(b"")
mod["k"].lanch(1, 1, ())
mod.get_kernel("k").lanch(1, 1, ())
mod["k"].launch(1, 1, (), shared_mem=0)
nvrtc_compile("", output="cubn")
nvrtc_compile("", output="fatbin")
LaunchConfig(cluster_scheduling="spred")
cpp.load_inline("m", cpp_sources="", backend="hip")
"""


def test_mypy_catches_a_misspelt_kernel_method_and_a_bad_literal(tmp_path):
    (tmp_path / "probe.py").write_text(MISTAKES)
    cmd = [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"), "probe.py"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, check=False)
    assert proc.stdout.splitlines() == [
        'probe.py:6: error: "CubinKernel" has no attribute "lanch"; maybe "launch"?  '
        "[attr-defined]",
        'probe.py:7: error: "CubinKernel" has no attribute "lanch"; maybe "launch"?  '
        "[attr-defined]",
        'probe.py:9: error: Argument "output" to "nvrtc_compile" has incompatible type '
        "\"Literal['cubn']\"; expected \"Literal['cubin', 'ptx', 'fatbin']\"  [arg-type]",
        'probe.py:11: error: Argument "cluster_scheduling" to "LaunchConfig" has incompatible '
        "type \"Literal['spred']\"; expected \"Literal['default', 'spread', 'load_balancing'] "
        '| None"  [arg-type]',
        'probe.py:12: error: Argument "backend" to "load_inline" has incompatible type '
        "\"Literal['hip']\"; expected \"Literal['cuda'] | None\"  [arg-type]",
        "Found 5 errors in 1 file (checked 1 source file)",
    ], proc.stdout + proc.stderr


@pytest.mark.skipif(importlib.util.find_spec("pyright") is None, reason="needs pyright")
def test_pyright_catches_a_misspelt_kernel_method_and_a_bad_literal(tmp_path):
    import json

    (tmp_path / "probe.py").write_text(MISTAKES)
    cmd = [sys.executable, "-m", "pyright", "--outputjson", "probe.py"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, check=False)
    report = json.loads(proc.stdout)
    found = [
        (d["range"]["start"]["line"] + 1, d["rule"], d["message"].splitlines()[0])
        for d in report["generalDiagnostics"]
    ]
    lanch = 'Cannot access attribute "lanch" for class "CubinKernel"'
    assert found == [
        (6, "reportAttributeAccessIssue", lanch),
        (7, "reportAttributeAccessIssue", lanch),
        (9, "reportArgumentType", 'Argument of type "Literal[\'cubn\']" cannot be assigned to '
         'parameter "output" of type "Output" in function "nvrtc_compile"'),
        (11, "reportArgumentType", 'Argument of type "Literal[\'spred\']" cannot be assigned to '
         'parameter "cluster_scheduling" of type "Literal[\'default\', \'spread\', '
         '\'load_balancing\'] | None" in function "__init__"'),
        (12, "reportArgumentType", 'Argument of type "Literal[\'hip\']" cannot be assigned to '
         'parameter "backend" of type "Backend" in function "load_inline"'),
    ], proc.stdout  # fmt: skip
