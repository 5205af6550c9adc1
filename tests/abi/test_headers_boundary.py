"""Direction B: a library built with the staging headers runs in apache-tvm-ffi 0.1.15.post2's
runtime and is called by apache's own Python, exchanging every boundary type the headers
support, with exact values and exact error kinds and messages."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import apache_wheel

sys.path.insert(0, str(Path(__file__).parent / "headers"))
import headers_build


@pytest.fixture(scope="module")
def apache(tmp_path_factory):
    """(wheel, python able to import it, PYTHONPATH for it, folder of its libtvm_ffi.so)."""
    wheel = apache_wheel.fetch_wheel()
    if wheel is None:
        pytest.skip("no apache-tvm-ffi wheel for this interpreter")
    tag = apache_wheel.python_tag(wheel)
    python = apache_wheel.find_python(tag) if tag else None
    if python is None:
        pytest.skip(f"no Python {tag} to import {wheel.name}")
    path = [str(apache_wheel.unpacked(wheel))]
    extensions = importlib.util.find_spec("typing_extensions")
    if extensions is not None and extensions.origin:
        path.append(str(Path(extensions.origin).parent))
    return wheel, python, os.pathsep.join(path), apache_wheel.runtime_path(wheel).parent


def run_driver(apache, driver: str, *args: Path):
    _, python, pythonpath, _ = apache
    proc = subprocess.run(
        [python, str(headers_build.HERE / driver), *map(str, args)],
        env={**os.environ, "PYTHONPATH": pythonpath},
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def outcome(apache, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("boundary")
    libs = [
        headers_build.compile_source(headers_build.HERE / f"{name}.cc", out / f"{name}.so",
                                     link_dir=apache[3])
        for name in ("boundary_lib", "second_layout")
    ]  # fmt: skip
    return run_driver(apache, "boundary_driver.py", *libs)


OK = {
    "add_int": 5,
    "scale": 3.0,
    "negate": False,
    "ptr_offset": 4104,
    "dtype_widen": "float32",
    "dtype_from_str": "int16",
    "next_device": "cpu:1",
    "concat_small": "abc",
    "concat_large": "abcdefghijkl",
    "reverse_bytes": list(b"jihgfedcba"),
    "reverse_small_bytes": list(b"cba"),
    "str_len": 5,
    "shape_from_tuple": [2, 4, 6],
    "shape_from_shape": [8, 10],
    "sum_ints": 6,
    "words": ["a", "b", "end-of-the-list"],
    "or_default": [-1, 5],
    "maybe_name": ["a name longer than seven", None],
    "variant": [2.5, 7.0],
    "tuple_plan": [[3, 4], 30],
    "tuple_take": 7,
    "callback": 42,
    "make_adder": 15,
    "make_typed": 21,
    "add_one": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
    "add_one_numpy": [2.0, 2.0, 2.0],
    "tensor_info": [2, 3, 3, 16, 1],
    "count_tensors": 8,
    "keep_tensor": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0],
    "optional_view": [-1, 4],
    "env_alloc": [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]],
    "nd_alloc": [0, 1, 4, 9],
    "echo_any": [1, "s", "longer string x"],
    "any_kind": ["Array", "str", "None"],
    "call_global": 42,
    "stl_repeat": ["a", "aaa"],
    "stl_repeat_none": ["--"],
    "stl_swap": [5, "s"],
    "load_and_call": 1040,
    "module_kind": "test_runner",
    "module_function": 19,
    "counter": [7, "c=7", 7, "c"],
    "counter_relabel": "new=1",
    "counter_global": 9,
    "make_counter": ["Counter", 11, True],
    "is_counter_other": False,
}


@pytest.mark.parametrize("name", sorted(OK))
def test_value_crosses(outcome, name):
    assert outcome[name] == ["ok", OK[name]]


def test_type_layout_registered_with_the_key(outcome):
    # TVMFFITypeMetadata.total_size == sizeof(CounterObj): the runtime can refuse a second
    # layout under the key (D6).
    status, value = outcome["counter_sizes"]
    assert status == "ok" and value // 1000 == value % 1000 > 24


ERRORS = {
    "narrow": ["ValueError", "narrow() argument 1 must fit in int8 [-128, 127] (got 300)"],
    "dtype_bad": [
        "ValueError",
        'dtype_widen() argument 1 must name a data type such as float32 (got "notatype")',
    ],
    "sum_ints_bad": ["TypeError", "sum_ints() argument 1[1] must be int, not str"],
    "variant_bad": ["TypeError", "variant_value() argument 1 must be float | Tensor, not str"],
    "tuple_size": ["ValueError", "tuple_take() argument 1 must have 2 elements (got 1)"],
    "callback_raises": ["ValueError", "from the callback (4, ab)"],
    "make_adder_bad": ["TypeError", "adder() argument 1 must be int, not str"],
    "tensor_size_bad": ["IndexError", "Tensor::size(-1): a 0-d tensor has no dimensions"],
    "raise ValueError": ["ValueError", "bad value 42"],
    "raise TypeError": ["TypeError", "bad type"],
    "raise IndexError": ["IndexError", "bad index"],
    "raise ICHECK": ["RuntimeError", "Check failed: (1 + 1 == 3) is false: 2 vs. 3: arithmetic"],
    "raise std": ["RuntimeError", "from the standard library"],
    "raise nested": ["ValueError", "Check failed: (x > 0) is false: x must be positive, got -2"],
    "call_global_missing": [
        "ValueError",
        "no global function is registered as 'test.headers.none'",
    ],
    "module_missing": ["AttributeError", "Module has no function 'nope'"],
    "load_and_call_missing": [
        "AttributeError",
        "Check failed: (f.has_value()) is false: no function nope",
    ],
    "arity": ["TypeError", "add_int() takes 2 arguments (1 given)"],
    "arg_type": ["TypeError", "add_int() argument 2 must be int, not str"],
    "second_layout": [
        "TypeError",
        "type key 'test.headers.Counter' is registered with 48-byte objects; this library's "
        "class for it is 64 bytes (two layouts, one key)",
    ],
    "counter_bad_self": [
        "TypeError",
        "test.headers.counter_value() argument 1 must be test.headers.Counter, not Shape",
    ],
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_error_crosses(outcome, name):
    assert outcome[name] == ERRORS[name]


def test_metadata_is_apaches(apache, tmp_path):
    wheel, _, _, lib_dir = apache
    source = headers_build.HERE / "metadata_lib.cc"
    ours = headers_build.compile_source(source, tmp_path / "ours.so", link_dir=lib_dir)
    theirs = apache_wheel.build_library(
        wheel, source, tmp_path / "theirs.so", "-DTVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1"
    )
    mine, apaches = run_driver(apache, "metadata_driver.py", ours, theirs)
    assert mine == apaches
    assert json.loads(json.loads(mine["tensors"])["type_schema"])["named_args"]["params"][0] == {
        "type": "DLTensor*"
    }
