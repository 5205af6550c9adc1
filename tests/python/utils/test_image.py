"""Image recognition and architecture parsing (tvm_ffi.utils._image), against nvcc output."""

from __future__ import annotations

import re

import pytest

from tvm_ffi.utils import image_archs, image_kind
from tvm_ffi.utils._image import check_image
from tvm_ffi.utils.embed_cubin import make_fatbin


@pytest.mark.parametrize(
    "arch", ["sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_100a", "sm_120"]
)
def test_cubin_arch(compile_kernel, arch):
    cubin = compile_kernel(arch)
    assert image_kind(cubin) == "cubin"
    assert image_archs(cubin) == [arch]


def test_ptx_arch(compile_kernel):
    ptx = compile_kernel("compute_90", ptx=True)
    assert image_kind(ptx) == "ptx"
    assert image_archs(ptx) == ["compute_90"]


def test_fatbin_archs(compile_kernel):
    fatbin = make_fatbin(
        {
            "sm_80": compile_kernel("sm_80"),
            "sm_90a": compile_kernel("sm_90a"),
            "compute_90": compile_kernel("compute_90", ptx=True),
        }
    )
    assert image_kind(fatbin) == "fatbin"
    assert image_archs(fatbin) == ["sm_80", "sm_90a", "compute_90"]


def test_truncated_cubin(compile_kernel):
    cubin = compile_kernel("sm_90")
    with pytest.raises(
        ValueError,
        match=r"^truncated or corrupt CUBIN image: the section table ends at byte \d+ "
        r"but the image has 1000 bytes$",
    ):
        check_image(cubin[:1000])
    with pytest.raises(ValueError, match=r"^truncated CUBIN image: 40 bytes"):
        check_image(cubin[:40])


def test_truncated_fatbin(compile_kernel):
    fatbin = make_fatbin({"sm_80": compile_kernel("sm_80")})
    with pytest.raises(ValueError, match=r"^truncated fatbin image: its header declares \d+ bytes"):
        check_image(fatbin[:100])


def test_not_an_image():
    assert image_kind(b"\x12\x34\x56\x78\x9a") is None
    with pytest.raises(
        ValueError, match=re.escape("not a CUBIN, PTX or fatbin image (first bytes: 12 34 56 78)")
    ):
        image_archs(b"\x12\x34\x56\x78\x9a")
    with pytest.raises(ValueError, match=r"^empty image \(0 bytes\)$"):
        check_image(b"")


def test_non_cuda_elf():
    import sys
    from pathlib import Path

    host_elf = Path(sys.executable).read_bytes()[:4096]
    with pytest.raises(ValueError, match=r"^ELF image is not a CUBIN \(e_machine \d+"):
        check_image(host_elf)


@pytest.mark.parametrize("prefix", [b"\f", b" " * 100, b" \t\n\v\f\r"])
def test_ptx_after_whitespace(prefix):
    ptx = prefix + b"// made by hand\n.version 8.0\n.target sm_80\n.address_size 64\n"
    assert image_kind(ptx) == "ptx"
    assert image_archs(ptx) == ["compute_80"]


def test_cuda_source_is_not_ptx():
    source = b"// kernels\n// .version 8.0\n__global__ void f() {}\n"
    assert image_kind(source) == "ptx"  # judged from the first bytes only
    with pytest.raises(
        ValueError,
        match=r"^not a PTX image: no \.version directive at its start \(only whitespace and "
        r"comments may precede it\); CUDA source must be compiled to PTX first$",
    ):
        check_image(source)
    with pytest.raises(
        ValueError, match=r"^not a PTX image: \.version is not followed by a \.target directive$"
    ):
        check_image(b".version 8.0\n.address_size 64\n")
