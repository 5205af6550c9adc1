"""tvm_ffi.cuda without a GPU: parameter layouts read from nvcc-built CUBINs and fatbins,
signature strings, grid/block values, argument packing against a layout, the exact errors
for wrong counts, sizes, ranges and devices, LaunchConfig and the {arch: image} choice.

Everything here runs the driver-free half of _core's launch code, the code the GPU launch
path runs before cuLaunchKernel, through a test-only extension built from the same sources
(``hooks``: param_layout, parse_signature, dim3, pack_args; see cuda_test_hooks.cc).
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import re
import shutil
import struct
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy
import pytest

import tvm_ffi.libinfo
from helpers import SOURCES

hooks = None  # the test-only extension, set once per module by the fixture below

REPO = Path(__file__).resolve().parents[2]
# What the hooks reach of the extension's sources: cuda_args.cc's layouts, signatures and
# packing, and the core's argument conversion that packing reads tensors through (all of
# core/ but module.cc, which makes _core's module), linked to the package's runtime.
PYTHON_SOURCES = REPO / "src" / "python"
RUNTIME_DIR = Path(tvm_ffi.libinfo.find_libtvm_ffi()).parent


def _hook_sources() -> list[Path]:
    core = [p for p in sorted((PYTHON_SOURCES / "core").glob("*.cc")) if p.name != "module.cc"]
    return [SOURCES / "cuda_test_hooks.cc", PYTHON_SOURCES / "cuda" / "cuda_args.cc", *core]


@pytest.fixture(scope="module", autouse=True)
def _hooks(tmp_path_factory):
    """Compiles ``_cuda_test_hooks`` (tests/helpers/cuda_test_hooks.cc) once from src/python's
    own sources as setup.py compiles them: the production ``tvm_ffi._core`` exports no
    test-only functions."""
    global hooks
    import pybind11

    cxx = os.environ.get("CXX", "c++")
    if shutil.which(cxx) is None:
        pytest.skip(f"needs a C++ compiler ({cxx} not found)")
    target = (
        tmp_path_factory.mktemp("hooks")
        / f"_cuda_test_hooks{sysconfig.get_config_var('EXT_SUFFIX')}"
    )
    includes = [
        PYTHON_SOURCES / "cuda_decls",
        PYTHON_SOURCES,
        REPO / "include",
        pybind11.get_include(),
        sysconfig.get_paths()["include"],
    ]
    cmd = [cxx, "-shared", "-fPIC", "-std=c++17", "-O1", "-fvisibility=hidden"]
    cmd += [f"-I{path}" for path in includes]
    cmd += [str(path) for path in _hook_sources()]
    cmd += [f"-L{RUNTIME_DIR}", "-ltvm_ffi", f"-Wl,-rpath,{RUNTIME_DIR}", "-ldl", "-o", str(target)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        pytest.fail(f"compiling the test hooks failed:\n{' '.join(cmd)}\n{proc.stderr}")
    spec = importlib.util.spec_from_file_location("_cuda_test_hooks", target)
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)


KERNELS_CU = r"""
struct Pair { double a; char b; };
extern "C" __global__ void mixed(const float* x, float* y, int n, double d, char c,
                                 long long q, short s, Pair p, float f) {}
extern "C" __global__ void no_params() {}
extern "C" __global__ void vectors(float4 v, char c, double2 w) {}
extern "C" __global__ void add(const float* a, const float* b, float* out, int n) {}
extern "C" __global__ void add_one(const float* x, float* y, long long n) {}
__global__ void mangled(int* x, unsigned long long u) {}
"""

MIXED = [(0, 8), (8, 8), (16, 4), (24, 8), (32, 1), (40, 8), (48, 2), (56, 16), (72, 4)]
WHO = 'kernel "k" in module <test>'


def _nvcc():
    from tvm_ffi.cpp._toolchain import find_cuda_tool

    try:
        return str(find_cuda_tool("nvcc"))
    except RuntimeError as e:
        pytest.skip(f"needs nvcc: {e}")


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    """{"cubin": bytes, "fatbin": bytes} of KERNELS_CU for sm_80 (no GPU needed to build)."""
    nvcc = _nvcc()
    root = tmp_path_factory.mktemp("cuda_args")
    (root / "k.cu").write_text(KERNELS_CU)
    out = {}
    for kind, flags in {
        "cubin": ["--cubin", "-arch=sm_80"],
        "fatbin": ["--fatbin", "-gencode=arch=compute_80,code=sm_80", "--compress-mode=none"],
    }.items():
        target = root / f"k.{kind}"
        subprocess.run([nvcc, *flags, str(root / "k.cu"), "-o", str(target)], check=True)
        out[kind] = target.read_bytes()
    return out


# ---- layouts read from the image ------------------------------------------------------------


@pytest.mark.parametrize("kind", ["cubin", "fatbin"])
def test_layout_from_image(images, kind):
    image = images[kind]
    assert hooks.param_layout(image, "mixed") == MIXED
    assert hooks.param_layout(image, "no_params") == []
    assert hooks.param_layout(image, "vectors") == [(0, 16), (16, 1), (32, 16)]
    assert hooks.param_layout(image, "add") == [(0, 8), (8, 8), (16, 8), (24, 4)]
    assert hooks.param_layout(image, "_Z7mangledPiy") == [(0, 8), (8, 8)]


def test_layout_of_missing_kernel_is_none(images):
    assert hooks.param_layout(images["cubin"], "missing") is None
    # A prefix of a kernel's name is not that kernel.
    assert hooks.param_layout(images["cubin"], "add_on") is None


def test_layout_matches_signature(images):
    sig = "const float* x, float* y, int n, double d, char c, long long q, short s"
    parsed = [(o, s) for o, s, _ in hooks.parse_signature(sig)]
    assert parsed == MIXED[:7]


def test_layout_of_ptx_and_garbage_is_none(images):
    assert hooks.param_layout(b".version 8.0\n.target sm_80\n", "add") is None
    assert hooks.param_layout(b"", "add") is None
    assert hooks.param_layout(b"\x7fELF" + b"\0" * 60, "add") is None


def test_truncated_images_never_crash(images):
    image = images["cubin"]
    for cut in range(0, len(image), max(1, len(image) // 97)):
        layout = hooks.param_layout(image[:cut], "mixed")
        assert layout is None or layout == MIXED


def _section(image: bytes, name: str) -> tuple[int, int]:
    """(offset, size) of an ELF section, read with struct (independent of the C++ parser)."""
    shoff = struct.unpack_from("<Q", image, 40)[0]
    shnum, shstrndx = struct.unpack_from("<HH", image, 60)
    headers = [struct.unpack_from("<IIQQQQ", image, shoff + 64 * i) for i in range(shnum)]
    strtab = headers[shstrndx][4]
    for h in headers:
        start = strtab + h[0]
        if image[start : image.index(b"\0", start)].decode() == name:
            return h[4], h[5]
    raise AssertionError(f"no section {name}")


def test_corrupt_kparam_records_give_no_layout(images):
    image = images["cubin"]
    offset, size = _section(image, ".nv.info.mixed")
    record = b"\x04\x17\x0c\x00"  # SVAL, EIATTR_KPARAM_INFO, 12 bytes
    first = image.index(record, offset, offset + size)
    second = image.index(record, first + 1, offset + size)
    # Two records with one ordinal: not a layout.
    dup = bytearray(image)
    dup[second + 8 : second + 10] = image[first + 8 : first + 10]
    assert hooks.param_layout(bytes(dup), "mixed") is None
    # A record whose length runs past its section's end.
    long = bytearray(image)
    long[first + 2 : first + 4] = struct.pack("<H", 0xFFFF)
    assert hooks.param_layout(bytes(long), "mixed") is None
    # A section that runs past the image.
    assert hooks.param_layout(image[: offset + size - 1], "mixed") is None


# ---- signatures -----------------------------------------------------------------------------


def test_signature_types():
    sig = (
        "const float* __restrict__ x, void *p, int n, unsigned int u, int64_t q, uint64_t w, "
        "float f, double d, bool b, short s, std::size_t z"
    )
    assert hooks.parse_signature(sig) == [
        (0, 8, "pointer"),
        (8, 8, "pointer"),
        (16, 4, "int32"),
        (20, 4, "uint32"),
        (24, 8, "int64"),
        (32, 8, "uint64"),
        (40, 4, "float32"),
        (48, 8, "float64"),
        (56, 1, "uint8"),
        (58, 2, "int16"),
        (64, 8, "uint64"),
    ]


def test_signature_with_name_and_parens():
    want = [(0, 8, "pointer"), (8, 4, "int32")]
    assert hooks.parse_signature("void k(float* x, int n)") == want
    assert hooks.parse_signature("(float*, int)") == want
    assert hooks.parse_signature("") == []
    assert hooks.parse_signature("void") == []


def test_signature_errors():
    with pytest.raises(
        ValueError,
        match=r"^cannot read the signature 'float\*, quux n': parameter 2 \('quux n'\) is not "
        r"a pointer or a known scalar type$",
    ):
        hooks.parse_signature("float*, quux n")
    with pytest.raises(ValueError, match=r"^cannot read the signature 'k\(int': unbalanced"):
        hooks.parse_signature("k(int")


# ---- grid and block -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, want", [(7, (7, 1, 1)), ((7,), (7, 1, 1)), ((2, 3), (2, 3, 1)), ((2, 3, 4), (2, 3, 4))]
)
def test_dim3(value, want):
    assert hooks.dim3(value, "grid") == want


@pytest.mark.parametrize("value", [0, (0, 1), (1, -2), 2**32, (1, 1, 2**32)])
def test_dim3_out_of_range(value):
    want = rf"^block must be 1 to 3 ints from 1 to 4294967295 \(got {re.escape(repr(value))}\)$"
    with pytest.raises(ValueError, match=want):
        hooks.dim3(value, "block")


@pytest.mark.parametrize("value", [(), (1, 2, 3, 4), "4", 2.0, (1, 2.0), True, [1, 2]])
def test_dim3_wrong_type(value):
    with pytest.raises(TypeError, match=r"^grid must be an int or a tuple of 1 to 3 ints \(got "):
        hooks.dim3(value, "grid")


# ---- packing --------------------------------------------------------------------------------


def _pack(params, *args, accept_host=False):
    return hooks.pack_args(params, args, accept_host)


def test_pack_ints_and_floats_sized_by_layout():
    buf, device = _pack(
        [(0, 4), (8, 8), (16, 4), (24, 8), (32, 1), (34, 2)], 7, -3, 1.5, 2.25, 255, -2
    )
    assert device == -1
    assert struct.unpack_from("<i", buf, 0)[0] == 7
    assert struct.unpack_from("<q", buf, 8)[0] == -3
    assert struct.unpack_from("<f", buf, 16)[0] == 1.5
    assert struct.unpack_from("<d", buf, 24)[0] == 2.25
    assert buf[32] == 255
    assert struct.unpack_from("<h", buf, 34)[0] == -2
    # Padding is never written (the helper poisons it with 'Z').
    assert buf[4:8] == b"ZZZZ"


def test_pack_full_unsigned_ranges():
    buf, _ = _pack([(0, 4), (8, 8)], 2**32 - 1, 2**64 - 1)
    assert struct.unpack_from("<IQ", buf.ljust(16)[:4] + buf[8:16]) == (2**32 - 1, 2**64 - 1)


def test_pack_bool_none_and_int_for_float():
    buf, _ = _pack("bool, float*, float, double", True, None, 3, 4)
    assert buf[0] == 1
    assert struct.unpack_from("<Q", buf, 8)[0] == 0
    assert struct.unpack_from("<f", buf, 16)[0] == 3.0
    assert struct.unpack_from("<d", buf, 24)[0] == 4.0


def test_pack_scalars_keep_their_own_type():
    buf, _ = _pack(
        [(0, 2), (4, 4), (8, 8), (16, 4), (24, 8)],
        numpy.float16(1.5),
        numpy.int32(-9),
        numpy.float64(0.5),
        ctypes.c_uint32(7),
        ctypes.c_void_p(0x1234),
    )
    assert numpy.frombuffer(buf[0:2], numpy.float16)[0] == 1.5
    assert struct.unpack_from("<i", buf, 4)[0] == -9
    assert struct.unpack_from("<d", buf, 8)[0] == 0.5
    assert struct.unpack_from("<I", buf, 16)[0] == 7
    assert struct.unpack_from("<Q", buf, 24)[0] == 0x1234


def test_pack_struct_by_value_as_bytes():
    raw = struct.pack("<dB7x", 2.5, 9)
    buf, _ = _pack([(0, 8), (8, 16)], 1, raw)
    assert buf[8:24] == raw


def test_pack_tensor_pointer_host_for_tests():
    x = numpy.arange(6, dtype=numpy.float32)[2:]
    buf, device = _pack("float*, int", x, 4, accept_host=True)
    assert struct.unpack_from("<Q", buf, 0)[0] == x.ctypes.data
    assert device == -1


def test_pack_raw_int_pointer_with_signature():
    buf, _ = _pack("float*, float*, int", 0xDEAD0000, 2**63 + 8, 5)
    assert struct.unpack_from("<QQi", buf) == (0xDEAD0000, 2**63 + 8, 5)


def test_pack_many_arguments():
    sig = ", ".join(["float*"] * 15 + ["int"])
    buf, _ = _pack(sig, *range(1, 16), 16)
    assert struct.unpack_from("<15Qi", buf) == (*range(1, 16), 16)


# ---- errors ---------------------------------------------------------------------------------


def test_wrong_count():
    with pytest.raises(TypeError, match=rf"^{WHO} takes 3 arguments \(got 2\)$"):
        _pack("float*, float*, int", 1, 2)
    with pytest.raises(TypeError, match=rf"^{WHO} takes 1 argument \(got 0\)$"):
        _pack("int")


@pytest.mark.parametrize(
    "params, value, name, lo, hi",
    [
        ([(0, 4)], 2**32, "4-byte", "-2147483648", "4294967295"),
        ([(0, 4)], -(2**31) - 1, "4-byte", "-2147483648", "4294967295"),
        ("int", 2**31, "int32", "-2147483648", "2147483647"),
        ("unsigned int", -1, "uint32", "0", "4294967295"),
        ("int64_t", 2**63, "int64", "-9223372036854775808", "9223372036854775807"),
        ([(0, 8)], 2**64, "8-byte", "-9223372036854775808", "18446744073709551615"),
        ("char", 128, "int8", "-128", "127"),
        ("float*", -1, "pointer", "0", "18446744073709551615"),
    ],
)
def test_int_out_of_range(params, value, name, lo, hi):
    with pytest.raises(
        ValueError,
        match=rf"^{WHO}: argument 1: {value} is out of range for the {name} parameter "
        rf"\({lo} to {hi}\)$",
    ):
        _pack(params, value)


def test_wrong_sizes():
    with pytest.raises(
        TypeError,
        match=rf"^{WHO}: argument 2: a float needs a 4- or 8-byte parameter \(this one has 2 "
        r"bytes\)$",
    ):
        _pack([(0, 8), (8, 2)], 1, 1.0)
    with pytest.raises(
        TypeError,
        match=rf"^{WHO}: argument 1: an int needs a 1-, 2-, 4- or 8-byte parameter \(this one "
        r"has 16 bytes\)$",
    ):
        _pack([(0, 16)], 1)
    with pytest.raises(
        TypeError,
        match=rf"^{WHO}: argument 1: a tensor passes an 8-byte pointer, but the parameter has 4 "
        r"bytes$",
    ):
        _pack([(0, 4)], numpy.zeros(2), accept_host=True)
    with pytest.raises(
        TypeError, match=rf"^{WHO}: argument 1: a numpy.int32 of 4 bytes for the 8-byte parameter$"
    ):
        _pack([(0, 8)], numpy.int32(1))


def test_wrong_kinds_with_signature():
    with pytest.raises(TypeError, match=rf"^{WHO}: argument 2: a float cannot be passed as int32$"):
        _pack("float*, int", 0, 1.5)
    with pytest.raises(
        TypeError, match=rf"^{WHO}: argument 1: a tensor cannot be passed as int64$"
    ):
        _pack("int64_t", numpy.zeros(1), accept_host=True)
    with pytest.raises(
        TypeError,
        match=rf"^{WHO}: argument 1: cannot pass a dict \(a kernel takes tensors, ints, floats, "
        r"numpy scalars, ctypes values and bytes\)$",
    ):
        _pack([(0, 8)], {})


def test_tensor_on_cpu_is_refused():
    with pytest.raises(
        ValueError,
        match=rf"^{WHO}: argument 2: the tensor is on cpu:0; a kernel takes tensors on a CUDA "
        r"device$",
    ):
        _pack("int, float*", 1, numpy.zeros(3))


def test_torch_cpu_tensor_through_exchange_api():
    import torch

    x = torch.arange(4, dtype=torch.float32)
    buf, _ = _pack("float*", x[1:], accept_host=True)
    assert struct.unpack_from("<Q", buf)[0] == x.data_ptr() + 4
    with pytest.raises(ValueError, match=rf"^{WHO}: argument 1: the tensor is on cpu:0; "):
        _pack("float*", x)


# ---- LaunchConfig and the {arch: image} choice -----------------------------------------------


def test_launch_config_packed():
    from tvm_ffi.cuda import LaunchConfig

    assert LaunchConfig()._packed == (0, 0, 0, -1, 0, 0, -(2**63))
    cfg = LaunchConfig(
        cluster=(2,), cluster_scheduling="spread", pdl=True, cooperative=True, priority=-2
    )
    assert cfg._packed == (2, 1, 1, 1, 1, 1, -2)
    assert repr(cfg) == (
        "LaunchConfig(cluster=(2,), cluster_scheduling='spread', pdl=True, cooperative=True, "
        "priority=-2)"
    )
    with pytest.raises(AttributeError, match=r"^LaunchConfig is immutable; make a new one$"):
        cfg.pdl = False


def test_launch_config_errors():
    from tvm_ffi.cuda import LaunchConfig

    with pytest.raises(
        ValueError, match=r"^cluster must be an int or 1 to 3 positive ints \(got \(0, 1\)\)$"
    ):
        LaunchConfig(cluster=(0, 1))
    with pytest.raises(
        ValueError, match=r"^cluster_scheduling must be one of 'default', 'spread', "
    ):
        LaunchConfig(cluster_scheduling="fast")
    with pytest.raises(TypeError, match=r"^priority must be an int \(got float\)$"):
        LaunchConfig(priority=1.0)


@pytest.mark.parametrize(
    "keys, capability, want",
    [
        (["sm_80", "sm_90", "sm_90a"], (9, 0), "sm_90a"),
        (["sm_80", "sm_90"], (9, 0), "sm_90"),
        (["sm_80", "sm_86"], (8, 9), "sm_86"),
        (["compute_80", "sm_90"], (8, 6), "compute_80"),
        ([80, 90], (9, 0), 90),
        (["sm_100a", "compute_90"], (10, 3), "compute_90"),
    ],
)
def test_select_arch(keys, capability, want):
    from tvm_ffi.cuda import _select_arch

    assert _select_arch(keys, capability) == want


def test_select_arch_errors():
    from tvm_ffi.cuda import _select_arch

    with pytest.raises(
        ValueError,
        match=r"^CubinModule: none of the images \(sm_90, compute_100\) runs on a device of "
        r"compute capability 8\.0 \(sm_80\)$",
    ):
        _select_arch(["sm_90", "compute_100"], (8, 0))
    with pytest.raises(ValueError, match=r"^CubinModule: 'hopper' is not an architecture"):
        _select_arch(["hopper"], (9, 0))


def test_import_is_lazy():
    code = "import sys, tvm_ffi.cuda; print('torch' in sys.modules, 'tvm_ffi._core' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


@pytest.mark.parametrize(
    ("make", "bit", "fix"),
    [
        (lambda t: t.conj(), "conjugate", "resolve_conj"),
        (lambda t: t.conj().imag, "negative", "resolve_neg"),
    ],
)
def test_pack_refuses_torch_conj_and_neg_bits(make, bit, fix):
    # The kernel would read the values before torch's lazy conjugation or negation.
    import torch

    z = torch.tensor([1 + 2j, 3 + 4j], dtype=torch.complex64)
    view = make(z)
    with pytest.raises(
        BufferError,
        match=rf"argument 1: can't pass a torch tensor with the {bit} bit set; "
        rf"pass tensor\.{fix}\(\)",
    ):
        _pack("void*", view, accept_host=True)
    _pack("void*", getattr(view, fix)(), accept_host=True)  # resolved: accepted
