"""Embedded images linked straight into a JIT library, without the embed tool.

``python -m tvm_ffi.utils.embed_cubin`` (a Python start, then ``ld`` and ``objcopy`` five
times) is most of the time of a relink. For a shared library the same layout comes from
one assembler file that the link step assembles itself: each image in the read-only,
64-byte aligned section ``.rodata.tvm_ffi_cubin`` between ``__tvm_ffi__cubin_<name>`` and
``__tvm_ffi__cubin_<name>_end``, then a NUL byte (PTX is a C string in place). The symbols
are hidden, so no other library sees them, as the embed tool's local symbols. A
relocatable ``output="x.o"`` still goes through the embed tool, whose symbols are local.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from ..utils._sources import recognise
from ._build import BuildError

__all__ = ["ASM_FILE", "asm_source", "check_images"]

#: The assembler file of a build's images, relative to its build directory.
ASM_FILE = "embed/images.s"


def asm_source(images: Iterable[tuple[str, str]]) -> str:
    """The assembler text for ``(embed name, image file)`` pairs (paths relative to the
    build directory, where the link runs)."""
    lines = ["# Written by tvm_ffi.cpp: the embedded images (see TVM_FFI_EMBED_CUBIN)."]
    for name, image_file in images:
        symbol = f"__tvm_ffi__cubin_{name}"
        lines += [
            '  .section .rodata.tvm_ffi_cubin,"a",@progbits',
            "  .balign 64",
            *(
                f"  .globl {s}\n  .hidden {s}\n  .type {s},@object"
                for s in (symbol, f"{symbol}_end")
            ),
            f"{symbol}:",
            f'  .incbin "{image_file}"',
            f"{symbol}_end:",
            "  .byte 0",
        ]
    lines.append('  .section .note.GNU-stack,"",@progbits')  # no executable stack
    return "\n".join(lines) + "\n"


def check_images(embeds: Mapping[str, bytes], build_dir: Path) -> None:
    """Refuse bytes that are no CUBIN, PTX or fatbin, as the embed tool's ``--strict``
    does: a :class:`BuildError` naming the image."""
    for name in sorted(embeds):
        try:
            recognise(embeds[name], f"cannot embed {name!r}", strict=True)
        except ValueError as err:
            raise BuildError(
                f"{err}\nchecking the images of this build in {build_dir} failed",
                command=f"check embed_cubin[{name!r}]",
                log=str(err),
                build_dir=build_dir,
            ) from None
