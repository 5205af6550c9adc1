"""Runs in a child process with apache-tvm-ffi's Python package first on sys.path: loads the
library built with our staging headers (argv[1]) and prints every call's outcome as JSON:
{name: ["ok", value]} or {name: [exception class name, last line of its message]}."""

import json
import sys

import numpy as np
import torch

import tvm_ffi

m = tvm_ffi.load_module(sys.argv[1])
out = {}


def record(name, f):
    try:
        out[name] = ["ok", f()]
    except Exception as e:
        out[name] = [type(e).__name__, str(e).splitlines()[-1] if str(e) else ""]


x = torch.arange(6, dtype=torch.float32)
y = torch.full((6,), -7.0)
record("add_int", lambda: m.add_int(2, 3))
record("scale", lambda: m.scale(1.5, 2))
record("negate", lambda: m.negate(True))
record("ptr_offset", lambda: m.ptr_offset(4096, 8).value)
record("narrow", lambda: m.narrow(300))
record("dtype_widen", lambda: str(m.dtype_widen(tvm_ffi.dtype("float16"))))
record("dtype_from_str", lambda: str(m.dtype_widen("int8")))
record("dtype_bad", lambda: m.dtype_widen("notatype"))
record("next_device", lambda: str(m.next_device(tvm_ffi.device("cpu", 0))))
record("concat_small", lambda: m.concat("ab", "c"))
record("concat_large", lambda: m.concat("ab", "cdefghijkl"))
record("reverse_bytes", lambda: list(m.reverse_bytes(b"abcdefghij")))
record("reverse_small_bytes", lambda: list(m.reverse_bytes(b"abc")))
record("str_len", lambda: m.str_len("hello"))
record("shape_from_tuple", lambda: list(m.shape_double((1, 2, 3))))
record("shape_from_shape", lambda: list(m.shape_double(tvm_ffi.Shape((4, 5)))))
record("sum_ints", lambda: m.sum_ints([1, 2, 3]))
record("sum_ints_bad", lambda: m.sum_ints([1, "x"]))
record("words", lambda: list(m.words(["a", "b"])))
record("or_default", lambda: [m.or_default(None), m.or_default(5)])
record("maybe_name", lambda: [m.maybe_name(True), m.maybe_name(False)])
record("variant", lambda: [m.variant_value(2.5), m.variant_value(torch.tensor([7.0]))])
record("variant_bad", lambda: m.variant_value("s"))
record("tuple_plan", lambda: (lambda t: [list(t[0]), t[1]])(m.tuple_plan(3)))
record("tuple_take", lambda: m.tuple_take((4, "abc")))
record("tuple_size", lambda: m.tuple_take((4,)))
record("callback", lambda: m.call_back(lambda v, s: v * 10 + len(s), 4))


def raising_callback(v, s):
    raise ValueError(f"from the callback ({v}, {s})")


record("callback_raises", lambda: m.call_back(raising_callback, 4))
record("make_adder", lambda: m.make_adder(5)(10))
record("make_adder_bad", lambda: m.make_adder(5)("x"))
record("make_typed", lambda: m.make_typed()(7))
record("add_one", lambda: (m.add_one(x, y), y.tolist())[1])
record(
    "add_one_numpy",
    lambda: (lambda a, b: (m.add_one(a, b), b.tolist())[1])(
        np.ones(3, np.float32), np.zeros(3, np.float32)
    ),
)
record("tensor_info", lambda: list(m.tensor_info(torch.zeros(2, 3, dtype=torch.float16))))
record("tensor_size_bad", lambda: m.tensor_info(torch.zeros(())))
record("count_tensors", lambda: m.count_tensors([torch.zeros(2), torch.zeros(3, 2)]))
record("keep_tensor", lambda: m.keep_tensor(x).tolist())
record("optional_view", lambda: [m.optional_view(None), m.optional_view(torch.zeros(4))])
record("env_alloc", lambda: torch.from_dlpack(m.alloc((2, 3), x)).tolist())
record("nd_alloc", lambda: np.from_dlpack(m.nd_alloc(4)).tolist())
record("echo_any", lambda: [m.echo_any(1), m.echo_any("s"), m.echo_any("longer string x")])
record("any_kind", lambda: [m.any_kind([1]), m.any_kind("s"), m.any_kind(None)])
for kind in ["ValueError", "TypeError", "IndexError", "ICHECK", "std", "nested"]:
    record("raise " + kind, lambda kind=kind: m.raise_error(kind))
tvm_ffi.register_global_func("test.headers.twice", lambda v: 2 * v)
record("call_global", lambda: m.call_global("test.headers.twice", 21))
record("call_global_missing", lambda: m.call_global("test.headers.none", 1))
record("arity", lambda: m.add_int(1))
record("arg_type", lambda: m.add_int(1, "x"))

record("stl_repeat", lambda: list(m.stl_repeat([1, 3], "ab")))
record("stl_repeat_none", lambda: list(m.stl_repeat([2], None)))
record("stl_swap", lambda: list(m.stl_swap(("s", 5))))
record("load_and_call", lambda: m.load_and_call(sys.argv[1], "add_int", 20))
record("module_kind", lambda: m.make_module().kind)
record("module_function", lambda: m.make_module().workspace_size(3, 4))
record("module_missing", lambda: m.make_module().nope)
record("load_and_call_missing", lambda: m.load_and_call(sys.argv[1], "nope", 1))

m.register_once()


@tvm_ffi.register_object("test.headers.Counter")
class Counter(tvm_ffi.Object):
    pass


def counter_story():
    c = Counter(4, "c")
    return [c.add(3), c.describe(), c.value, c.label]


def relabel():
    c = Counter(1, "a")
    c.label = "new"
    return c.describe()


counter_value = tvm_ffi.get_global_func("test.headers.counter_value")
record("counter", counter_story)
record("counter_relabel", relabel)
record("counter_global", lambda: counter_value(Counter(9, "x")))
record("counter_bad_self", lambda: counter_value(tvm_ffi.Shape((1,))))
record("counter_sizes", lambda: m.counter_sizes())
record(
    "make_counter",
    lambda: (lambda c: [type(c).__name__, c.value, m.is_counter(c)])(m.make_counter(11)),
)
record("is_counter_other", lambda: m.is_counter(tvm_ffi.Shape((1,))))
second = tvm_ffi.load_module(sys.argv[2])
record("second_layout", lambda: second.register_once())
print(json.dumps(out))
