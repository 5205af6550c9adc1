"""tvm_ffi._elf, the package's one ELF reader, on objects the assembler writes (64- and
32-bit): symbols with their binding, visibility and section; files it does not read."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tvm_ffi import _elf

SOURCE = """
  .pushsection .rodata.probe,"a",%progbits
  .balign 32
  .globl shown
  .hidden shown
shown:
  .byte 1
kept:
  .byte 2
  .popsection
  .globl elsewhere
  .quad elsewhere
"""


@pytest.mark.parametrize("flag", ["--64", "--32"])
def test_symbols_with_their_sections(tmp_path, flag):
    if shutil.which("as") is None:
        pytest.skip("needs binutils' as")
    (tmp_path / "probe.s").write_text(
        SOURCE.replace(".quad", ".long" if flag == "--32" else ".quad")
    )
    subprocess.run(["as", flag, "-o", "probe.o", "probe.s"], cwd=tmp_path, check=True)
    table = {sym.name: sym for sym in _elf.symbols(tmp_path / "probe.o", dynamic=False)}
    shown, kept, elsewhere = table["shown"], table["kept"], table["elsewhere"]
    assert (shown.bind, shown.visibility, shown.value, shown.defined) == (1, 2, 0, True)
    assert (kept.bind, kept.visibility, kept.value) == (0, 0, 1)
    assert kept.section is shown.section
    assert (shown.section.name, shown.section.align, shown.section.size) == (".rodata.probe", 32, 2)
    assert (elsewhere.defined, elsewhere.section) == (False, None)
    assert _elf.symbols(tmp_path / "probe.o", dynamic=True) == []  # an object has no .dynsym


def test_what_it_does_not_read_is_none(tmp_path):
    (tmp_path / "text").write_bytes(b"not an ELF file")
    (tmp_path / "cut").write_bytes(b"\x7fELF\x02\x01\x01" + bytes(20))
    os.mkfifo(tmp_path / "fifo")  # refused, not waited on
    for name in ("text", "cut", "fifo", "missing"):
        assert _elf.symbols(tmp_path / name, dynamic=False) is None, name
        assert _elf.needed_libraries(tmp_path / name) is None, name


def _object_problem(path) -> str | None:
    fd = os.open(path, os.O_RDONLY)
    try:
        return _elf.object_problem(fd, os.fstat(fd))
    finally:
        os.close(fd)


def test_object_problem_sees_every_cut(tmp_path):
    """A relocatable object cut short anywhere is refused with the size it needs: a link
    of it failed with gold's "internal error in find_view", naming neither file nor fix."""
    if shutil.which("as") is None:
        pytest.skip("needs binutils' as")
    (tmp_path / "probe.s").write_text(SOURCE)
    subprocess.run(["as", "-o", "probe.o", "probe.s"], cwd=tmp_path, check=True)
    data = (tmp_path / "probe.o").read_bytes()
    assert _object_problem(tmp_path / "probe.o") is None
    cut = tmp_path / "cut.o"
    for size in range(len(data)):
        cut.write_bytes(data[:size])
        assert _object_problem(cut) is not None, size
    cut.write_bytes(data[:-1])
    assert _object_problem(cut) == (
        f"truncated: the file has {len(data) - 1} bytes but its headers and sections need "
        f"{len(data)} (a write or copy was cut short)"
    )
    cut.write_bytes(b"")
    assert _object_problem(cut) == "the file is empty"
    import tvm_ffi._core

    assert _object_problem(tvm_ffi._core.__file__) == "not a relocatable object: a shared library"
