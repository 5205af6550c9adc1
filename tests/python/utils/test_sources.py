"""tvm_ffi.utils._sources: what an image may be read from, and the one embedding policy
(``recognise``) that load_inline, the embed tool and CMake's check share."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tvm_ffi.utils import make_fatbin
from tvm_ffi.utils._sources import read_image, recognise


def test_image_from_fifo_is_refused_without_waiting(tmp_path):
    """Issue 20, item 12: --cubin naming a FIFO blocked for ever, waiting for a writer."""
    fifo = tmp_path / "k.cubin"
    os.mkfifo(fifo)
    with pytest.raises(ValueError) as info:
        read_image(fifo, "cannot embed 'k.cubin'")
    assert str(info.value) == (
        f"cannot embed 'k.cubin': {fifo} is a FIFO, not a regular file; an image is read "
        "from a file"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "tvm_ffi.utils.embed_cubin", "--output-obj", "o.o",
         "--cubin", str(fifo), "--name", "k"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 1
    assert proc.stderr == (
        f"embed_cubin: error: cannot embed {str(fifo)!r}: {fifo} is a FIFO, not a regular "
        "file; an image is read from a file\n"
    )


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_image_from_endless_device_is_refused():
    """/dev/zero never ends: it was read until MemoryError."""
    with pytest.raises(ValueError, match=r"^x: /dev/zero is a character device, not a regular"):
        read_image("/dev/zero", "x")


def test_image_from_directory_is_refused(tmp_path):
    with pytest.raises(ValueError, match=rf"^x: {tmp_path} is a directory, not a regular file"):
        read_image(tmp_path, "x")


def test_image_from_file_and_missing_file(tmp_path):
    path = tmp_path / "k.cubin"
    path.write_bytes(b"\x7fELF data")
    assert read_image(path, "x") == b"\x7fELF data"
    assert read_image(str(path), "x") == b"\x7fELF data"
    with pytest.raises(FileNotFoundError, match=r"^x: image file not found: "):
        read_image(tmp_path / "nope", "x")


PTX = b"// by hand\n.version 8.0\n.target sm_80\n.address_size 64\n"
BAD_PTX = b".version 8.0\n.address_size 64\n"  # no .target: the loader refuses it
UNKNOWN = b"\x12\x34\x56\x78"


def _judge(data: bytes, strict: bool) -> tuple[str, str | None]:
    """("kind", kind), ("warn", message) or ("error", message) for one call of recognise."""
    told: list[str] = []
    try:
        kind = recognise(data, "'x'", strict=strict, warn=told.append)
    except ValueError as err:
        assert not told
        return "error", str(err)
    assert len(told) <= 1
    return ("warn", told[0]) if told else ("kind", kind)


@pytest.mark.parametrize("strict", [False, True])
def test_valid_ptx_is_recognised(strict):
    assert _judge(PTX, strict) == ("kind", "ptx")


@pytest.mark.parametrize("strict", [False, True])
def test_valid_cubin_is_recognised(compile_kernel, strict):
    assert _judge(compile_kernel("sm_80"), strict) == ("kind", "cubin")


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (UNKNOWN, "not a CUBIN, PTX or fatbin image (first bytes: 12 34 56 78)"),
        (BAD_PTX, "not a PTX image: .version is not followed by a .target directive"),
    ],
)
def test_bytes_the_loader_refuses_warn_unless_strict(data, reason):
    assert _judge(data, strict=False) == (
        "warn",
        f"'x' is embedded as it is: {reason}; loading it will fail",
    )
    assert _judge(data, strict=True) == ("error", f"cannot embed 'x': {reason}")
    with pytest.raises(
        ValueError, match=f"^{re.escape(f'cannot embed {chr(39)}x{chr(39)}: {reason}')}$"
    ):
        recognise(data, "'x'", strict=False)  # nobody to warn: refused


def test_empty_and_foreign_elf_are_refused_even_when_not_strict():
    assert _judge(b"", strict=False) == ("error", "cannot embed 'x': empty image (0 bytes)")
    with open(sys.executable, "rb") as file:  # an x86-64 program, not a CUBIN
        host_elf = file.read()
    verdict, message = _judge(host_elf, strict=False)
    assert verdict == "error"
    assert message.startswith("cannot embed 'x': ")


def test_damaged_images_are_refused_even_when_not_strict(compile_kernel):
    cubin = compile_kernel("sm_80")
    fatbin = make_fatbin({"sm_80": cubin})
    for image in (cubin, fatbin):
        verdict, message = _judge(image[: len(image) // 2], strict=False)
        assert verdict == "error"
        assert message.startswith("cannot embed 'x': truncated ")
