"""tvm_ffi.cuda's launch path without a GPU, against a stand-in libcuda.so.1 (fake_libcuda.c)
that records what each launch hands the driver: grid, block, shared memory, stream, launch
attributes and the parameter bytes. This runs the real CubinModule / CubinKernel / launcher
objects, cubin_launcher.h and the error paths; only the driver is pretend.

The launches run in a child process whose LD_LIBRARY_PATH puts the fake first. "CUDA tensors"
there are numpy arrays whose DLPack device is rewritten to cuda:N: enough for the device
checks, the device guard and the stream lookup (the GPU tests launch on real ones).
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import textwrap

import pytest

from helpers import SOURCES, gpu

KERNELS_CU = r"""
struct Pair { double a; char b; };
extern "C" __global__ void mixed(const float* x, float* y, int n, double d, char c,
                                 long long q, short s, Pair p, float f) {}
extern "C" __global__ void add(const float* a, const float* b, float* out, int n) {}
extern "C" __global__ void no_params() {}
__global__ void mangled(int* x, unsigned long long u) {}
"""


# The child: runs each case and prints {case: {"ok": last launch} | {"error": [type, message]}}.
CHILD = r"""
import ctypes, json, sys, threading
import numpy
from tvm_ffi import cuda

fake = ctypes.CDLL("libcuda.so.1")
fake.fake_last_launch.restype = ctypes.c_char_p
results = {}

def expect(*sizes):
    fake.fake_expect_params(len(sizes), (ctypes.c_int * len(sizes))(*sizes))

def case(name, fn):
    try:
        value = fn()
        results[name] = {"ok": json.loads(fake.fake_last_launch()) if value is None else value}
    except Exception as e:
        message = e.args[0] if isinstance(e, KeyError) else str(e)
        results[name] = {"error": [type(e).__name__, message]}

mod = cuda.CubinModule(open(sys.argv[1], "rb").read())
ptx = cuda.CubinModule(open(sys.argv[2], "rb").read())
mixed, add = mod["mixed"], mod["add"]
pair = bytes(range(16))

expect(8, 8, 4, 8, 1, 8, 2, 16, 4)
case("mixed_short", lambda: mixed[(2, 3), 4](0x1000, 0x2000, -5, 0.5, 7, 2**40, -2, pair, 1.5))
args = (1, 2, 3, 4.0, 5, 6, 7, pair, numpy.float32(2.5))
case("mixed_launch", lambda: mixed.launch(9, (8, 2, 2), args, stream=0x1234, shared_mem=512))
class StreamLike:
    def __cuda_stream__(self):
        return (0, 0xBEEF)
case("stream_protocol", lambda: mixed[1, 1, StreamLike(), 0](*args))
expect(8, 8, 8, 4)
LaunchConfig = cuda.LaunchConfig
cfg = LaunchConfig(
    cluster=(2, 1, 1), cluster_scheduling="spread", pdl=True, cooperative=True, priority=-3
)
case("config", lambda: add.launch(4, 128, [1, 2, 3, 4], config=cfg))
case("list_args", lambda: add.launch((3, 2), 64, [5, 6, 7, 8]))
case("generator_args", lambda: add.launch(1, 1, (v for v in (1, 2, 3, 9))))
case("ptx_layout_from_driver", lambda: ptx["add"][1, 32](1, 2, 3, 4))
kernels = (mixed, add, mod["no_params"], mod["_Z7mangledPiy"], ptx["add"])
case("layouts", lambda: [k.param_layout for k in kernels])
case("count", lambda: add[1, 1](1, 2, 3))
case("range", lambda: add[1, 1](1, 2, 3, 2**32))
typed = add.with_signature("float*, float*, float*, int")
case("float_to_int", lambda: typed[1, 1](1, 2, 3, 4.5))
case("too_many_threads", lambda: add[1, 2048](1, 2, 3, 4))
case("block_z", lambda: add[1, (1, 1, 128)](1, 2, 3, 4))
case("smem", lambda: add[1, 1, None, 100000](1, 2, 3, 4))
case("driver_error", lambda: add[7, 1](1, 2, 3, 4))
case("grid_zero", lambda: add[0, 1](1, 2, 3, 4))
case("missing", lambda: mod["nope"])
case("missing_nul", lambda: mod["add\0x"])  # the driver would look up "add"
def set_max_smem():
    add.set_max_dynamic_shared_memory(-1)
    return fake.fake_max_dynamic_smem()
case("set_max_smem", set_max_smem)
case("smem_after", lambda: add[1, 1, None, 100000](1, 2, 3, 4))
case("bad_signature", lambda: add.with_signature("float*, int"))
case("kwargs", lambda: add[1, 1](1, 2, 3, n=4))
case("launch_kw", lambda: add.launch(1, 1, (1, 2, 3, 4), streams=0))

# A numpy array that says it lives on cuda:<device_id> (its DLPack device is rewritten).
class FakeCudaArray:
    def __init__(self, array, device_id=0):
        self.array, self.device_id = array, device_id

    def __dlpack_device__(self):
        return (2, self.device_id)

    def __dlpack__(self, max_version=None, **kwargs):
        capsule = self.array.__dlpack__(max_version=max_version)
        get = ctypes.pythonapi.PyCapsule_GetPointer
        get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
        versioned = max_version is not None
        base = get(capsule, b"dltensor_versioned" if versioned else b"dltensor")
        # DLTensor.device: after version, manager_ctx, deleter, flags (32 bytes) and data.
        device = base + (40 if versioned else 8)
        ctypes.c_int32.from_address(device).value = 2  # kDLCUDA
        ctypes.c_int32.from_address(device + 4).value = self.device_id
        return capsule

arrays = [numpy.arange(4, dtype=numpy.float32) for _ in range(3)]
cuda_args = [FakeCudaArray(a) for a in arrays]
case("data_pointers", lambda: [a.ctypes.data for a in arrays])
case("tensors", lambda: add[1, 1](*cuda_args, 5))
# The stream of a launch with stream=None beside the one an exported function sees for cuda:0.
def raw_stream(device="cuda:0", **kw):
    import tvm_ffi
    with tvm_ffi.use_raw_stream(device, 0x777):
        add.launch(1, 1, (*cuda_args, 5), **kw)
        seen = tvm_ffi.get_raw_stream("cuda:0")
    return {"launch": json.loads(fake.fake_last_launch())["stream"], "seen": seen}
case("tensors_raw_stream", raw_stream)
case("tensors_raw_stream_other_device", lambda: raw_stream("cuda:1"))
case("tensors_explicit_stream", lambda: raw_stream(stream=0x55))
case("two_devices", lambda: add[1, 1](cuda_args[0], FakeCudaArray(arrays[1], 1), cuda_args[2], 5))

def threads():
    before = fake.fake_launch_count()
    def work():
        bound = add[2, 64]
        for _ in range(500):
            bound(1, 2, 3, 4)
    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts: t.start()
    for t in ts: t.join()
    return fake.fake_launch_count() - before
case("threads", threads)
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    from tvm_ffi.cpp._toolchain import find_cuda_home, find_cuda_tool

    try:
        find_cuda_tool("nvcc")  # KernelImages compiles with it
        include = find_cuda_home() / "include"
    except RuntimeError as e:
        pytest.skip(f"needs the CUDA toolkit: {e}")
    cc = os.environ.get("CC", "cc")
    if shutil.which(cc) is None:
        pytest.skip(f"needs a C compiler ({cc})")
    root = tmp_path_factory.mktemp("fake_driver")
    subprocess.run(
        [
            cc,
            "-shared",
            "-fPIC",
            "-O1",
            f"-I{include}",
            str(SOURCES / "fake_libcuda.c"),
            "-o",
            str(root / "libcuda.so.1"),
        ],
        check=True,
    )
    images = gpu.KernelImages(KERNELS_CU, root)
    cubin, ptx = images.path("sm_90"), images.path("sm_90", "ptx")
    env = dict(os.environ, LD_LIBRARY_PATH=f"{root}:{os.environ.get('LD_LIBRARY_PATH', '')}")
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CHILD), str(cubin), str(ptx)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    out["_cubin_size"] = cubin.stat().st_size
    out["_ptx_size"] = ptx.stat().st_size
    return out


def _hex(fmt: str, *values) -> str:
    return struct.pack(fmt, *values).hex()


def _who(results, kernel: str = "add") -> str:
    return f'kernel "{kernel}" in module <{results["_cubin_size"]}-byte image>'


def test_short_form_packs_by_layout(results):
    got = results["mixed_short"]["ok"]
    assert got["kernel"] == "mixed"
    assert (got["grid"], got["block"], got["smem"], got["stream"]) == ([2, 3, 1], [4, 1, 1], 0, 0)
    assert got["attrs"] == []
    assert got["params"] == [
        _hex("<Q", 0x1000),
        _hex("<Q", 0x2000),
        _hex("<i", -5),
        _hex("<d", 0.5),
        _hex("<b", 7),
        _hex("<q", 2**40),
        _hex("<h", -2),
        bytes(range(16)).hex(),
        _hex("<f", 1.5),
    ]


def test_launch_form_stream_and_shared_mem(results):
    got = results["mixed_launch"]["ok"]
    assert (got["grid"], got["block"], got["smem"], got["stream"]) == (
        [9, 1, 1],
        [8, 2, 2],
        512,
        0x1234,
    )
    assert got["params"][3] == _hex("<d", 4.0)
    assert got["params"][8] == _hex("<f", 2.5)
    assert results["stream_protocol"]["ok"]["stream"] == 0xBEEF


def test_args_as_list_or_iterable(results):
    got = results["list_args"]["ok"]
    assert (got["grid"], got["block"]) == ([3, 2, 1], [64, 1, 1])
    assert got["params"] == [_hex("<Q", 5), _hex("<Q", 6), _hex("<Q", 7), _hex("<i", 8)]
    assert results["generator_args"]["ok"]["params"][3] == _hex("<i", 9)


def test_tensor_arguments_and_streams(results):
    pointers = [_hex("<Q", p) for p in results["data_pointers"]["ok"]]
    got = results["tensors"]["ok"]
    assert got["params"] == [*pointers, _hex("<i", 5)]
    assert got["stream"] == 0  # no framework in the child: the default stream
    # tvm_ffi.use_raw_stream: the launch takes the stream an exported function sees (the
    # runtime's TVMFFIEnvGetStream), for the tensors' device only; an explicit stream wins.
    assert results["tensors_raw_stream"]["ok"] == {"launch": 0x777, "seen": 0x777}
    assert results["tensors_raw_stream_other_device"]["ok"] == {"launch": 0, "seen": 0}
    assert results["tensors_explicit_stream"]["ok"] == {"launch": 0x55, "seen": 0x777}
    assert results["two_devices"]["error"] == [
        "ValueError",
        f"{_who(results)}: argument 2: the tensor is on cuda:1 but argument 1 is on cuda:0",
    ]


def test_config_attributes(results):
    got = results["config"]["ok"]
    # (id, value words): cluster dims 4, scheduling 5 (spread = 1), PDL 6, cooperative 2,
    # priority 8 (as int -3).
    assert got["attrs"] == [
        [4, 2, 1, 1],
        [5, 1, 0, 0],
        [6, 1, 0, 0],
        [2, 1, 0, 0],
        [8, 2**32 - 3, 0, 0],
    ]
    assert (got["grid"], got["block"]) == ([4, 1, 1], [128, 1, 1])


def test_layouts(results):
    mixed = [[0, 8], [8, 8], [16, 4], [24, 8], [32, 1], [40, 8], [48, 2], [56, 16], [72, 4]]
    add = [[0, 8], [8, 8], [16, 8], [24, 4]]
    assert results["layouts"]["ok"] == [mixed, add, [], [[0, 8], [8, 8]], add]
    assert results["ptx_layout_from_driver"]["ok"]["params"][3] == _hex("<i", 4)


def test_errors(results):
    who = _who(results)
    assert results["count"]["error"] == ["TypeError", f"{who} takes 4 arguments (got 3)"]
    assert results["range"]["error"] == [
        "ValueError",
        f"{who}: argument 4: 4294967296 is out of range for the 4-byte parameter "
        "(-2147483648 to 4294967295)",
    ]
    assert results["float_to_int"]["error"] == [
        "TypeError",
        f"{who}: argument 4: a float cannot be passed as int32",
    ]
    assert results["too_many_threads"]["error"] == [
        "ValueError",
        f"{who}: block (2048, 1, 1) has 2048 threads; device 0 allows at most 1024 per block",
    ]
    assert results["block_z"]["error"] == [
        "ValueError",
        f"{who}: block (1, 1, 128) exceeds device 0's limit of (1024, 1024, 64)",
    ]
    assert results["smem"]["error"] == [
        "ValueError",
        f"{who}: shared_mem=100000 exceeds the kernel's limit of 48128 bytes on device 0; raise "
        "it with kernel.set_max_dynamic_shared_memory()",
    ]
    assert results["driver_error"]["error"] == [
        "RuntimeError",
        "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (701): too many resources requested for launch "
        f"[cuLaunchKernel of {who}]",
    ]
    assert results["grid_zero"]["error"] == [
        "ValueError",
        "grid must be 1 to 3 ints from 1 to 4294967295 (got 0)",
    ]
    assert results["missing"]["error"] == [
        "KeyError",
        f'cuLibraryGetKernel("nope") in module <{results["_cubin_size"]}-byte image>: '
        "CUDA_ERROR_NOT_FOUND (500): named symbol not found; kernels in this module: mixed, add, "
        "no_params, _Z7mangledPiy",
    ]
    assert results["missing_nul"]["error"] == [
        "KeyError",
        f"kernel 'add\\x00x' is not in module <{results['_cubin_size']}-byte image> (the name "
        "holds a NUL byte)",
    ]
    assert results["bad_signature"]["error"] == [
        "ValueError",
        f"{who}: the signature 'float*, int' gives 2 parameters (sizes 8, 4) but the kernel "
        "takes 4 parameters (sizes 8, 8, 8, 4)",
    ]
    assert results["kwargs"]["error"] == [
        "TypeError",
        f"{who}: a launch takes no keyword arguments",
    ]
    assert results["launch_kw"]["error"] == [
        "TypeError",
        "launch() got an unexpected keyword argument 'streams'",
    ]


def test_set_max_dynamic_shared_memory(results):
    # -1: the device's opt-in maximum (232448) minus the kernel's static 1024 bytes.
    assert results["set_max_smem"]["ok"] == 232448 - 1024
    assert results["smem_after"]["ok"]["smem"] == 100000


def test_threads(results):
    assert results["threads"]["ok"] == 2000
