"""Reading an image given as bytes or as a path, and the one policy for embedding it."""

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


def recognise(
    data: bytes, subject: str, *, strict: bool, warn: Callable[[str], None] | None = None
) -> str | None:
    """The kind of ``data`` (``"cubin"``, ``"ptx"``, ``"fatbin"``) after the loader's checks:
    the one policy of every embedder (``load_inline``, the embed tool, CMake's check).

    An empty image, or a truncated or corrupt CUBIN or fatbin, is a ValueError: the driver
    trusts the sizes inside an image and would read past it. Other bytes the loader refuses
    (no known kind, text that breaks the PTX rules) are a ValueError when ``strict``, else
    ``warn`` is told and None returned (apache-tvm-ffi embeds any bytes; loading them fails).
    ``subject`` names the image in messages: ``cannot embed <subject>: <reason>``.
    """
    try:
        return check_image(data)
    except ValueError as err:
        reason = str(err)
    if strict or warn is None or not data or image_kind(data) in ("cubin", "fatbin"):
        raise ValueError(f"cannot embed {subject}: {reason}") from None
    warn(f"{subject} is embedded as it is: {reason}; loading it will fail")
    return None
