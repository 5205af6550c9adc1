"""Reading an image given as bytes or as a path, and deciding whether it is one."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Callable, Union

from .._elf import file_kind
from ._image import check_image, image_kind

__all__ = ["ImageSource", "read_image", "recognise"]

ImageSource = Union[bytes, bytearray, memoryview, str, "os.PathLike[str]"]

# Every PTX file declares its ISA version and target before any code.
_PTX_VERSION = re.compile(rb"^[ \t]*\.version[ \t]+\d", re.M)
_PTX_TARGET = re.compile(rb"^[ \t]*\.target[ \t]+\w", re.M)
# How a str that holds PTX or CUDA text (not a path) usually starts.
_TEXT_START = re.compile(r"\s*(\.version\s|//\s|/\*|#include\b)")


def read_image(source: object, label: str) -> bytes:
    """The bytes of ``source``: bytes as they are, or the content of the file it names."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source)
    if isinstance(source, str) and (
        "\n" in source or "\0" in source or len(source) >= 4096 or
        (_TEXT_START.match(source) is not None and not os.path.exists(source))
    ):  # fmt: skip
        raise TypeError(
            f"{label}: expected image bytes or the path of an image file, got a str of "
            f"{len(source)} characters that looks like PTX or source text; pass "
            "text.encode() to embed the text itself"
        )
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(
            f"{label}: expected image bytes or the path of an image file, got "
            f"{type(source).__name__}"
        )
    path = Path(source)
    try:
        # O_NONBLOCK: a FIFO must not wait for a writer before fstat can refuse it.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise FileNotFoundError(f"{label}: image file not found: {path}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        # A FIFO could block for ever, /dev/zero never ends: only files have a size.
        raise ValueError(
            f"{label}: {path} is {file_kind(mode)}, not a regular file; an image is read "
            "from a file"
        )
    os.set_blocking(fd, True)
    with open(fd, "rb") as file:
        return file.read()


def _not_ptx(data: bytes) -> str | None:
    text = bytes(data[:65536]).split(b"\0", 1)[0]
    if _PTX_VERSION.search(text) and _PTX_TARGET.search(text):
        return None
    return (
        "text without the '.version' and '.target' directives every PTX file carries; "
        "a CUDA source rather than the PTX compiled from it?"
    )


def recognise(
    data: bytes, label: str, *, strict: bool, warn: Callable[[str], None] | None = None
) -> str | None:
    """The kind of ``data`` (``"cubin"``, ``"ptx"``, ``"fatbin"``), after checking its structure.

    A truncated or corrupt image of a known kind is a ValueError. Bytes of no known kind
    are a ValueError when ``strict``, else ``warn`` is told and None returned (apache-tvm-ffi
    embeds any bytes; the loader refuses them later).
    """
    kind = image_kind(data)
    reason = _not_ptx(data) if kind == "ptx" else None
    if kind is None or reason is not None:
        if not data:
            raise ValueError(f"{label}: empty image (0 bytes)")
        if reason is None:
            reason = "first bytes: " + " ".join(f"{b:02x}" for b in bytes(data[:4]))
        message = f"{label}: not a CUBIN, PTX or fatbin image ({reason})"
        if strict or warn is None:
            raise ValueError(message)
        warn(f"{message}; embedding the bytes as they are")
        return None
    try:
        check_image(data)
    except ValueError as err:
        raise ValueError(f"{label}: {err}") from None
    return kind
