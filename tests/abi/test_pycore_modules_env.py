"""Modules through the runtime's loader globals, and the stream set around a call that has a
CUDA tensor (a producer's exchange API written with ctypes stands in for torch on CUDA)."""

from __future__ import annotations

import pytest

from helpers.next_pycore import run_core_child


def test_load_module_and_function_lookup(core_runtime: str) -> None:
    run_core_child(
        core_runtime,
        r"""
import pathlib
m = core.load_module(pathlib.Path(LIB))
assert type(m) is core.Module and m.path == LIB and m.type_key == "ffi.Module"
f = m.add_int
assert f.__name__ == "add_int" and f.library == LIB and repr(f) == "<tvm_ffi.Function add_int>"
assert m["add_int"](1, 2) == 3 and m.get_function("noop")() is None
assert m.add_int is f and m["add_int"] is f  # looked up once
raises(AttributeError, f"module '{LIB}' has no function 'missing'", getattr, m, "missing")
raises(AttributeError, f"module '{LIB}' has no function 'missing'", m.get_function, "missing")
raises(KeyError, f"\"module '{LIB}' has no function 'missing'\"", lambda: m["missing"])
raises(TypeError, "module function names are str, not int", lambda: m[3])
assert "add_int" in m and "missing" not in m and 3 not in m
raises(FileNotFoundError, "load_module(): no library at '/nonexistent/lib.so'",
       core.load_module, "/nonexistent/lib.so")
import tempfile
with tempfile.NamedTemporaryFile(suffix=".so") as bad:
    bad.write(b"not a library")
    bad.flush()
    try:
        core.load_module(bad.name)
    except RuntimeError as e:  # the runtime's error and dlopen's reason follow
        if RUNTIME == "apache":  # apache's loader fails a check (InternalError, in a note)
            assert str(e).startswith(f"load_module(): cannot load '{bad.name}': Check failed"), e
        else:  # ours says which library it could not load (RuntimeError)
            assert str(e) == (f"load_module(): cannot load '{bad.name}': cannot load library "
                              f"'{bad.name}': {bad.name}: file too short"), e
    else:
        raise AssertionError("loaded a file that is no library")
assert core._get_global_func("ffi.Array")(1, "x") == [1, "x"]
assert core._get_global_func("no.such.global") is None
""",
    )


FAKE_CUDA = r"""
import ctypes, sys
class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]
class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]
class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]
FROM_PY = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(DLTensor))
STREAM = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_int32,
                          ctypes.POINTER(ctypes.c_void_p))
class Api(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("prev", ctypes.c_void_p),
                ("allocator", ctypes.c_void_p), ("managed_from_py", ctypes.c_void_p),
                ("managed_to_py", ctypes.c_void_p), ("dltensor_from_py", FROM_PY),
                ("current_work_stream", STREAM)]
SHAPE = (ctypes.c_int64 * 1)(4)
queries = []
corrupt = {}  # fields a test breaks on purpose
def dltensor_from_py(obj, out):
    t = out.contents
    t.data, t.ndim, t.shape, t.strides, t.byte_offset = 0x1000, 1, SHAPE, None, 0
    for field, value in corrupt.items():
        setattr(t, field, value)
    t.device.device_type, t.device.device_id = 2, 1       # kDLCUDA, device 1
    t.dtype.code, t.dtype.bits, t.dtype.lanes = 2, 32, 1
    return 0
def current_work_stream(device_type, device_id, out):
    queries.append((device_type, device_id))
    out[0] = 0xABC0 + device_id
    return 0
API = Api(1, 3, None, None, None, None, FROM_PY(dltensor_from_py), STREAM(current_work_stream))
ctypes.pythonapi.PyCapsule_New.restype = ctypes.py_object
ctypes.pythonapi.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
class FakeCudaTensor:
    __dlpack_c_exchange_api__ = ctypes.pythonapi.PyCapsule_New(
        ctypes.addressof(API), b"dlpack_exchange_api", None)
"""


def test_stream_of_a_cuda_argument_is_set_for_the_call_and_restored(core_runtime: str) -> None:
    run_core_child(
        core_runtime,
        FAKE_CUDA
        + r"""
m = core.load_module(LIB)
x = FakeCudaTensor()
assert m.stream_of(x) == 0xABC1 and queries == [(2, 1)]   # TensorObj path
assert m.cuda_stream(1) == 0                               # restored after the call
assert m.tensor_shape(x) == (4,)
assert m.arg_kind(x) == 7 and m.cuda_stream(1) == 0        # TensorView path
# Kept by the library, from a producer that cannot export a DLPack owner: the Python object
# itself is held until the library lets go.
before = sys.getrefcount(x)
m.keep_tensor(x)
assert sys.getrefcount(x) == before + 1 and m.kept_tensor().shape == (4,)
m.drop_kept()
assert sys.getrefcount(x) == before
import torch
queries.clear()
assert m.stream_of(torch.ones(2)) == 0 and queries == []   # CPU tensors: no stream query
""",
    )


def test_stream_is_asked_for_only_when_the_callee_asks(core_runtime: str) -> None:
    # On our runtime the call runs in a frame whose provider asks the producer lazily; on
    # apache's (no frames) the stream is set before every call with a CUDA tensor.
    run_core_child(
        core_runtime,
        FAKE_CUDA
        + r"""
m = core.load_module(LIB)
x = FakeCudaTensor()
assert core._lazy_stream == (RUNTIME == "ours")
assert m.tensor_shape(x) == (4,)                      # the callee never asks
assert queries == ([] if RUNTIME == "ours" else [(2, 1)])
queries.clear()
assert m.stream_of(x) == 0xABC1 and queries == [(2, 1)]    # asked once, answered once
queries.clear()
assert m.set_then_get_stream(x, 0x5150) == 0x5150     # the callee's own choice wins
assert queries == ([] if RUNTIME == "ours" else [(2, 1)])
assert m.cuda_stream(1) == 0                          # nothing outlives the call
def failing(device_type, device_id, out):  # -1 without a Python error (ctypes keeps none)
    return -1
API.current_work_stream = STREAM(failing)
if RUNTIME == "ours":
    assert m.tensor_shape(x) == (4,)                  # never asked: the failure never happens
raises(RuntimeError, "the tensor producer's current_work_stream failed for cuda:1 without an "
       "error", m.stream_of, x)
assert m.cuda_stream(1) == 0
""",
    )


def test_corrupt_producer_tensors_are_refused_naming_the_argument(core_runtime: str) -> None:
    run_core_child(
        core_runtime,
        FAKE_CUDA
        + r"""
m = core.load_module(LIB)
x = FakeCudaTensor()
cases = [({"ndim": -1}, "a negative ndim (ndim -1)"),
         ({"ndim": 5000}, "too many dimensions (ndim 5000, at most 1024)"),
         ({"shape": None}, "no shape (ndim 1)"),
         ({"shape": (ctypes.c_int64 * 1)(-3)}, "a negative size (-3) in dimension 0")]
for fields, words in cases:
    corrupt.clear()
    corrupt.update(fields)
    raises(ValueError, "tensor_shape() argument 1: FakeCudaTensor gave a DLTensor with " + words,
           m.tensor_shape, x)
    raises(ValueError, "arg_kind() argument 1: FakeCudaTensor gave a DLTensor with " + words,
           m.arg_kind, x)  # the TensorView path
corrupt.clear()
assert m.tensor_shape(x) == (4,)
""",
    )


@pytest.mark.gpu
def test_torch_cuda_stream_reaches_the_callee(core_runtime: str) -> None:
    run_core_child(
        core_runtime,
        r"""
import torch
m = core.load_module(LIB)
t = torch.ones(4, device="cuda")
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    assert m.stream_of(t) == s.cuda_stream
assert m.stream_of(t) == torch.cuda.current_stream().cuda_stream
assert m.cuda_stream(0) == 0
""",
    )
