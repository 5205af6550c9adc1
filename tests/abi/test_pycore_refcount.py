"""Reference counts across the C ABI: objects made by an apache-built library are destroyed
when Python drops them (a counting destructor), Python objects held by C++ are released, and
repeated calls do not grow the process."""

from __future__ import annotations

from helpers.next_pycore import run_core_child

RSS = r"""
def rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20
"""


def test_library_objects_are_destroyed_when_python_drops_them(core_runtime: str) -> None:
    run_core_child(
        core_runtime,
        r"""
import gc
m = core.load_module(LIB)
assert m.live_count() == 0
for i in range(200):
    c = m.make_counted(i)
    assert m.counted_value(c) == i and m.echo(c).same_as(c)
    nested = m.echo([c, [c, {"k": c}]])
    assert nested[1][1]["k"].same_as(c)
    m.keep_any(c)
    m.drop_kept()
    assert m.call_back(lambda x: x, c).same_as(c)
    assert m.live_count() == 1
del c, nested
gc.collect()
assert m.live_count() == 0
held = m.echo({"a": m.make_counted(1), "b": [m.make_counted(2)]})
assert m.live_count() == 2
del held
assert m.live_count() == 0
""",
    )


def test_python_objects_held_by_the_library_are_released(core_runtime: str) -> None:
    run_core_child(
        core_runtime,
        r"""
import sys, numpy
m = core.load_module(LIB)
f = lambda x: x
before = sys.getrefcount(f)
for _ in range(100):
    m.call_back(f, 1)
assert sys.getrefcount(f) == before
m.keep_any(f)
assert sys.getrefcount(f) == before + 1
kept = m.kept_any()
assert kept(5) == 5  # a Function around the callable
del kept
m.drop_kept()
assert sys.getrefcount(f) == before
a = numpy.arange(4, dtype=numpy.float32)
before = sys.getrefcount(a)
for _ in range(100):
    m.view_sum(a)
    m.tensor_shape(a)
assert sys.getrefcount(a) == before
m.keep_tensor(a)  # the library's reference keeps the array's memory alive
assert sys.getrefcount(a) == before + 1
m.drop_kept()
assert sys.getrefcount(a) == before
o = object()  # held through an ffi.OpaquePyObject
before = sys.getrefcount(o)
m.keep_any(o)
assert sys.getrefcount(o) == before + 1 and m.kept_any() is o
m.drop_kept()
assert sys.getrefcount(o) == before
""",
    )


def test_kept_pooled_tensor_owns_its_memory(core_runtime: str) -> None:
    run_core_child(
        core_runtime,
        r"""
import gc, torch
m = core.load_module(LIB)
t = torch.arange(4, dtype=torch.float32)
m.keep_tensor(t)          # the pooled object is promoted to an owning one after the call
del t
gc.collect()
assert torch.from_dlpack(m.kept_tensor()).tolist() == [0.0, 1.0, 2.0, 3.0]
m.drop_kept()
t = torch.arange(3, dtype=torch.float32)
assert m.use_count(t) == 2 and m.use_count(t) == 2  # the pool's object is reused, unique
""",
    )


def test_repeated_calls_do_not_grow_the_process(core_runtime: str) -> None:
    run_core_child(
        core_runtime,
        RSS
        + r"""
import torch
m = core.load_module(LIB)
t = torch.ones(4)
text, blob = "x" * 1000, b"y" * 1000
def burst(n):
    for _ in range(n):
        m.echo(text)
        m.echo(blob)
        m.noop_tensors(t, t, t)
        m.echo([1, "two", text])
        m.echo({"key": text})
        m.call_back(len, text)
        m.make_counted(1)
        m.tensor_shape(t)
burst(2000)
start = rss_mib()
burst(20000)
grown = rss_mib() - start
assert grown < 8, f"grew {grown:.1f} MiB over 20000 rounds"
""",
    )
