"""Runs under apache-tvm-ffi's Python (its libtvm_ffi.so loaded): prints, as JSON, the text each
library in argv[1:] returns from __tvm_ffi__metadata_<name> for the names of metadata_lib.cc."""

import ctypes
import json
import sys

import tvm_ffi  # noqa: F401 - loads apache's runtime, which the libraries link


class Any(ctypes.Structure):
    _fields_ = [
        ("type_index", ctypes.c_int32),
        ("small_len", ctypes.c_uint32),
        ("v", ctypes.c_uint64),
    ]


def text(lib, name):
    f = getattr(lib, f"__tvm_ffi__metadata_{name}")
    f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32, ctypes.POINTER(Any)]
    out = Any(0, 0, 0)
    assert f(None, None, 0, ctypes.byref(out)) == 0
    if out.type_index == 11:  # a small str
        return ctypes.string_at(ctypes.addressof(out) + 8, out.small_len).decode()
    assert out.type_index == 65, out.type_index  # a StringObj: bytes at offset 24
    data, size = ctypes.c_void_p.from_address(out.v + 24), ctypes.c_size_t.from_address(out.v + 32)
    return ctypes.string_at(data.value, size.value).decode()


names = ["scalars", "texts", "tensors", "containers"]
print(json.dumps([{n: text(ctypes.CDLL(path), n) for n in names} for path in sys.argv[1:]]))
