"""The package's ELF reader: one header parse and one bounds-checked read for every
question asked of a library or object file before a tool gets it.

- :func:`library_problem`: can this process load the file? ``dlopen`` maps a library's
  segments straight from the file: a file cut short maps pages past its end, and the
  first touch of one kills the process with SIGBUS; a library for another CPU is
  reported by glibc as "No such file or directory". The ELF header and the program
  headers (a few hundred bytes) answer both, with a reason.
- :func:`object_problem`: the same question for a relocatable object a link will read:
  one cut short fails every link with a message that names neither the file nor a fix
  (gold: "internal error in find_view"). Its header and section table answer it.
- :func:`symbols`, :func:`imported_symbols`, :func:`needed_libraries`: the symbol tables
  and ``DT_NEEDED`` entries. A file that is no ELF file, or whose tables do not fit in
  it, yields None, and the caller lets the real tool (dlopen, ld) say what is wrong.

Both classes (32- and 64-bit) and both byte orders are read. A warm JIT cache hit
imports this module (for :func:`library_problem`): no ``typing`` here.
"""

from __future__ import annotations

import functools
import os
import stat
import struct
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = [
    "EM_CUDA",
    "Section",
    "Symbol",
    "elf_machine",
    "file_kind",
    "imported_symbols",
    "library_problem",
    "needed_libraries",
    "object_problem",
    "symbols",
]

_ELF_MAGIC = b"\x7fELF"
_ET_REL, _ET_DYN = 1, 3
_PT_LOAD = 1
_SHT_SYMTAB, _SHT_DYNAMIC, _SHT_NOBITS, _SHT_DYNSYM = 2, 6, 8, 11
_DT_NEEDED = 1
_MAX_TABLE = 1 << 28  # 256 MiB: larger is no table worth reading here
EM_CUDA = 190  # the e_machine of a CUBIN
_ET_NAMES = {1: "an object file (.o)", 2: "an executable", 3: "a shared library", 4: "a core dump"}
_MACHINES = {
    2: "SPARC",
    3: "x86",
    8: "MIPS",
    20: "PowerPC",
    21: "PowerPC64",
    22: "S/390",
    40: "ARM",
    43: "SPARC64",
    62: "x86-64",
    183: "AArch64",
    EM_CUDA: "CUDA",
    243: "RISC-V",
    258: "LoongArch",
}
# Per class (1: 32-bit, 2: 64-bit): the header after e_ident (e_type, e_machine, e_version,
# e_entry, e_phoff, e_shoff, e_flags, e_ehsize, e_phentsize, e_phnum, e_shentsize, e_shnum,
# e_shstrndx); a section header (name, type, flags, addr, offset, size, link, info,
# addralign, entsize); a program header's p_type and where p_offset and p_filesz sit; a
# symbol; a dynamic entry.
_HEADER = {1: "HHIIIIIHHHHHH", 2: "HHIQQQIHHHHHH"}
_SECTION = {1: "IIIIIIIIII", 2: "IIQQQQIIQQ"}
_SEGMENT = {1: ("IIIII", 1, 4), 2: ("IIQQQQ", 2, 5)}
_DYNAMIC = {1: "iI", 2: "qQ"}


class Section:
    """One section header, named: ``name``, ``type``, ``flags``, ``addr`` (0 in an object
    file), ``offset``, ``size``, ``link``, ``align``."""

    __slots__ = ("addr", "align", "flags", "link", "name", "offset", "size", "type")

    def __init__(self, fields: tuple[int, ...], name: str) -> None:
        self.name = name
        self.type, self.flags, self.addr, self.offset, self.size = fields[1:6]
        self.link, self.align = fields[6], fields[8]


class Symbol:
    """One symbol: ``name``, ``value``, ``size``, ``bind`` (0 local, 1 global, 2 weak),
    ``type`` (1 object, 2 function, ...), ``visibility`` (0 default, 2 hidden), ``shndx`` and
    ``section`` (its :class:`Section`, None when undefined or special); ``defined`` is
    ``shndx != 0``."""

    __slots__ = ("bind", "name", "section", "shndx", "size", "type", "value", "visibility")

    def __init__(
        self, name: str, fields: tuple[int, int, int, int, int], section: Section | None
    ) -> None:
        self.name = name
        self.value, self.size, info, other, self.shndx = fields
        self.bind, self.type, self.visibility = info >> 4, info & 0xF, other & 3
        self.section = section

    @property
    def defined(self) -> bool:
        return self.shndx != 0


def file_kind(mode: int) -> str:
    """``"a FIFO"``, ``"a directory"``, ...: what a file is, for messages."""
    for test, name in (
        (stat.S_ISREG, "a regular file"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return name
    return f"file type {stat.S_IFMT(mode):o}"


class _Elf:
    """A regular file open as ``fd``, its header parsed once: ``problem`` says why it is no
    readable ELF file (None when it is one), the other fields are the header's."""

    def __init__(self, fd: int, size: int) -> None:
        self.fd, self.size = fd, size
        self.problem: str | None = None
        self._sections: list[Section] | None = None
        head = os.pread(fd, 64, 0)
        if size == 0:
            self.problem = "the file is empty"
        elif head[:4] != _ELF_MAGIC:
            self.problem = f"not an ELF file (it starts with {head[:8]!r})"
        elif len(head) < 6 or head[4] not in (1, 2) or head[5] not in (1, 2):
            self.problem = f"truncated or malformed ELF header ({size} bytes)"
        elif len(head) < (64 if head[4] == 2 else 52):
            self.problem = f"truncated: the file has {size} bytes, less than an ELF header"
        else:
            self.elf_class, self.data_order = head[4], head[5]
            self.order = "<" if head[5] == 1 else ">"
            fields = struct.unpack_from(self.order + _HEADER[self.elf_class], head, 16)
            self.type, self.machine, _, _, self.phoff, self.shoff = fields[:6]
            self.phentsize, self.phnum, self.shentsize, self.shnum, self.shstrndx = fields[8:]

    def read(self, offset: int, length: int) -> bytes | None:
        """``length`` bytes at ``offset``, or None when they are not all in the file."""
        if offset < 0 or length < 0 or length > _MAX_TABLE or offset + length > self.size:
            return None
        data = os.pread(self.fd, length, offset)
        return data if len(data) == length else None

    def sections(self) -> list[Section] | None:
        """The section table, named; None when it does not fit in the file."""
        if self._sections is None:
            entry = _SECTION[self.elf_class]
            if self.shentsize != struct.calcsize(entry):
                return None
            table = self.read(self.shoff, self.shnum * self.shentsize)
            if not table:
                return None
            raw = [struct.unpack_from(self.order + entry, table, i * self.shentsize)
                   for i in range(self.shnum)]  # fmt: skip
            names = b""
            if self.shstrndx < len(raw):
                names = self.read(raw[self.shstrndx][4], raw[self.shstrndx][5]) or b""
            self._sections = [Section(fields, _string(names, fields[0])) for fields in raw]
        return self._sections

    def tables(self, wanted: int) -> Iterator[tuple[bytes, bytes] | None]:
        """(table, its string table) for each section of type ``wanted``; None for one
        that does not fit in the file."""
        sections = self.sections() or []
        for section in sections:
            if section.type != wanted:
                continue
            if section.link >= len(sections):
                yield None
                continue
            strings = sections[section.link]
            table, strtab = (
                self.read(section.offset, section.size),
                self.read(strings.offset, strings.size),
            )
            yield None if table is None or strtab is None else (table, strtab)

    def symbol_fields(self, table: bytes) -> Iterator[tuple[int, tuple[int, int, int, int, int]]]:
        """(name offset, (value, size, info, other, shndx)) for each entry of a symbol table."""
        if self.elf_class == 2:  # Elf64_Sym: name, info, other, shndx, value, size
            whole = len(table) - len(table) % 24
            for name, info, other, shndx, value, size in struct.iter_unpack(
                self.order + "IBBHQQ", table[:whole]
            ):
                yield name, (value, size, info, other, shndx)
        else:  # Elf32_Sym: name, value, size, info, other, shndx
            whole = len(table) - len(table) % 16
            for name, value, size, info, other, shndx in struct.iter_unpack(
                self.order + "IIIBBH", table[:whole]
            ):
                yield name, (value, size, info, other, shndx)

    def load_problem(self) -> str | None:
        """Why this process cannot load the file as a shared library, or None."""
        problem = self._kind_problem(_ET_DYN, "a shared library")
        if problem is not None:
            return problem
        need = self.phoff + self.phnum * self.phentsize
        if self.shoff:
            need = max(need, self.shoff + self.shnum * self.shentsize)
        entry, offset_at, filesz_at = _SEGMENT[self.elf_class]
        if need <= self.size and self.phnum:
            if self.phentsize < struct.calcsize(entry):
                return f"malformed ELF program headers (entry size {self.phentsize})"
            table = self.read(self.phoff, self.phnum * self.phentsize)
            if table is None:
                return f"malformed ELF program headers ({self.phnum} of {self.phentsize} bytes)"
            for index in range(self.phnum):
                fields = struct.unpack_from(self.order + entry, table, index * self.phentsize)
                if fields[0] == _PT_LOAD:
                    need = max(need, fields[offset_at] + fields[filesz_at])
        return self._truncated(need, "segments")

    def link_problem(self) -> str | None:
        """Why a link cannot read the file as a relocatable object for this CPU, or None:
        its section table and every section with data in the file must fit in it (an
        assembler writes the table last, so any cut shows)."""
        problem = self._kind_problem(_ET_REL, "a relocatable object")
        if problem is not None:
            return problem
        entry = _SECTION[self.elf_class]
        count = self.shnum
        if count == 0 and self.shoff:  # more than 0xff00 sections: section 0 holds the count
            first = self.read(self.shoff, struct.calcsize(entry))
            count = struct.unpack_from(self.order + entry, first)[5] if first else 1
        need = self.shoff + count * self.shentsize
        if not self.shoff or self.shentsize != struct.calcsize(entry):
            return f"malformed ELF section headers ({count} of {self.shentsize} bytes)"
        if need <= self.size:
            table = self.read(self.shoff, count * self.shentsize)
            if table is None:
                return f"malformed ELF section headers ({count} of {self.shentsize} bytes)"
            # (name, type, flags, addr, offset, size, ...): NOBITS (.bss) has no bytes here.
            for fields in struct.iter_unpack(self.order + entry, table):
                if fields[1] != _SHT_NOBITS:
                    need = max(need, fields[4] + fields[5])
        return self._truncated(need, "sections")

    def _kind_problem(self, wanted: int, kind: str) -> str | None:
        """Why the file is no ``kind`` (ELF type ``wanted``) for this CPU, or None."""
        if self.problem is not None:
            return self.problem
        host, this = _host(), (self.machine, self.elf_class, self.data_order)
        if host is not None and this != host:
            return (
                f"built for another CPU: {_describe(*this)}; this process runs on "
                f"{_describe(*host)}"
            )
        if self.type != wanted:
            return f"not {kind}: {_ET_NAMES.get(self.type, f'ELF type {self.type}')}"
        return None

    def _truncated(self, need: int, parts: str) -> str | None:
        if need > self.size:
            return (
                f"truncated: the file has {self.size} bytes but its headers and {parts} need "
                f"{need} (a write or copy was cut short)"
            )
        return None


def _string(strtab: bytes, offset: int) -> str:
    end = strtab.find(b"\0", offset)
    return strtab[offset : end if end >= 0 else len(strtab)].decode("utf-8", "replace")


def _describe(machine: int, elf_class: int, data_order: int) -> str:
    bits = "64-bit" if elf_class == 2 else "32-bit"
    ends = "little-endian" if data_order == 1 else "big-endian"
    return f"{_MACHINES.get(machine, 'machine')} (ELF machine {machine}), {bits} {ends}"


@functools.cache
def _host() -> tuple[int, int, int] | None:
    """(machine, class, byte order) of the running interpreter, from its own ELF header."""
    for exe in ("/proc/self/exe", os.path.realpath(sys.executable)):
        try:
            with open(exe, "rb") as f:
                head = f.read(20)
        except OSError:
            continue
        if head[:4] == _ELF_MAGIC and head[5] in (1, 2):
            (machine,) = struct.unpack_from("<H" if head[5] == 1 else ">H", head, 18)
            return machine, head[4], head[5]
    return None


# Files found sound, by (device, inode, size, mtime, ctime, kind): any write changes mtime
# or ctime, so a hit means the same bytes. Keeps a warm JIT load to one fstat for this check.
_sound: dict[tuple[int, int, int, int, int, bool], None] = {}
_SOUND_MAX = 1024


def elf_machine(fd: int, size: int) -> int | None:
    """The e_machine of the ELF file open as ``fd`` (``size`` bytes), None for no ELF file."""
    elf = _Elf(fd, size)
    return elf.machine if elf.problem is None else None


def library_problem(fd: int, st: os.stat_result) -> str | None:
    """Why the regular file open as ``fd`` (``st`` its fstat) cannot be loaded, or None."""
    return _checked(fd, st, relocatable=False)


def object_problem(fd: int, st: os.stat_result) -> str | None:
    """Why the regular file open as ``fd`` (``st`` its fstat) is no whole relocatable
    object for this CPU (what a link reads), or None."""
    return _checked(fd, st, relocatable=True)


def _checked(fd: int, st: os.stat_result, *, relocatable: bool) -> str | None:
    identity = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, relocatable)
    if identity in _sound:
        return None
    elf = _Elf(fd, st.st_size)
    problem = elf.link_problem() if relocatable else elf.load_problem()
    if problem is None:
        if len(_sound) >= _SOUND_MAX:
            _sound.clear()
        _sound[identity] = None
    return problem


def _with_elf(path: str | os.PathLike[str], visit: Callable[[_Elf], list | None]) -> list | None:
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused just below.
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        elf = _Elf(fd, st.st_size)
        return visit(elf) if elf.problem is None and elf.sections() is not None else None
    except OSError:
        return None
    finally:
        os.close(fd)


def symbols(path: str | os.PathLike[str], *, dynamic: bool) -> list[Symbol] | None:
    """Every named symbol of ``.dynsym`` (``dynamic``) or ``.symtab``."""

    def visit(elf: _Elf) -> list[Symbol] | None:
        sections = elf.sections() or []
        result = []
        for pair in elf.tables(_SHT_DYNSYM if dynamic else _SHT_SYMTAB):
            if pair is None:
                return None
            table, strtab = pair
            for name, fields in elf.symbol_fields(table):
                if name:
                    shndx = fields[4]
                    section = sections[shndx] if 0 < shndx < len(sections) else None
                    result.append(Symbol(_string(strtab, name), fields, section))
        return result

    return _with_elf(path, visit)


def imported_symbols(path: str | os.PathLike[str], prefix: bytes = b"") -> list[str] | None:
    """Names of the undefined ``.dynsym`` symbols starting with ``prefix``: what the library
    expects another to provide. Cheaper than :func:`symbols` (a load checks every library
    it opens): only the names that match are decoded."""

    def visit(elf: _Elf) -> list[str] | None:
        result = []
        for pair in elf.tables(_SHT_DYNSYM):
            if pair is None:
                return None
            table, strtab = pair
            for name, fields in elf.symbol_fields(table):
                if name and fields[4] == 0 and strtab.startswith(prefix, name):
                    result.append(_string(strtab, name))
        return result

    return _with_elf(path, visit)


def needed_libraries(path: str | os.PathLike[str]) -> list[str] | None:
    """The ``DT_NEEDED`` entries of a shared library (``["libc.so.6", ...]``)."""

    def visit(elf: _Elf) -> list[str] | None:
        entry = elf.order + _DYNAMIC[elf.elf_class]
        result = []
        for pair in elf.tables(_SHT_DYNAMIC):
            if pair is None:
                return None
            table, strtab = pair
            whole = len(table) - len(table) % struct.calcsize(entry)
            for tag, value in struct.iter_unpack(entry, table[:whole]):
                if tag == 0:  # DT_NULL ends the array
                    break
                if tag == _DT_NEEDED and value < len(strtab):
                    result.append(_string(strtab, value))
        return result

    return _with_elf(path, visit)
