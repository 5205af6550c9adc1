"""The layout of an embedded image, from the one file that states it.

``tvm_ffi_embed_image.s.in`` in the CMake package folder (``cmake/`` in the repository) is
assembler text for one image: its read-only section, alignment, the symbols
``__tvm_ffi__cubin_<name>`` and ``__tvm_ffi__cubin_<name>_end`` (hidden), the NUL after
the image and the non-executable-stack note. The embed tool and ``load_inline`` fill it
here; CMake fills the same file with ``file(CONFIGURE)``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable

from .. import config

__all__ = ["TEMPLATE", "assembler_source", "template"]

#: The template's file name, in the CMake package folder.
TEMPLATE = "tvm_ffi_embed_image.s.in"
_NAME, _IMAGE = "@TVM_FFI_EMBED_NAME@", "@TVM_FFI_EMBED_IMAGE@"


@functools.cache
def template() -> str:
    """The template's text (read once per process)."""
    path = os.path.join(config.get_cmake_dir(), TEMPLATE)
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as err:
        raise RuntimeError(
            f"the embedded-image layout {path} cannot be read ({err.strerror}); "
            "reinstall tvm-ffi-cubin"
        ) from None


def _asm_string(path: str) -> str:
    """``path`` inside an assembler string: printable ASCII as it is, everything else (and
    the quote and backslash) as octal escapes, so any file name survives."""
    out = []
    for byte in os.fsencode(path):
        char = chr(byte)
        out.append(char if 32 <= byte < 127 and char not in '"\\' else f"\\{byte:03o}")
    return "".join(out)


def assembler_source(images: Iterable[tuple[str, str]]) -> str:
    """The template filled for each ``(embed name, image file)`` pair, one after another (a
    relative image file is found from where the assembler runs)."""
    text = template()
    return "".join(
        text.replace(_NAME, name).replace(_IMAGE, _asm_string(os.fspath(image)))
        for name, image in images
    )
