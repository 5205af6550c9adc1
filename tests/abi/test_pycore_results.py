"""TVMFFIAny results -> Python values, from a library built against apache-tvm-ffi."""

from __future__ import annotations

from helpers.next_pycore import run_core_child


def test_value_results(core_runtime: str) -> None:
    run_core_child(
        core_runtime,
        r"""
m = core.load_module(LIB)
assert m.noop() is None
assert m.echo(None) is None and m.echo(True) is True and m.echo(False) is False
assert m.echo(-5) == -5 and type(m.echo(2.5)) is float and m.echo(2.5) == 2.5
assert m.make_dtype(2, 32, 1) == "float32" and m.make_dtype(17, 4, 2) == "float4_e2m1fnx2"
assert m.make_device(2, 1) == (2, 1) and m.make_device(1, 0) == (1, 0)
""",
    )


def test_strings_and_bytes_small_and_object(core_runtime: str) -> None:
    run_core_child(
        core_runtime,
        r"""
m = core.load_module(LIB)
assert m.make_str(0) == "" and m.make_str(7) == "x" * 7 and m.make_str(8) == "x" * 8
assert m.make_str(1000) == "x" * 1000
assert m.make_bytes(3) == b"yyy" and m.make_bytes(40) == b"y" * 40
assert type(m.make_bytes(3)) is bytes and type(m.make_str(30)) is str
assert m.echo("h\u00e9llo w\u00f6rld") == "h\u00e9llo w\u00f6rld"
""",
    )


def test_containers_functions_and_objects(core_runtime: str) -> None:
    run_core_child(
        core_runtime,
        r"""
m = core.load_module(LIB)
assert m.make_shape() == (2, 3, 5) and type(m.make_shape()) is tuple
assert m.make_array() == [1, "two", 3.5, None]
assert m.make_map() == {"a": 1, "long key here": 2}
add = m.make_adder(7)
assert type(add) is core.Function and add(1) == 8 and add.__chandle__() != 0
assert add.__name__ is None and repr(add) == "<tvm_ffi.Function ffi.Function>"
c = m.make_counted(3)
assert type(c) is core.Object and c.type_key == "pycore.Counted" and c.type_index >= 128
assert repr(c) == f"<tvm_ffi.Object 'pycore.Counted' at {c.__chandle__():#x}>"
assert m.echo(c).same_as(c) and not m.make_counted(3).same_as(c)
f = m.echo(add)
assert f.__chandle__() == add.__chandle__()
mod = m.echo(m)
assert type(mod) is core.Module and mod.add_int(1, 2) == 3
""",
    )


def test_tensor_results(core_runtime: str) -> None:
    run_core_child(
        core_runtime,
        r"""
import torch, numpy
m = core.load_module(LIB)
t = torch.arange(4, dtype=torch.float32)
assert m.echo(t) is t and m.first_tensor(t, t * 2) is t
m.keep_tensor(t * 3)
other = m.first_tensor(m.kept_tensor(), t)   # a tensor that is not an argument, torch args
assert type(other) is torch.Tensor and other.tolist() == [0.0, 3.0, 6.0, 9.0]
kept = m.kept_tensor()                      # no tensor arguments: the DLPack wrapper
assert type(kept) is core.Tensor and kept.shape == (4,) and kept.dtype == "float32"
assert kept.__dlpack_device__() == (1, 0)
assert torch.from_dlpack(kept).tolist() == [0.0, 3.0, 6.0, 9.0]
assert numpy.from_dlpack(kept).tolist() == [0.0, 3.0, 6.0, 9.0]
m.drop_kept()
""",
    )


def test_maps_and_dicts_small_and_dense(core_runtime: str) -> None:
    # Built by the runtime's globals, passed from Python dicts and returned by the library; a
    # Dict result is read through the Dict globals (a Map global refuses a Dict on our runtime).
    run_core_child(
        core_runtime,
        r"""
m = core.load_module(LIB)
g = core._get_global_func
dense = {f"key{i}": i for i in range(40)}
assert m.map_get(dense, "key37") == 37 and m.echo(dense) == dense
assert list(m.echo(dense)) == list(dense)                 # insertion order kept
assert g("ffi.Map")("a", 1, "b", [2]) == {"a": 1, "b": [2]}
d = g("ffi.Dict")(*[x for i in range(9) for x in (i, str(i))])
assert d == {i: str(i) for i in range(9)} and type(d) is dict
assert g("ffi.Dict")() == {} and g("ffi.Map")() == {}
""",
    )
