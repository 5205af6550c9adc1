"""tvm_ffi.utils._sources.read_image: what an image may be read from (no tools needed)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tvm_ffi.utils._sources import read_image


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
