"""Recognise CUDA code images (CUBIN, PTX, fatbin) and read which architectures they hold.

The same rules as ``include/tvm/ffi/extra/cuda/detail/cubin_image.h``; keep the two in step.
Facts the parsing relies on (checked against nvcc 13.0):

* CUBIN is ELF64 with ``e_machine`` 190 (EM_CUDA). With ELF ABI version 8 (CUDA 13) the SM
  number is in ``e_flags`` bits 8..15 (``0x06005a04`` is sm_90), "a" at bit 3; older cubins
  keep it in the low byte, "a" at bit 11. CUDA 13 does not set the "a" bit for sm_90a, so the
  ``-arch sm_90a`` that ptxas writes into ``.note.nv.tkinfo`` is preferred when present.
* A fatbin starts with magic ``0xBA55ED50``, a u16 header size at 6 and a u64 body size at 8.
  Each entry: u16 kind (1 PTX, 2 ELF) at 0, u32 header size at 4, u64 payload size at 8,
  u32 SM at 28, u64 flags at 40 (``0x100000`` "a", ``0x200000`` "f").
"""

from __future__ import annotations

import re
import struct

__all__ = ["check_image", "image_archs", "image_kind"]

_ELF_MAGIC = b"\x7fELF"
_EM_CUDA = 190
_FATBIN_MAGIC = 0xBA55ED50
_FATBIN_ARCH_SPECIFIC = 0x100000
_FATBIN_FAMILY = 0x200000
_PTX_START = re.compile(rb"\A\s*(//|/\*|\.version)")
_PTX_TARGET = re.compile(rb"\.target\s+sm_(\w+)")
_TKINFO_ARCH = re.compile(rb"-arch sm_(\d+)([a-z]?)")


def image_kind(data: bytes) -> str | None:
    """``"cubin"``, ``"ptx"`` or ``"fatbin"`` judged from the first bytes, else None."""
    data = bytes(data[:64])
    if data.startswith(_ELF_MAGIC):
        return "cubin"
    if len(data) >= 4 and struct.unpack_from("<I", data)[0] == _FATBIN_MAGIC:
        return "fatbin"
    if _PTX_START.match(data):
        return "ptx"
    return None


def check_image(data: bytes) -> str:
    """Return the image kind, or raise ValueError saying what is wrong (as the C++ loader does)."""
    kind = image_kind(data)
    if kind is None:
        if not data:
            raise ValueError("empty image (0 bytes)")
        first = " ".join(f"{b:02x}" for b in bytes(data[:4]))
        raise ValueError(f"not a CUBIN, PTX or fatbin image (first bytes: {first})")
    if kind == "cubin":
        _cubin_sections(bytes(data))
    elif kind == "fatbin":
        _fatbin_entries(bytes(data))
    return kind


def image_archs(data: bytes) -> list[str]:
    """Architectures in an image: ``["sm_90a"]`` for a cubin, ``["compute_90"]`` for PTX, one
    per entry for a fatbin (``["sm_80", "sm_90", "compute_90"]``). ValueError if unreadable."""
    data = bytes(data)
    kind = check_image(data)
    if kind == "cubin":
        return [_cubin_arch(data)]
    if kind == "fatbin":
        return [arch for _, arch in _fatbin_entries(data)]
    text = data.split(b"\0", 1)[0][:65536]
    m = _PTX_TARGET.search(text)
    return [f"compute_{m.group(1).decode()}"] if m else []


def _truncated(what: str, end: int, size: int) -> ValueError:
    return ValueError(
        f"truncated or corrupt CUBIN image: {what} ends at byte {end} but the image has "
        f"{size} bytes"
    )


def _cubin_sections(data: bytes) -> list[tuple[int, int, int, int]]:
    """(name offset, type, offset, size) of every section, after checking the ELF bounds."""
    n = len(data)
    if n < 64:
        raise ValueError(f"truncated CUBIN image: {n} bytes, smaller than an ELF header (64 bytes)")
    if data[4] != 2:
        raise ValueError("not a 64-bit ELF image (CUBINs are ELF64)")
    (machine,) = struct.unpack_from("<H", data, 18)
    if machine != _EM_CUDA:
        raise ValueError(
            f"ELF image is not a CUBIN (e_machine {machine}, expected 190 for NVIDIA CUDA)"
        )
    phoff, shoff = struct.unpack_from("<QQ", data, 32)
    phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", data, 54)
    if shnum and shentsize != 64:
        raise ValueError("corrupt CUBIN image: bad section entry size")
    if shoff + shnum * shentsize > n:
        raise _truncated("the section table", shoff + shnum * shentsize, n)
    if phoff + phnum * phentsize > n:
        raise _truncated("the program header table", phoff + phnum * phentsize, n)
    sections = []
    for i in range(shnum):
        name, sh_type, _, _, off, size = struct.unpack_from("<IIQQQQ", data, shoff + 64 * i)
        if sh_type not in (0, 8) and off + size > n:  # 8: SHT_NOBITS occupies no file bytes
            raise _truncated(f"section {i}", off + size, n)
        sections.append((name, sh_type, off, size))
    return sections


def _cubin_arch(data: bytes) -> str:
    sections = _cubin_sections(data)
    abi_version = data[8]
    (flags,) = struct.unpack_from("<I", data, 48)
    if abi_version >= 8:
        sm, accel = (flags >> 8) & 0xFF, bool(flags & 0x8)
    else:
        sm, accel = flags & 0xFF, bool(flags & 0x800)
    arch = f"sm_{sm}" + ("a" if accel else "")
    (shstrndx,) = struct.unpack_from("<H", data, 62)
    if shstrndx < len(sections):
        str_off = sections[shstrndx][2]
        for name, _, off, size in sections:
            if data[str_off + name : str_off + name + 16] == b".note.nv.tkinfo\0":
                m = _TKINFO_ARCH.search(data[off : off + size])
                if m and int(m.group(1)) == sm:  # trust the note only when it agrees
                    arch = f"sm_{sm}{m.group(2).decode()}"
                break
    return arch


def _fatbin_entries(data: bytes) -> list[tuple[str, str]]:
    """(kind, arch) of every code entry of one or more back-to-back fatbins."""
    entries = []
    pos = 0
    while len(data) - pos >= 16 and struct.unpack_from("<I", data, pos)[0] == _FATBIN_MAGIC:
        header, body = struct.unpack_from("<HQ", data, pos + 6)
        if header < 16 or pos + header + body > len(data):
            raise ValueError(
                f"truncated fatbin image: its header declares {header + body} bytes but the "
                f"image has {len(data) - pos} bytes"
            )
        at, end = pos + header, pos + header + body
        while end - at >= 16:
            kind, entry_header, payload = struct.unpack_from("<HxxIQ", data, at)
            if entry_header < 16 or at + entry_header + payload > end:
                raise ValueError(
                    f"corrupt fatbin image: the entry at byte {at} runs past the end of the fatbin"
                )
            if entry_header >= 48 and kind in (1, 2):
                (sm,) = struct.unpack_from("<I", data, at + 28)
                (flags,) = struct.unpack_from("<Q", data, at + 40)
                arch = ("compute_" if kind == 1 else "sm_") + str(sm)
                arch += "a" if flags & _FATBIN_ARCH_SPECIFIC else ""
                arch += "f" if flags & _FATBIN_FAMILY else ""
                entries.append(("ptx" if kind == 1 else "cubin", arch))
            at += entry_header + payload
        pos = end
    if pos == 0:
        raise ValueError(f"truncated fatbin image: {len(data)} bytes")
    return entries
