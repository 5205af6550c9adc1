"""The new stack alone, no apache-tvm-ffi part in the process: a library built with the staging
headers (tests/abi/headers/boundary_lib.cc) and linked against the staging runtime, called from
the Python core on the C ABI (_core_next) built against that same runtime. Each part was tested
against apache's counterpart; this shows they also agree with each other."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "headers"))

import headers_build  # noqa: E402

from helpers import next_pycore, next_runtime  # noqa: E402


@functools.cache
def stack(tmp: Path) -> tuple[Path, Path, Path]:
    runtime = next_runtime.build()
    core = next_pycore.build(runtime.parent)
    lib = headers_build.compile_source(
        HERE / "headers" / "boundary_lib.cc", tmp / "libboundary.so", link_dir=runtime.parent
    )
    return runtime, core, lib


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    runtime, core, lib = stack(tmp_path_factory.mktemp("stack"))

    def go(code: str) -> str:
        prelude = f"LIB = {str(lib)!r}\n{next_pycore.CHILD_HELPERS}\nm = core.load_module(LIB)\n"
        return next_pycore.run_child(runtime, core, prelude + code)

    return go


def test_the_process_holds_our_runtime_only(run):
    out = run(r"""
maps = open("/proc/self/maps").read()
print(sorted({l.split()[-1] for l in maps.splitlines() if "libtvm_ffi" in l}))
""")
    (only,) = eval(out)
    assert Path(only) == next_runtime.build()


def test_values_cross(run):
    run(r"""
assert m.add_int(2, 3) == 5 and m.add_int(-2**63, 0) == -2**63
assert m.scale(1.5, 2) == 3.0 and m.negate(True) is False
assert m.concat("ab", "c") == "abc" and m.concat("ab", "cdefghijkl") == "abcdefghijkl"
assert m.str_len("hello") == 5
assert list(m.reverse_bytes(b"abcdefghij")) == list(b"jihgfedcba")
assert list(m.shape_double((1, 2, 3))) == [2, 4, 6]
assert m.sum_ints([1, 2, 3]) == 6
assert list(m.words(["a", "b"])) == ["a", "b", "end-of-the-list"]
assert [m.or_default(None), m.or_default(5)] == [-1, 5]
assert [m.maybe_name(True), m.maybe_name(False)] == ["a name longer than seven", None]
assert m.tuple_take((4, "abc")) == 7
assert [m.any_kind([1]), m.any_kind("s"), m.any_kind(None)] == ["Array", "str", "None"]
assert m.echo_any("longer string x") == "longer string x" and m.echo_any(1) == 1
""")


def test_functions_both_ways(run):
    run(r"""
assert m.call_back(lambda v, s: v * 10 + len(s), 4) == 42
assert m.make_adder(5)(10) == 15
def bad(v, s):
    raise ValueError(f"from the callback ({v}, {s})")
try:
    m.call_back(bad, 4)
except ValueError as e:
    assert "from the callback (4," in str(e), str(e)
else:
    raise AssertionError("no error")
""")


def test_tensors_cross(run):
    run(r"""
import torch
x = torch.arange(6, dtype=torch.float32)
y = torch.full((6,), -7.0)
m.add_one(x, y)
assert y.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
assert list(m.tensor_info(torch.zeros(2, 3, dtype=torch.float16))) == [2, 3, 3, 16, 1]
assert m.keep_tensor(x).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
assert m.count_tensors([torch.zeros(2), torch.zeros(3, 2)]) == 8
assert [m.optional_view(None), m.optional_view(torch.zeros(4))] == [-1, 4]
""")


def test_errors_cross_with_their_kind(run):
    run(r"""
for kind, exc in [("ValueError", ValueError), ("TypeError", TypeError), ("IndexError", IndexError)]:
    try:
        m.raise_error(kind)
    except exc:
        pass
    else:
        raise AssertionError(kind)
# The message stays the callee's; the function and its library are the error's one note.
where = [f"in function 'add_int' of library '{LIB}'"]
e = raises(TypeError, "add_int() takes 2 arguments (1 given)", m.add_int, 1)
assert e.__notes__ == where, e.__notes__
e = raises(TypeError, "add_int() argument 2 must be int, not str", m.add_int, 1, "x")
assert e.__notes__ == where, e.__notes__
""")


def test_cxx_module_members_of_the_runtime(run):
    # Module::LoadFromFile and the Error the runtime throws from it, caught by the library's
    # export wrapper with its kind.
    run(r"""
assert m.load_and_call(LIB, "add_int", 20) == 1040
missing = "/nonexistent/libmissing.so"
e = raises(RuntimeError, f"cannot load library '{missing}': {missing}: cannot open shared object "
           "file: No such file or directory", m.load_and_call, missing, "add_int", 1)
assert e.__notes__ == [f"in function 'load_and_call' of library '{LIB}'"], e.__notes__
""")


def test_module_class_of_the_library(run):
    # ModuleObj's vtable and typeinfo from the runtime, under a module class of the library.
    run(r"""
for _ in range(20):
    assert m.make_module().workspace_size(3, 4) == 19
""")
