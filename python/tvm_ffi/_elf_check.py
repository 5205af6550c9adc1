"""Is this file a shared library this process can load? Asked before ``dlopen``.

``dlopen`` maps a library's segments straight from the file: a file cut short maps
pages past its end, and the first touch of one kills the process with SIGBUS. A library
for another CPU is reported by glibc as "No such file or directory". Reading the ELF
header and the program headers (a few hundred bytes) answers both, with a reason.
"""

from __future__ import annotations

import functools
import os
import stat
import struct
import sys

__all__ = ["file_kind", "library_problem"]

_ELF_MAGIC = b"\x7fELF"
_PT_LOAD = 1
_ET_NAMES = {1: "an object file (.o)", 2: "an executable", 4: "a core dump"}
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
    190: "CUDA",
    243: "RISC-V",
    258: "LoongArch",
}


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


def _machine(number: int) -> str:
    return f"{_MACHINES.get(number, 'machine')} (ELF machine {number})"


@functools.cache
def _host() -> tuple[int, int, int] | None:
    """(class, byte order, machine) of the running interpreter, from its own ELF header."""
    for exe in ("/proc/self/exe", os.path.realpath(sys.executable)):
        try:
            with open(exe, "rb") as f:
                head = f.read(20)
        except OSError:
            continue
        if head[:4] == _ELF_MAGIC and head[5] in (1, 2):
            (machine,) = struct.unpack_from("<H" if head[5] == 1 else ">H", head, 18)
            return head[4], head[5], machine
    return None


# Files found sound, by (device, inode, size, mtime, ctime): any write changes mtime or
# ctime, so a hit means the same bytes. Keeps a warm JIT load to one fstat for this check.
_sound: dict[tuple[int, int, int, int, int], None] = {}
_SOUND_MAX = 1024


def library_problem(fd: int, st: os.stat_result) -> str | None:
    """Why the regular file open as ``fd`` (``st`` its fstat) cannot be loaded, or None."""
    identity = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    if identity in _sound:
        return None
    problem = _problem(fd, st.st_size)
    if problem is None:
        if len(_sound) >= _SOUND_MAX:
            _sound.clear()
        _sound[identity] = None
    return problem


def _problem(fd: int, size: int) -> str | None:
    if size == 0:
        return "the file is empty"
    head = os.pread(fd, 64, 0)
    if head[:4] != _ELF_MAGIC:
        return f"not an ELF file (it starts with {head[:8]!r})"
    if len(head) < 6 or head[4] not in (1, 2) or head[5] not in (1, 2):
        return f"truncated or malformed ELF header ({size} bytes)"
    is64 = head[4] == 2
    order = "<" if head[5] == 1 else ">"
    if len(head) < (64 if is64 else 52):
        return f"truncated: the file has {size} bytes, less than an ELF header"
    e_type, e_machine = struct.unpack_from(order + "HH", head, 16)
    host = _host()
    if host is not None:
        h_class, h_order, h_machine = host
        bits = "64-bit" if is64 else "32-bit"
        host_bits = "64-bit" if h_class == 2 else "32-bit"
        ends = "little-endian" if head[5] == 1 else "big-endian"
        host_ends = "little-endian" if h_order == 1 else "big-endian"
        if (e_machine, head[4], head[5]) != (h_machine, h_class, h_order):
            return (
                f"built for another CPU: {_machine(e_machine)}, {bits} {ends}; this process "
                f"runs on {_machine(h_machine)}, {host_bits} {host_ends}"
            )
    if e_type != 3:  # ET_DYN
        return f"not a shared library: {_ET_NAMES.get(e_type, f'ELF type {e_type}')}"
    if is64:
        phoff, shoff = struct.unpack_from(order + "QQ", head, 32)
        phentsize, phnum, shentsize, shnum = struct.unpack_from(order + "HHHH", head, 54)
        # Elf64_Phdr: p_type, p_flags, p_offset, p_vaddr, p_paddr, p_filesz, ...
        entry_format, offset_at = order + "IIQQQQ", (2, 5)
    else:
        phoff, shoff = struct.unpack_from(order + "II", head, 28)
        phentsize, phnum, shentsize, shnum = struct.unpack_from(order + "HHHH", head, 42)
        # Elf32_Phdr: p_type, p_offset, p_vaddr, p_paddr, p_filesz, ...
        entry_format, offset_at = order + "IIIII", (1, 4)
    need = phoff + phnum * phentsize
    if shoff:
        need = max(need, shoff + shnum * shentsize)
    if need <= size and phnum:
        if phentsize < struct.calcsize(entry_format):
            return f"malformed ELF program headers (entry size {phentsize})"
        table = os.pread(fd, phnum * phentsize, phoff)
        for index in range(phnum):
            fields = struct.unpack_from(entry_format, table, index * phentsize)
            if fields[0] == _PT_LOAD:
                need = max(need, fields[offset_at[0]] + fields[offset_at[1]])
    if need > size:
        return (
            f"truncated: the file has {size} bytes but its headers and segments need {need} "
            "(a write or copy was cut short)"
        )
    return None
