"""Embedded images linked straight into a JIT library, without the embed tool.

``python -m tvm_ffi.utils.embed_cubin`` (a Python start, then the assembler, ``ld`` and
``objcopy``) is most of the time of a relink. For a shared library the same layout comes
from one assembler file that the link step assembles itself: the layout template filled
for each image (see ``tvm_ffi.utils._embed_layout``), whose symbols are hidden, so no
other library sees them, as the embed tool's local symbols. A relocatable
``output="x.o"`` still goes through the embed tool, whose symbols are local.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..utils._sources import recognise
from ._build import BuildError

__all__ = ["ASM_FILE", "check_images"]

#: The assembler file of a build's images, relative to its build directory.
ASM_FILE = "embed/images.s"


def check_images(embeds: Mapping[str, bytes], build_dir: Path) -> None:
    """Refuse bytes that are no CUBIN, PTX or fatbin, as the embed tool's ``--strict``
    does: a :class:`BuildError` naming the image."""
    for name in sorted(embeds):
        try:
            recognise(embeds[name], repr(name), strict=True)
        except ValueError as err:
            raise BuildError(
                f"{err}\nchecking the images of this build in {build_dir} failed",
                command=f"check embed_cubin[{name!r}]",
                log=str(err),
                build_dir=build_dir,
            ) from None
