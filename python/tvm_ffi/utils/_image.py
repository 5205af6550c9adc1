"""Recognise CUDA code images (CUBIN, PTX, fatbin) and read which architectures they hold.

``include/tvm/ffi/extra/cuda/detail/cubin_image.h`` applies the same rules, and the two must
give the same verdict on the same bytes: accepted or not, the same message, kind and
architectures (``tests/python/utils/test_image_parity.py`` checks it on a shared corpus and
by fuzzing). The rules, in the order they are applied:

* Kind, from the first bytes: ``\\x7fELF`` is a CUBIN; u32 ``0xBA55ED50`` is a fatbin; text
  that, after any ASCII whitespace (space, ``\\t \\n \\v \\f \\r``, no limit on how much),
  starts with a comment (``//``, ``/*``) or ``.version`` is PTX. PTX text ends at its first NUL.
* CUBIN: at least 64 bytes, ELF64, little-endian, ``e_machine`` 190 (EM_CUDA). Both header
  tables (when not empty) have the ELF64 entry sizes (64, 56) and lie in the image;
  ``e_shnum`` 0 needs ``e_shoff`` 0 (no extended numbering); ``e_shstrndx`` is 0 or names an
  SHT_STRTAB section. Every section other than SHT_NULL/SHT_NOBITS and every segment other
  than PT_NULL lies in the image. With ELF ABI version 8 (CUDA 13) the SM is in ``e_flags``
  bits 8..15 ("a" at bit 3), before that in the low byte ("a" at bit 11). CUDA 13 does not
  set the "a" bit for sm_90a, so the first ``-arch sm_<SM><suffix>`` that ptxas writes into
  the first SHT_NOTE section named ``.note.nv.tkinfo`` wins when it names the same SM and
  the suffix is empty, "a" or "f".
* Fatbin: one or more fatbins back to back (trailing bytes that start no fatbin are ignored).
  Each has a u16 header size (at least 16) at 6 and a u64 body size at 8, both inside the
  image; the body is entries of a u16 kind (1 PTX, 2 ELF) at 0, a u32 header size (at least
  16) at 4 and a u64 payload size at 8, fully inside the body (a tail under 16 bytes is
  padding). PTX and ELF entries need a 48-byte header: u32 SM at 28, u64 flags at 40
  (``0x100000`` "a", ``0x200000`` "f"); other kinds are skipped.
* PTX: only whitespace and comments (``//`` to the line end, ``/* ... */``) may precede
  ``.version <major>.<minor>``, which must be followed by ``.target`` and a comma-separated
  list naming an ``sm_<digits><lowercase letters>`` target; nothing past that list is read.
"""

from __future__ import annotations

import re
import struct

__all__ = ["check_image", "image_archs", "image_kind"]

_ELF_MAGIC = b"\x7fELF"
_FATBIN_MAGIC = struct.pack("<I", 0xBA55ED50)
_EM_CUDA = 190
_SHT_NULL, _SHT_STRTAB, _SHT_NOTE, _SHT_NOBITS = 0, 3, 7, 8
_FATBIN_ARCH_SPECIFIC = 0x100000
_FATBIN_FAMILY = 0x200000
_SPACE = b" \t\n\v\f\r"
_PTX_START = re.compile(rb"[ \t\n\v\f\r]*(?://|/\*|\.version)")
_IDENT = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$")
_DIGITS_LETTERS = re.compile(rb"([0-9]*)([a-z]*)")
_PTX_VERSION = re.compile(rb"[0-9]+\.[0-9]+")
_SM_TARGET = re.compile(rb"sm_([0-9]+[a-z]*)\Z")

Entries = list[tuple[str, str]]


def image_kind(data: bytes) -> str | None:
    """``"cubin"``, ``"ptx"`` or ``"fatbin"`` judged from the first bytes, else None."""
    data = bytes(data)
    if data.startswith(_ELF_MAGIC):
        return "cubin"
    if data.startswith(_FATBIN_MAGIC):
        return "fatbin"
    if _PTX_START.match(data):
        return "ptx"
    return None


def check_image(data: bytes) -> str:
    """Return the image kind, or raise ValueError saying what is wrong (as the C++ loader does)."""
    return _inspect(bytes(data))[0]


def image_archs(data: bytes) -> list[str]:
    """Architectures in an image: ``["sm_90a"]`` for a cubin, ``["compute_90"]`` for PTX, one
    per entry for a fatbin (``["sm_80", "sm_90", "compute_90"]``). ValueError if unreadable."""
    return [arch for _, arch in _inspect(bytes(data))[1]]


def _inspect(data: bytes) -> tuple[str, Entries]:
    """(kind, [(entry kind, arch), ...]) of an image, or ValueError: InspectImage in C++."""
    kind = image_kind(data)
    if kind == "cubin":
        return kind, _cubin_entries(data)
    if kind == "fatbin":
        return kind, _fatbin_entries(data)
    if kind == "ptx":
        return kind, _ptx_entries(data)
    if not data:
        raise ValueError("empty image (0 bytes)")
    first = " ".join(f"{b:02x}" for b in data[:4])
    raise ValueError(f"not a CUBIN, PTX or fatbin image (first bytes: {first})")


def _cubin_entries(d: bytes) -> Entries:
    n = len(d)
    if n < 64:
        raise ValueError(f"truncated CUBIN image: {n} bytes, smaller than an ELF header (64 bytes)")
    if d[4] != 2:
        raise ValueError("not a 64-bit ELF image (CUBINs are ELF64)")
    if d[5] != 1:
        raise ValueError("not a little-endian ELF image (CUBINs are little-endian)")
    (machine,) = struct.unpack_from("<H", d, 18)
    if machine != _EM_CUDA:
        raise ValueError(
            f"ELF image is not a CUBIN (e_machine {machine}, expected 190 for NVIDIA CUDA)"
        )
    phoff, shoff = struct.unpack_from("<QQ", d, 32)
    phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack_from("<HHHHH", d, 54)

    def truncated(what: str, end: int) -> ValueError:
        return ValueError(
            f"truncated or corrupt CUBIN image: {what} ends at byte {end} but the image has "
            f"{n} bytes"
        )

    if shnum == 0 and shoff != 0:
        raise ValueError(
            "corrupt CUBIN image: e_shnum is 0 but e_shoff is not "
            "(extended section numbering is not supported)"
        )
    if shnum and shentsize != 64:
        raise ValueError(f"corrupt CUBIN image: section header size {shentsize}, expected 64")
    if shnum and shoff + 64 * shnum > n:
        raise truncated("the section table", shoff + 64 * shnum)
    if phnum and phentsize != 56:
        raise ValueError(f"corrupt CUBIN image: program header size {phentsize}, expected 56")
    if phnum and phoff + 56 * phnum > n:
        raise truncated("the program header table", phoff + 56 * phnum)
    if shstrndx and shstrndx >= shnum:
        raise ValueError(
            f"corrupt CUBIN image: section name table index {shstrndx} is out of range "
            f"({shnum} sections)"
        )
    sections = [struct.unpack_from("<II16xQQ", d, shoff + 64 * i) for i in range(shnum)]
    for i, (_, sh_type, off, size) in enumerate(sections):
        # SHT_NULL and SHT_NOBITS occupy no bytes of the file: their offsets mean nothing here.
        if sh_type not in (_SHT_NULL, _SHT_NOBITS) and off + size > n:
            raise truncated(f"section {i}", off + size)
    for i in range(phnum):
        p_type, off = struct.unpack_from("<I4xQ", d, phoff + 56 * i)
        (size,) = struct.unpack_from("<Q", d, phoff + 56 * i + 32)
        if p_type != 0 and off + size > n:  # 0: PT_NULL
            raise truncated(f"segment {i}", off + size)
    if shstrndx and sections[shstrndx][1] != _SHT_STRTAB:
        raise ValueError(
            f"corrupt CUBIN image: the section name table (section {shstrndx}) is not a "
            f"string table (type {sections[shstrndx][1]})"
        )
    return [("cubin", _cubin_arch(d, sections, shstrndx))]


def _cubin_arch(d: bytes, sections: list[tuple[int, int, int, int]], shstrndx: int) -> str:
    """The SM from e_flags, refined by the tkinfo note (CubinArch in C++); the bounds that
    matter were checked by _cubin_entries."""
    abi_version = d[8]
    (flags,) = struct.unpack_from("<I", d, 48)
    if abi_version >= 8:
        sm, accel = (flags >> 8) & 0xFF, bool(flags & 0x8)
    else:
        sm, accel = flags & 0xFF, bool(flags & 0x800)
    arch = f"sm_{sm}" + ("a" if accel else "")
    if not shstrndx:
        return arch
    _, _, str_off, str_size = sections[shstrndx]
    for name, sh_type, off, size in sections:
        name_bytes = d[str_off + name : str_off + name + 16]
        if name + 16 > str_size or name_bytes != b".note.nv.tkinfo\0" or sh_type != _SHT_NOTE:
            continue
        note = d[off : off + size]
        at = note.find(b"-arch sm_")
        if at >= 0:
            digits, letters = _DIGITS_LETTERS.match(note, at + 9).groups()
            if digits == str(sm).encode() and letters in (b"", b"a", b"f"):
                arch = f"sm_{sm}{letters.decode()}"
        break
    return arch


def _fatbin_entries(d: bytes) -> Entries:
    n = len(d)
    if n < 16:
        raise ValueError(
            f"truncated fatbin image: {n} bytes, smaller than a fatbin header (16 bytes)"
        )
    entries = []
    pos = 0
    # A fatbin file may hold several fatbins back to back (one per translation unit).
    while n - pos >= 16 and d.startswith(_FATBIN_MAGIC, pos):
        header, body = struct.unpack_from("<HQ", d, pos + 6)
        if header < 16:
            raise ValueError(
                f"corrupt fatbin image: the fatbin at byte {pos} declares a {header}-byte "
                "header (at least 16)"
            )
        if header + body > n - pos:
            raise ValueError(
                f"truncated fatbin image: its header declares {header + body} bytes but the "
                f"image has {n - pos} bytes"
            )
        at, end = pos + header, pos + header + body
        while end - at >= 16:  # a shorter tail is padding
            kind, entry_header, payload = struct.unpack_from("<HxxIQ", d, at)
            if entry_header < 16:
                raise ValueError(
                    f"corrupt fatbin image: the entry at byte {at} declares a "
                    f"{entry_header}-byte header (at least 16)"
                )
            if entry_header + payload > end - at:
                raise ValueError(
                    f"corrupt fatbin image: the entry at byte {at} runs past the end of the fatbin"
                )
            if kind in (1, 2):
                if entry_header < 48:
                    raise ValueError(
                        f"corrupt fatbin image: the code entry at byte {at} has a "
                        f"{entry_header}-byte header, too short to name its architecture (48)"
                    )
                (sm,) = struct.unpack_from("<I", d, at + 28)
                (flags,) = struct.unpack_from("<Q", d, at + 40)
                arch = ("compute_" if kind == 1 else "sm_") + str(sm)
                arch += "a" if flags & _FATBIN_ARCH_SPECIFIC else ""
                arch += "f" if flags & _FATBIN_FAMILY else ""
                entries.append(("ptx" if kind == 1 else "cubin", arch))
            at += entry_header + payload
        pos = end
    return entries


def _skip_ptx_space(t: bytes, i: int) -> int:
    """Skip whitespace, ``//`` line comments and ``/* */`` block comments from t[i]."""
    n = len(t)
    while i < n:
        if t[i] in _SPACE:
            i += 1
        elif t.startswith(b"//", i):
            eol = t.find(b"\n", i + 2)
            i = n if eol < 0 else eol + 1
        elif t.startswith(b"/*", i):
            close = t.find(b"*/", i + 2)
            i = n if close < 0 else close + 2
        else:
            break
    return i


def _ptx_directive_at(t: bytes, i: int, word: bytes) -> bool:
    end = i + len(word)
    return t.startswith(word, i) and (end == len(t) or t[end] not in _IDENT)


def _ptx_entries(data: bytes) -> Entries:
    nul = data.find(b"\0")
    t = data if nul < 0 else data[:nul]
    i = _skip_ptx_space(t, 0)
    if not _ptx_directive_at(t, i, b".version"):
        raise ValueError(
            "not a PTX image: no .version directive at its start (only whitespace and "
            "comments may precede it)"
        )
    m = _PTX_VERSION.match(t, _skip_ptx_space(t, i + 8))
    if m is None or (m.end() < len(t) and (t[m.end()] in _IDENT or t[m.end()] == ord("."))):
        raise ValueError(
            "not a PTX image: malformed .version directive (expected e.g. .version 8.5)"
        )
    i = _skip_ptx_space(t, m.end())
    if not _ptx_directive_at(t, i, b".target"):
        raise ValueError("not a PTX image: .version is not followed by a .target directive")
    i = _skip_ptx_space(t, i + 7)
    arch = None
    while True:  # the target list: identifiers separated by commas
        start = i
        while i < len(t) and t[i] in _IDENT:
            i += 1
        if i == start:
            break
        # The architecture is the first item of the form sm_<digits><lowercase letters>.
        sm = _SM_TARGET.match(t, start, i)
        if arch is None and sm:
            arch = "compute_" + sm.group(1).decode()
        i = _skip_ptx_space(t, i)
        if i >= len(t) or t[i] != ord(","):
            break
        i = _skip_ptx_space(t, i + 1)
    if arch is None:
        raise ValueError("not a PTX image: its .target directive names no sm_ architecture")
    return [("ptx", arch)]
