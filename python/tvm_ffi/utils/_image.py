"""Recognise CUDA code images (CUBIN, PTX, fatbin) and read which architectures they hold.

The reader is the C++ one that ``CubinModule`` runs when it loads an image
(``include/tvm/ffi/extra/cuda/detail/cubin_image.h``, which states the rules), reached
through the compiled core: an image these functions accept is one the loader accepts, with
the same message when it is not (what an embedder does with the rest:
``_sources.recognise``). ``_core`` is imported on first call, not with this module.
"""

from __future__ import annotations

__all__ = ["check_image", "image_archs", "image_kind"]


def image_kind(data: bytes) -> str | None:
    """``"cubin"``, ``"ptx"`` or ``"fatbin"`` judged from the first bytes, else None."""
    from .. import _core

    return _core.image_kind(data)


def check_image(data: bytes) -> str:
    """Return the image kind, or raise ValueError saying what is wrong (as the C++ loader does)."""
    from .. import _core

    return _core.inspect_image(data)[0]


def image_archs(data: bytes) -> list[str]:
    """Architectures in an image: ``["sm_90a"]`` for a cubin, ``["compute_90"]`` for PTX, one
    per entry for a fatbin (``["sm_80", "sm_90", "compute_90"]``). ValueError if unreadable."""
    from .. import _core

    return [arch for _, arch in _core.inspect_image(data)[1]]
