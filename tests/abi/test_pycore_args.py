"""Python values -> 16-byte TVMFFIAny, checked by a library built against apache-tvm-ffi
(tests/abi/pycore/echo_lib.cc) through the Python core on the C ABI (_core_next)."""

from __future__ import annotations

from helpers.next_pycore import run_core_child


def test_scalars_arrive_with_their_type_index_and_value(core_runtime: str) -> None:
    run_core_child(
        core_runtime,
        r"""
m = core.load_module(LIB)
assert m.type_index_of(None) == 0
assert m.type_index_of(7) == 1 and m.add_int(2**62, 2**62 - 1) == 2**63 - 1
assert m.type_index_of(True) == 2 and m.negate(True) is False and m.negate(False) is True
assert m.type_index_of(1.5) == 3 and m.add_float(1.25, 2) == 3.25
assert m.add_int(-2**63, 0) == -2**63
class MyInt(int): pass
assert m.add_int(MyInt(5), 6) == 11
import ctypes
assert m.type_index_of(ctypes.c_void_p(1234)) == 4
# A pointer result is a ctypes.c_void_p, as under apache-tvm-ffi; NULL is c_void_p(None).
back = m.echo(ctypes.c_void_p(1234))
assert type(back) is ctypes.c_void_p and back.value == 1234
null = m.echo(ctypes.c_void_p(None))
assert type(null) is ctypes.c_void_p and null.value is None
""",
    )


def test_int_out_of_int64_range_names_the_argument(core_runtime: str) -> None:
    run_core_child(
        core_runtime,
        r"""
m = core.load_module(LIB)
raises(OverflowError, "add_int() argument 2: int 9223372036854775808 does not fit in int64",
       m.add_int, 1, 2**63)
raises(OverflowError, "add_int() argument 1: int -9223372036854775809 does not fit in int64",
       m.add_int, -2**63 - 1, 0)
""",
    )


def test_strings_and_bytes_small_and_large(core_runtime: str) -> None:
    run_core_child(
        core_runtime,
        r"""
m = core.load_module(LIB)
assert m.type_index_of("") == 11 and m.type_index_of("seven77") == 11   # small str: <= 7 bytes
assert m.type_index_of("eight888") == 65                                # StringObj
assert m.type_index_of(b"bytes77") == 12 and m.type_index_of(b"bytes888") == 66
assert m.concat("ab", "cdefghijklmnop") == "abcdefghijklmnop"
assert m.str_len("\u00e9t\u00e9") == 5                                  # UTF-8 bytes
assert m.concat("nul\0in", "side\0!") == "nul\0inside\0!"
assert m.bytes_sum(b"\x01\x02") == 3002 and m.bytes_sum(bytes(range(10))) == 45010
assert m.bytes_sum(bytearray(b"\x05")) == 5001
class Name(str): pass
assert m.concat(Name("sub"), "class") == "subclass"
assert m.echo("x" * 100) == "x" * 100 and m.echo(b"\0" * 9) == b"\0" * 9
""",
    )


def test_dtype_and_device_travel_as_values(core_runtime: str) -> None:
    run_core_child(
        core_runtime,
        r"""
import torch
m = core.load_module(LIB)
class dtype(str):  # the shape of tvm_ffi.dtype: a str whose class has the DLPack fields
    __slots__ = ["_fields"]
    def __new__(cls, text, code, bits, lanes):
        self = super().__new__(cls, text)
        self._fields = (code, bits, lanes)
        return self
    type_code = property(lambda self: self._fields[0])
    bits = property(lambda self: self._fields[1])
    lanes = property(lambda self: self._fields[2])
assert m.type_index_of(dtype("float4_e2m1fnx2", 17, 4, 2)) == 5
assert m.dtype_fields(dtype("float4_e2m1fnx2", 17, 4, 2)) == [17, 4, 2]
assert m.dtype_fields(torch.float16) == [2, 16, 1] and m.dtype_fields(torch.bfloat16) == [4, 16, 1]
import numpy
assert m.dtype_fields(numpy.dtype("int8")) == [0, 8, 1]
assert m.type_index_of(torch.device("cpu")) == 6
assert m.device_fields(torch.device("cuda", 3)) == [2, 3]
assert m.device_fields(torch.device("cpu")) == [1, 0]
class Dev:
    def __dlpack_device__(self): return (2, 5)
assert m.device_fields(Dev()) == [2, 5]
""",
    )


def test_tensors_as_objects_and_as_views(core_runtime: str) -> None:
    run_core_child(
        core_runtime,
        r"""
import torch, numpy
m = core.load_module(LIB)
t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
assert m.arg_kind_plain(t) == 70          # no metadata: a TensorObj
assert m.arg_kind(t) == 7                 # metadata says DLTensor*: a stack DLTensor
assert m.view_sum(t) == 15.0 and m.tensor_shape(t) == (2, 3)
assert m.tensor_strides(t.t()) == [1, 3]
a = numpy.arange(4, dtype=numpy.float32)  # __dlpack__ only
assert m.arg_kind_plain(a) == 70 and m.view_sum(a) == 6.0 and m.tensor_shape(a) == (4,)
wide = torch.zeros([1] * 10)              # more dimensions than the object keeps inline
assert m.tensor_shape(wide) == (1,) * 10 and m.tensor_strides(wide) == [1] * 10
assert m.use_count(t) == 2                # ours + the parameter's
assert m.tensor_shape(torch.tensor(3.0)) == () and m.view_sum(torch.tensor(3.0)) == 3.0
assert m.tensor_shape(torch.ones(0, 3)) == (0, 3)
assert m.view_sum(torch.arange(10, dtype=torch.float32)[4:6]) == 9.0  # offset into storage
assert m.first_tensor(t, t) is t          # one of the arguments comes back as itself
""",
    )


def test_containers_callables_and_objects(core_runtime: str) -> None:
    run_core_child(
        core_runtime,
        r"""
import torch
m = core.load_module(LIB)
assert m.type_index_of([1, 2]) == 71 and m.type_index_of((1, 2)) == 71
assert m.array_sum([1, 2, 3]) == 6 and m.array_sum((4, 5)) == 9 and m.array_len([]) == 0
assert m.array_len([1, "two", [3, [4]], None]) == 4
assert m.echo([1, "two", [3.5, None]]) == [1, "two", [3.5, None]]
assert m.type_index_of({"a": 1}) == 72
assert m.map_get({"a": 5, "a long key!": 7}, "a long key!") == 7
assert m.echo({"k": [1, 2]}) == {"k": [1, 2]}
t = torch.ones(3)
assert m.tensor_list_sum([t, t * 2]) == 9.0
assert m.type_index_of(lambda x: x) == 68
assert m.call_back(lambda x: x * 2, 21) == 42
joined = m.call_back2(lambda a, b: f"{a}-{b}", "left", "a long right side")
assert joined == "left-a long right side"
adder = m.make_adder(10)
assert m.type_index_of(adder) == 68 and m.call_back(adder, 5) == 15
c = m.make_counted(42)
assert m.type_index_of(c) >= 128 and m.counted_value(c) == 42
class Holder:
    def __init__(self, obj): self.obj = obj
    def __tvm_ffi_object__(self): return self.obj
assert m.counted_value(Holder(c)) == 42
class Bad:
    def __tvm_ffi_object__(self): return 3
raises(TypeError,
       "counted_value() argument 1: Bad.__tvm_ffi_object__() returned int, not a tvm-ffi object",
       m.counted_value, Bad())
# Any other object travels as itself (ffi.OpaquePyObject): Any keeps it, a typed parameter
# refuses it by name.
o = object()
assert m.type_index_of(o) == 74 and m.echo(o) is o and m.call_back(lambda x: x, o) is o
e = raises(TypeError, "Mismatched type on argument #0 when calling: `add_int(0: int, 1: int) -> "
           "int`. Expected `int` but got `ffi.OpaquePyObject`", m.add_int, o, 1)
assert e.__notes__[-1].endswith(f"in function 'add_int' of library '{LIB}'")
""",
    )


def test_torch_conjugate_and_negative_views_are_refused(core_runtime: str) -> None:
    run_core_child(
        core_runtime,
        r"""
import torch
m = core.load_module(LIB)
z = torch.tensor([1 + 2j, 3 - 1j])
raises(BufferError, "type_index_of() argument 1: can't pass a torch tensor with the conjugate "
       "bit set; pass tensor.resolve_conj()", m.type_index_of, z.conj())
raises(BufferError, "arg_kind() argument 1: can't pass a torch tensor with the negative bit "
       "set; pass tensor.resolve_neg()", m.arg_kind, z.conj().imag)
assert m.type_index_of(z.conj().resolve_conj()) == 70 and m.type_index_of(z) == 70
assert m.view_sum(z.conj().imag.resolve_neg()) == -1.0
assert m.view_sum(torch.ones(4, 4)[:, ::2]) == 8.0  # even strides, no bit: asked and passed
""",
    )
