"""The three embedders (the embed tool, load_inline's embed_cubin= and the CMake functions)
lay an image out the same way, because all of them fill cmake/tvm_ffi_embed_image.s.in:
read back with the package's ELF reader, their objects and their linked files agree on
the section, its flags and alignment, the symbols' visibility and size, and the bytes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tvm_ffi import _elf, cpp
from tvm_ffi._embed_names import SYMBOL_PREFIX
from tvm_ffi.utils import embed_image

PROBE = Path(__file__).resolve().parent / "projects" / "embed_probe"
INCLUDE = Path(__file__).resolve().parents[2] / "include"
SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR = 0x1, 0x2, 0x4
STB_LOCAL, STB_GLOBAL, STV_HIDDEN = 0, 1, 2


def _layout(path: Path, name: str) -> dict[str, object]:
    """What an embedder decided for the image ``name`` in ``path``, read back."""
    table = {sym.name: sym for sym in _elf.symbols(path, dynamic=False) or ()}
    start, end = table[f"{SYMBOL_PREFIX}{name}"], table[f"{SYMBOL_PREFIX}{name}_end"]
    exported = {sym.name for sym in _elf.symbols(path, dynamic=True) or ()}
    section = start.section
    # A symbol's value is an offset into its section in an object (whose sh_addr is 0),
    # an address in a linked file.
    at = section.offset + start.value - section.addr
    with open(path, "rb") as f:
        f.seek(at)
        image = f.read(end.value - start.value + 1)
    return {
        "section": section.name,
        "flags": section.flags & (SHF_WRITE | SHF_ALLOC | SHF_EXECINSTR),
        "align": section.align,
        "start % 64": start.value % 64,
        "same section": end.section is section,
        "bind": (start.bind, end.bind),
        "visibility": (start.visibility, end.visibility),
        "exported": sorted({start.name, end.name} & exported),
        "size": start.size,
        "image": image,
    }


@pytest.fixture(scope="module")
def probe(built):
    return built(PROBE, "source")


@pytest.fixture(scope="module")
def tool(probe, tmp_path_factory) -> Path:
    """A folder with the embed tool's objects of the probe image: ``merged.o`` (with the
    probe's code) and ``alone.o``."""
    folder = tmp_path_factory.mktemp("embed-tool")
    image = (probe / "probe.cubin").read_bytes()
    code = folder / "probe.o"
    subprocess.run(
        ["c++", "-fPIC", "-c", str(PROBE / "probe.cc"), f"-I{INCLUDE}", "-o", str(code)],
        check=True,
    )
    embed_image(folder / "merged.o", image, "probe", input_obj=code)
    embed_image(folder / "alone.o", image, "probe")
    return folder


def _expected(image: bytes) -> dict[str, object]:
    return {
        "flags": SHF_ALLOC,
        "start % 64": 0,
        "same section": True,
        "visibility": (STV_HIDDEN, STV_HIDDEN),
        "exported": [],
        "size": len(image),
        "image": image + b"\0",
    }


def test_objects_share_one_layout(probe, tool):
    (cmake_target_object,) = probe.glob("CMakeFiles/probe_exe.dir/**/probe.embed.cc.o")
    merged = {
        "embed tool": _layout(tool / "merged.o", "probe"),
        "tvm_ffi_embed_cubin": _layout(probe / "probe_embedded.o", "probe"),
    }
    unmerged = {
        "embed tool": _layout(tool / "alone.o", "probe"),
        "tvm_ffi_target_embed_cubin": _layout(cmake_target_object, "probe"),
    }
    expected = {
        **_expected((probe / "probe.cubin").read_bytes()),
        "section": ".rodata.tvm_ffi_cubin.probe",
        "align": 64,
    }
    # Merged with the code that uses them, the symbols are local; else hidden globals.
    assert merged == {key: {**expected, "bind": (STB_LOCAL, STB_LOCAL)} for key in merged}
    assert unmerged == {key: {**expected, "bind": (STB_GLOBAL, STB_GLOBAL)} for key in unmerged}


def test_linked_files_share_one_layout(probe, tool, tmp_path):
    image = (probe / "probe.cubin").read_bytes()
    jit = cpp.build_inline(
        "layout_probe",
        cpp_sources=(PROBE / "probe.cc").read_text(),
        embed_cubin={"probe": image},
        build_directory=tmp_path / "jit",
    )
    library = tmp_path / "libtool.so"
    subprocess.run(["c++", "-shared", str(tool / "merged.o"), "-o", str(library)], check=True)
    fatbin = (probe / "fat" / "probe.fatbin").read_bytes()  # what probe_target embeds
    linked = {
        "embed tool": (_layout(library, "probe"), image),
        "load_inline": (_layout(Path(jit), "probe"), image),
        "tvm_ffi_embed_cubin": (_layout(probe / "libprobe_file.so", "probe"), image),
        "tvm_ffi_target_embed_cubin": (_layout(probe / "libprobe_target.so", "probe"), fatbin),
    }
    for route, (layout, embedded) in linked.items():
        assert layout.pop("align") >= 64, route
        assert layout.pop("section") == ".rodata", route  # the linker merges .rodata.*
        # Hidden symbols turn local in a shared library; the visibility ld then records
        # depends on how the code that uses them was compiled, not on the embedder.
        del layout["visibility"]
        expected = {**_expected(embedded), "bind": (STB_LOCAL, STB_LOCAL)}
        del expected["visibility"]
        assert layout == expected, route
