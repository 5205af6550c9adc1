"""``make_fatbin``: pack per-architecture CUBIN/PTX images into one fatbin with CUDA's
``fatbinary``, checking that each image is what its key says."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from ._image import check_image, image_archs
from ._sources import ImageSource, read_image, recognise

__all__ = ["make_fatbin"]

_ARCH_KEY = re.compile(r"(sm|compute)_(\d+)([af]?)\Z")
_ARCH_HELD = re.compile(r"(?:sm|compute)_(\d+[af]?)\Z")


def _fatbinary() -> str:
    try:
        from tvm_ffi.cpp._toolchain import find_cuda_tool
    except ImportError:
        find_cuda_tool = None
    if find_cuda_tool is not None:
        try:
            return str(find_cuda_tool("fatbinary"))
        except RuntimeError:
            pass
    for home in filter(None, [os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"]):
        tool = Path(home) / "bin" / "fatbinary"
        if tool.is_file():
            return str(tool)
    found = shutil.which("fatbinary")
    if found:
        return found
    raise RuntimeError("CUDA's 'fatbinary' tool was not found; set CUDA_HOME to the toolkit root")


def _check_arch(key: str, wanted: str, kind: str, data: bytes) -> None:
    """A cubin or PTX must be for exactly the architecture its key names (``sm_90`` is not
    ``sm_90a``): a relabelled image would be offered to devices it cannot run on."""
    archs = image_archs(data)
    held = _ARCH_HELD.match(archs[0]) if archs else None
    if held is None:
        raise ValueError(f"image {key!r}: PTX without a '.target sm_NN' directive")
    if held.group(1) != wanted:
        what = "a cubin" if kind == "cubin" else "PTX"
        raise ValueError(f"image {key!r} is {what} for {archs[0]}")


def make_fatbin(images: Mapping[str, ImageSource]) -> bytes:
    """Pack per-architecture images into one fatbin; the driver picks the one for the device.

    Keys name the architecture (``"sm_80"``, ``"sm_90a"``, ``"compute_90"``); whether a value
    is a cubin or PTX is read from its content, and it must be for the architecture its key
    names (number and ``a``/``f`` suffix).
    """
    if not isinstance(images, Mapping):
        raise TypeError(
            "make_fatbin takes a dict of architecture -> image, like {'sm_90': cubin} "
            f"(got {type(images).__name__})"
        )
    if not images:
        raise ValueError("make_fatbin needs at least one image")
    specs = []
    for key, source in images.items():
        m = _ARCH_KEY.match(key) if isinstance(key, str) else None
        if m is None:
            raise ValueError(
                f"fatbin image keys look like 'sm_90', 'sm_90a' or 'compute_90', got {key!r}"
            )
        data = read_image(source, f"image {key!r}")
        kind = recognise(data, f"image {key!r}", strict=True)
        try:
            check_image(data)
        except ValueError as err:
            raise ValueError(f"image {key!r}: {err}") from None
        if kind == "fatbin":
            raise ValueError(f"image {key!r} is already a fatbin; pass cubin or PTX images")
        _check_arch(key, m.group(2) + m.group(3), kind, data)
        specs.append(("elf" if kind == "cubin" else "ptx", m.group(2) + m.group(3), data))
    with tempfile.TemporaryDirectory(prefix="tvm_ffi_fatbin_") as tmp:
        cmd = [_fatbinary(), f"--create={tmp}/out.fatbin", "-64"]
        for i, (kind, sm, data) in enumerate(specs):
            path = Path(tmp) / f"image{i}.{'cubin' if kind == 'elf' else 'ptx'}"
            # fatbinary reads PTX up to its end; a trailing NUL would become part of the text.
            path.write_bytes(data.split(b"\0", 1)[0] if kind == "ptx" else data)
            cmd.append(f"--image3=kind={kind},sm={sm},file={path}")
        proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(
                f"command failed with exit code {proc.returncode}: {' '.join(cmd)}\n"
                f"{proc.stdout}{proc.stderr}"
            )
        return (Path(tmp) / "out.fatbin").read_bytes()
