"""``make_fatbin``: pack per-architecture CUBIN/PTX images into one fatbin, checking that
each image is what its key says. The packing is done by NVIDIA's nvFatbin library
(``cuda.bindings.nvfatbin``, ``pip install nvidia-nvfatbin``) when it loads, else by the
CUDA toolkit's ``fatbinary`` program."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._arch_grammar import GRAMMAR, Arch, ArchSpellingError, parse_arch
from ._image import image_archs
from ._sources import ImageSource, read_image, recognise

__all__ = ["make_fatbin"]


def _fatbinary() -> str:
    tried = []
    try:
        from tvm_ffi._cuda_toolkit import find_cuda_binary as find_cuda_tool
    except ImportError:
        find_cuda_tool = None
    if find_cuda_tool is not None:
        try:
            return str(find_cuda_tool("fatbinary"))
        except RuntimeError as err:
            tried.append(str(err))
    found = shutil.which("fatbinary")
    if found:
        return found
    tried.append("'fatbinary' on PATH")
    raise RuntimeError(
        "making a fatbin needs NVIDIA's nvFatbin library (pip install cuda-bindings "
        "nvidia-nvfatbin) or CUDA's 'fatbinary' program; found neither. Tried: " + "; ".join(tried)
    )


def _nvfatbin() -> Any:
    """``cuda.bindings.nvfatbin`` when it and its library load, else None."""
    try:
        from cuda.bindings import nvfatbin
    except ImportError:
        return None
    try:
        nvfatbin.version()  # the bindings load libnvfatbin lazily: do it now
    except Exception:  # the library is not installed: use the fatbinary program
        return None
    return nvfatbin


def _pack_nvfatbin(nvfatbin: Any, specs: list[tuple[str, str, bytes]]) -> bytes:
    handle = nvfatbin.create([], 0)
    try:
        for i, (kind, sm, data) in enumerate(specs):
            if kind == "elf":
                nvfatbin.add_cubin(handle, data, len(data), sm, f"image{i}")
            else:  # nvFatbin reads PTX as a C string: exactly one terminating NUL
                text = data.split(b"\0", 1)[0] + b"\0"
                nvfatbin.add_ptx(handle, text, len(text), sm, f"image{i}", "")
        buffer = bytearray(nvfatbin.size(handle))
        nvfatbin.get(handle, buffer)
    except Exception as err:
        raise RuntimeError(f"nvFatbin could not make the fatbin: {err}") from err
    finally:
        nvfatbin.destroy(handle)
    return bytes(buffer)


def _check_arch(key: Any, wanted: Arch, kind: str, data: bytes) -> None:
    """A cubin or PTX must be for exactly the architecture its key names (``sm_90`` is not
    ``sm_90a``): a relabelled image would be offered to devices it cannot run on."""
    archs = image_archs(data)
    try:
        held = parse_arch(archs[0], source="image") if archs else None
    except ArchSpellingError:
        held = None
    if held is None:
        raise ValueError(f"image {key!r}: PTX without a '.target sm_NN' directive")
    if held.number != wanted.number:
        what = "a cubin" if kind == "cubin" else "PTX"
        raise ValueError(f"image {key!r} is {what} for {archs[0]}")


def make_fatbin(images: Mapping[str, ImageSource]) -> bytes:
    """Pack per-architecture images into one fatbin; the driver picks the one for the device.

    Keys name the architecture in the package's grammar (``"sm_80"``, ``"9.0a"``,
    ``"compute_90"``, ``"90"``, ``"native"`` for the one visible GPU); whether a value is a
    cubin or PTX is read from its content, and it must be for the architecture its key
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
        try:
            arch = parse_arch(key, source="make_fatbin")
        except ArchSpellingError:
            raise ValueError(f"fatbin image keys look like {GRAMMAR} (got {key!r})") from None
        data = read_image(source, f"image {key!r}")
        kind = recognise(data, f"image {key!r} into a fatbin", strict=True)
        if kind == "fatbin":
            raise ValueError(f"image {key!r} is already a fatbin; pass cubin or PTX images")
        _check_arch(key, arch, kind, data)
        specs.append(("elf" if kind == "cubin" else "ptx", arch.number, data))
    nvfatbin = _nvfatbin()
    if nvfatbin is not None:
        return _pack_nvfatbin(nvfatbin, specs)
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
