"""Just enough ELF reading to look at a library or an object before a tool gets it: its
symbols (defined or not) and the libraries it needs.

Everything goes through the section table with bounds checks. A file that is not a
64-bit little-endian ELF file, or whose tables do not fit in it, yields None, and the
caller lets the real tool (dlopen, ld) say what is wrong with it.
"""

from __future__ import annotations

import os
import stat
import struct
from collections.abc import Iterator
from typing import Callable, TypeVar

__all__ = ["imported_symbols", "needed_libraries", "symbols"]

_SHT_SYMTAB = 2
_SHT_DYNAMIC = 6
_SHT_DYNSYM = 11
_DT_NEEDED = 1
T = TypeVar("T")
_MAX_TABLE = 1 << 28  # 256 MiB: larger is no symbol table worth reading here


class _Reader:
    """A regular file's sections: (type, offset, size, link) each."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.size = os.fstat(fd).st_size
        self.sections: list[tuple[int, int, int, int]] = []

    def read(self, offset: int, length: int) -> bytes | None:
        if offset < 0 or length < 0 or length > _MAX_TABLE or offset + length > self.size:
            return None
        data = os.pread(self.fd, length, offset)
        return data if len(data) == length else None

    def load(self) -> bool:
        header = self.read(0, 64)
        if header is None or header[:4] != b"\x7fELF" or header[4] != 2 or header[5] != 1:
            return False
        (shoff,) = struct.unpack_from("<Q", header, 40)
        shentsize, shnum = struct.unpack_from("<HH", header, 58)
        table = self.read(shoff, shnum * 64) if shentsize == 64 else None
        if not table:
            return False
        for i in range(shnum):
            # Elf64_Shdr: name u32, type u32, flags u64, addr u64, offset u64, size u64, link u32.
            _, sh_type, _, _, offset, size, link = struct.unpack_from("<IIQQQQI", table, 64 * i)
            self.sections.append((sh_type, offset, size, link))
        return True

    def tables(self, wanted: int) -> Iterator[tuple[bytes, bytes] | None]:
        """(table, its string table) for each section of type ``wanted``; None if one
        does not fit in the file."""
        for sh_type, offset, size, link in self.sections:
            if sh_type != wanted:
                continue
            if link >= len(self.sections):
                yield None
                continue
            _, str_offset, str_size, _ = self.sections[link]
            table, strtab = self.read(offset, size), self.read(str_offset, str_size)
            yield None if table is None or strtab is None else (table, strtab)


def _string(strtab: bytes, offset: int) -> str:
    end = strtab.find(b"\0", offset)
    return strtab[offset : end if end >= 0 else len(strtab)].decode("utf-8", "replace")


def _with_reader(path: str | os.PathLike[str], visit: Callable[[_Reader], T]) -> T | None:
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused just below.
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        reader = _Reader(fd)
        return visit(reader) if reader.load() else None
    except OSError:
        return None
    finally:
        os.close(fd)


def symbols(path: str | os.PathLike[str], *, dynamic: bool) -> list[tuple[str, bool]] | None:
    """``(name, defined)`` for every named symbol of ``.dynsym`` (``dynamic``) or ``.symtab``."""

    def visit(reader: _Reader) -> list[tuple[str, bool]] | None:
        result = []
        for pair in reader.tables(_SHT_DYNSYM if dynamic else _SHT_SYMTAB):
            if pair is None:
                return None
            table, strtab = pair
            for at in range(0, len(table) - 23, 24):
                # Elf64_Sym: name u32, info u8, other u8, shndx u16, value u64, size u64.
                name, _, _, shndx = struct.unpack_from("<IBBH", table, at)
                if name:
                    result.append((_string(strtab, name), shndx != 0))
        return result

    return _with_reader(path, visit)


def imported_symbols(path: str | os.PathLike[str], prefix: bytes = b"") -> list[str] | None:
    """Names of the undefined ``.dynsym`` symbols starting with ``prefix``: what the library
    expects another to provide. Cheaper than :func:`symbols` (a load checks every library
    it opens): only the names that match are decoded."""

    def visit(reader: _Reader) -> list[str] | None:
        result = []
        for pair in reader.tables(_SHT_DYNSYM):
            if pair is None:
                return None
            table, strtab = pair
            whole = len(table) - len(table) % 24
            # Elf64_Sym: name u32, info u8, other u8, shndx u16, value u64, size u64.
            for name, _, _, shndx, _, _ in struct.iter_unpack("<IBBHQQ", table[:whole]):
                if name and shndx == 0 and strtab.startswith(prefix, name):
                    result.append(_string(strtab, name))
        return result

    return _with_reader(path, visit)


def needed_libraries(path: str | os.PathLike[str]) -> list[str] | None:
    """The ``DT_NEEDED`` entries of a shared library (``["libc.so.6", ...]``)."""

    def visit(reader: _Reader) -> list[str] | None:
        result = []
        for pair in reader.tables(_SHT_DYNAMIC):
            if pair is None:
                return None
            table, strtab = pair
            for at in range(0, len(table) - 15, 16):
                tag, value = struct.unpack_from("<qQ", table, at)
                if tag == 0:  # DT_NULL ends the array
                    break
                if tag == _DT_NEEDED and value < len(strtab):
                    result.append(_string(strtab, value))
        return result

    return _with_reader(path, visit)
