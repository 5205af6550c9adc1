"""tvm_ffi.cpp.nvrtc: compiling with NVRTC needs the NVRTC library, not a GPU."""

from __future__ import annotations

import struct
import sys

import pytest

from tvm_ffi import _cuda_toolkit
from tvm_ffi.cpp import nvrtc as nvrtc_mod
from tvm_ffi.cpp.nvrtc import NVRTCError, nvrtc_compile
from tvm_ffi.utils import _fatbin
from tvm_ffi.utils._image import image_archs

KERNEL = r"""
extern "C" __global__ void fill(int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = VALUE;
}
"""

EM_CUDA = 190


def _assert_cubin(image: bytes, arch: str) -> None:
    assert image[:4] == b"\x7fELF"
    assert image[4] == 2, "64-bit ELF"
    (e_machine,) = struct.unpack_from("<H", image, 18)
    assert e_machine == EM_CUDA
    assert image_archs(image) == [arch]


@pytest.mark.parametrize(
    "arch, held",
    [
        ("sm_80", "sm_80"),
        ("sm_90", "sm_90"),
        ("sm_90a", "sm_90a"),
        ((7, 5), "sm_75"),
        ("9.0", "sm_90"),
        ("9.0a", "sm_90a"),
        ("10.0f", "sm_100f"),
    ],
)
def test_cubin_is_an_elf_for_the_requested_arch(arch, held):
    _assert_cubin(nvrtc_compile(KERNEL, arch=arch, extra_opts=["-DVALUE=7"]), held)


def test_arch_spellings_agree():
    images = {
        spelling: nvrtc_compile(KERNEL, arch=spelling, extra_opts=["-DVALUE=7"])
        for spelling in ("sm_90", "compute_90", "90", "9.0", (9, 0), 90)
    }
    for image in images.values():
        _assert_cubin(image, "sm_90")
    assert len(set(images.values())) == 1, "NVRTC output should not depend on the spelling"


def test_ptx_output_targets_the_arch_and_ends_with_one_nul():
    ptx = nvrtc_compile(KERNEL, arch="sm_90", extra_opts=["-DVALUE=12345"], output="ptx")
    assert b".target sm_90\n" in ptx or b".target sm_90\r" in ptx or b".target sm_90 " in ptx
    assert ptx.endswith(b"\0") and not ptx.endswith(b"\0\0")
    assert ptx.count(b"\0") == 1
    assert b".entry fill(" in ptx
    assert b"12345" in ptx, "extra_opts reach the compiler"
    assert image_archs(ptx) == ["compute_90"]


def test_ptx_keeps_the_arch_suffix():
    ptx = nvrtc_compile(KERNEL, arch="sm_90a", extra_opts=["-DVALUE=1"], output="ptx")
    assert b".target sm_90a" in ptx


def _fatbinary_found() -> bool:
    try:
        _fatbin._fatbinary()
    except RuntimeError:
        return False
    return True


@pytest.mark.parametrize("packer", ["nvfatbin", "fatbinary"])
def test_fatbin_holds_each_arch_and_ptx_of_the_highest(packer, monkeypatch):
    if packer == "nvfatbin":
        # nvidia-nvfatbin is in the test extra: not loading it is a failure, not a skip.
        assert _fatbin._nvfatbin() is not None, (
            "nvFatbin not loadable (pip install nvidia-nvfatbin)"
        )
        # nvFatbin packs in this process: no fatbinary program is run.
        monkeypatch.setattr(_fatbin, "_fatbinary", lambda: pytest.fail("ran fatbinary"))
    else:
        if not _fatbinary_found():
            pytest.skip("CUDA's fatbinary tool not found (set CUDA_HOME)")
        monkeypatch.setattr(_fatbin, "_nvfatbin", lambda: None)
    image = nvrtc_compile(
        KERNEL, arch=["sm_80", (9, 0), "90a"], extra_opts=["-DVALUE=1"], output="fatbin"
    )
    assert struct.unpack_from("<I", image)[0] == 0xBA55ED50
    assert image_archs(image) == ["sm_80", "sm_90", "sm_90a", "compute_90a"]
    single = nvrtc_compile(KERNEL, arch="sm_90", extra_opts=["-DVALUE=1"], output="fatbin")
    assert image_archs(single) == ["sm_90", "compute_90"]
    # A +PTX or compute_ entry says which PTX goes in: then no other is added.
    chosen = nvrtc_compile(KERNEL, arch="8.0+PTX;9.0", extra_opts=["-DVALUE=1"], output="fatbin")
    assert image_archs(chosen) == ["sm_80", "sm_90", "compute_80"]
    ptx_only = nvrtc_compile(KERNEL, arch="compute_80", extra_opts=["-DVALUE=1"], output="fatbin")
    assert image_archs(ptx_only) == ["compute_80"]


def test_source_may_be_bytes():
    _assert_cubin(nvrtc_compile(KERNEL.encode(), arch="90", extra_opts=["-DVALUE=3"]), "sm_90")


def test_compile_error_carries_the_log_and_location():
    source = (
        'extern "C" __global__ void broken(int* out) {\n  out[0] = 1;\n  undefined_thing = 2;\n}\n'
    )
    with pytest.raises(NVRTCError) as info:
        nvrtc_compile(source, name="broken.cu", arch="sm_90")
    err = info.value
    assert isinstance(err, RuntimeError)
    assert str(err).startswith('broken.cu(3): error: identifier "undefined_thing" is undefined\n')
    assert "NVRTC_ERROR_COMPILATION" in str(err)
    assert "1 error detected in the compilation of" in err.log
    assert err.log.rstrip() in str(err), "the message carries the full log"
    assert "-arch=sm_90" in err.options and "--std=c++17" in err.options


def test_invalid_option_is_reported():
    with pytest.raises(NVRTCError, match=r"^nvrtc: error: .*--gpu-architecture") as info:
        nvrtc_compile(KERNEL, arch="sm_999", extra_opts=["-DVALUE=1"])
    assert "NVRTC_ERROR_INVALID_OPTION" in str(info.value)


def test_include_paths(tmp_path):
    (tmp_path / "fill_value.h").write_text("#define VALUE 4242\n")
    source = '#include "fill_value.h"\n' + KERNEL
    ptx = nvrtc_compile(source, arch="sm_90", include_paths=[str(tmp_path)], output="ptx")
    assert b"4242" in ptx
    with pytest.raises(NVRTCError, match=r'cannot open source file "fill_value.h"'):
        nvrtc_compile(source, arch="sm_90")


def test_arch_none_uses_the_current_device(monkeypatch):
    import tvm_ffi._cuda_driver as driver

    monkeypatch.setattr(driver, "compute_capabilities", lambda: [(8, 0), (9, 0)])
    monkeypatch.delitem(sys.modules, "torch", raising=False)  # device 0 is then current
    _assert_cubin(nvrtc_compile(KERNEL, extra_opts=["-DVALUE=1"]), "sm_80")


def test_arch_none_without_a_device(monkeypatch):
    import tvm_ffi._cuda_driver as driver

    monkeypatch.setattr(driver, "compute_capabilities", lambda: [])
    with pytest.raises(
        RuntimeError, match=r'^nvrtc_compile: no CUDA device found; pass arch="sm_90"$'
    ):
        nvrtc_compile(KERNEL)


@pytest.mark.parametrize("arch", ["sm_9x", "sm90", "ampere", "", (9,), (9, 10), 7, True, 9.0])
def test_bad_arch_message(arch):
    expected = (
        f"nvrtc_compile: cannot parse arch {arch!r} (expected 9.0, 90, sm_90, compute_90, "
        "9.0a, sm_90a or 10.0f, each optionally +PTX, or native; or 90, or (9, 0))"
    )
    with pytest.raises(ValueError) as info:
        nvrtc_compile(KERNEL, arch=arch)
    assert str(info.value) == expected


def test_arch_list_needs_fatbin():
    with pytest.raises(ValueError, match=r"^nvrtc_compile: a list of archs needs output='fatbin'"):
        nvrtc_compile(KERNEL, arch=["sm_80", "sm_90"])


def test_bad_output():
    with pytest.raises(
        ValueError,
        match=r"^nvrtc_compile: output must be one of \('cubin', 'ptx', 'fatbin'\) \(got 'elf'\)$",
    ):
        nvrtc_compile(KERNEL, arch="sm_90", output="elf")


def test_missing_bindings_name_the_packages(monkeypatch):
    # None in sys.modules makes the import fail as if the package were not installed.
    for name in ("cuda", "cuda.bindings", "cuda.bindings.nvrtc", "cuda.nvrtc"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ImportError, match=r"pip install cuda-bindings nvidia-cuda-nvrtc$"):
        nvrtc_compile(KERNEL, arch="sm_90")


@pytest.mark.parametrize(
    ("extra_opts", "expected"),
    [
        ("-lineinfo", ["-lineinfo"]),
        ("-lineinfo -DMSG='a b'", ["-lineinfo", "-DMSG=a b"]),
        (["-lineinfo", "-DX=1"], ["-lineinfo", "-DX=1"]),
        (None, []),
    ],
)
def test_extra_opts_str_is_options_not_characters(monkeypatch, extra_opts, expected):
    """A str was iterated character by character ("-", "l", "i", ...)."""
    seen = []
    monkeypatch.setattr(nvrtc_mod, "_import_nvrtc", lambda: None)
    monkeypatch.setattr(nvrtc_mod, "_cuda_include_dirs", lambda: ([], ""))
    monkeypatch.setattr(
        nvrtc_mod, "_compile_one", lambda _n, _s, _name, _arch, opts, *_: seen.append(opts)
    )
    nvrtc_compile(KERNEL, arch="sm_90", extra_opts=extra_opts)
    assert seen == [["--std=c++17", *expected]]


def test_extra_opts_must_be_strings():
    with pytest.raises(
        TypeError, match=r"^nvrtc_compile: extra_opts must be a str or a list of str \(got \[7\]\)$"
    ):
        nvrtc_compile(KERNEL, arch="sm_90", extra_opts=[7])


def test_import_is_lazy():
    assert "cuda" not in vars(nvrtc_mod)
    assert nvrtc_mod.__all__ == ["NVRTCError", "nvrtc_compile"]


TWO_KERNELS = (
    b'extern "C" __global__ void f(int* o) { *o = 1; }\n'
    b"// %s\n"
    b'extern "C" __global__ void g(int* o) { *o = 2; }\n'
)


@pytest.mark.parametrize(
    ("byte", "name"), [(b"\xff", "a 0xFF byte"), (b"\0", "a NUL byte")], ids=["0xff", "nul"]
)
def test_source_byte_that_would_end_it_is_refused(byte, name):
    """Issue 9, item 11: NVRTC reads 0xFF as the end of the file (and stops at a NUL):
    kernel g vanished from the image without a word."""
    source = TWO_KERNELS % (b"caf" + byte)
    with pytest.raises(ValueError) as info:
        nvrtc_compile(source, arch="sm_80", output="ptx")
    assert str(info.value) == (
        f"nvrtc_compile: source holds {name} at line 2, column 7; NVRTC would silently "
        "ignore everything from there on"
    )


def test_source_str_without_utf8_encoding_is_refused():
    with pytest.raises(ValueError) as info:
        nvrtc_compile("// \udcff\n", arch="sm_80")
    assert str(info.value) == ("nvrtc_compile: source holds '\\udcff', which has no UTF-8 encoding")


def test_other_bytes_pass_through_intact():
    """A Latin-1 comment (0xE9) is not UTF-8, but NVRTC reads past it: both kernels stay."""
    ptx = nvrtc_compile(TWO_KERNELS % b"caf\xe9", arch="sm_80", output="ptx")
    assert b".entry f" in ptx and b".entry g" in ptx


HALF_KERNEL = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void halves(__half* h, __nv_bfloat16* b) {
  *h = __float2half(1.5f);
  *b = __float2bfloat16(2.5f);
}
"""


def _cuda_headers() -> bool:
    try:
        _cuda_toolkit.find_cuda(nvcc=False, cudart=False)
    except RuntimeError:
        return False
    return True


@pytest.mark.skipif(not _cuda_headers(), reason="needs the CUDA headers")
def test_cuda_fp16_and_bf16_need_no_include_paths():
    ptx = nvrtc_compile(HALF_KERNEL, arch="sm_90", output="ptx")
    assert b".entry halves(" in ptx


@pytest.mark.skipif(not _cuda_headers(), reason="needs the CUDA headers")
def test_the_cuda_headers_come_after_the_callers_include_paths(tmp_path):
    (tmp_path / "cuda_fp16.h").write_text("#define MINE 31337\n")
    source = '#include <cuda_fp16.h>\nextern "C" __global__ void f(int* o) { *o = MINE; }\n'
    ptx = nvrtc_compile(source, arch="sm_90", include_paths=[str(tmp_path)], output="ptx")
    assert b"31337" in ptx
    with pytest.raises(NVRTCError) as info:
        nvrtc_compile(source, arch="sm_90")
    install = _cuda_toolkit.find_cuda(nvcc=False, cudart=False)
    assert info.value.options[-1] == f"-I{install.cccl_dir or install.include_dirs[-1]}"


def test_without_cuda_headers_the_failure_says_why(monkeypatch):
    def absent(**kwargs):
        raise RuntimeError("CUDA not found: (places)")

    monkeypatch.setattr(_cuda_toolkit, "find_cuda", absent)
    with pytest.raises(NVRTCError) as info:
        nvrtc_compile(HALF_KERNEL, name="halves.cu", arch="sm_90")
    message = str(info.value)
    assert message.startswith(
        'halves.cu(2): catastrophic error: could not open source file "cuda_fp16.h" '
        "(no directories in search list)\n"
    )
    assert message.endswith("\n(the CUDA headers were not added: CUDA not found: (places))")
