"""The embedding tool: symbols, sections, localisation, fatbins, the CLI and the guide's
manual objcopy route. Needs binutils and nvcc (for real cubins), not a GPU."""

from __future__ import annotations

import ctypes
import re
import subprocess
from pathlib import Path

import pytest

from helpers.tools import embed_cli
from tvm_ffi.utils import embed_cubins, embed_image, make_fatbin, validate_embed_name

pytestmark = pytest.mark.usefixtures("binutils")


def _link(cxx: str, objects: list[Path], out: Path) -> Path:
    subprocess.run(
        [cxx, "-shared", *map(str, objects), "-o", str(out), "-Wl,-z,noexecstack"], check=True
    )
    return out


def _read_blob(lib_path: Path) -> bytes:
    lib = ctypes.CDLL(str(lib_path), mode=ctypes.RTLD_LOCAL)
    lib.embedded_blob.restype = ctypes.c_void_p
    lib.embedded_blob.argtypes = [ctypes.POINTER(ctypes.c_size_t)]
    size = ctypes.c_size_t()
    address = lib.embedded_blob(ctypes.byref(size))
    # One byte past the end: the NUL the tool appends.
    return ctypes.string_at(address, size.value + 1)


def _symbols(obj: Path) -> dict[str, tuple[int, str]]:
    out = subprocess.run(["nm", str(obj)], capture_output=True, text=True, check=True).stdout
    table = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3:
            table[parts[2]] = (int(parts[0], 16), parts[1])
    return table


def _sections(obj: Path) -> str:
    return subprocess.run(
        ["readelf", "-S", "-W", str(obj)], capture_output=True, text=True, check=True
    ).stdout


@pytest.mark.parametrize("name", ["my_cubin", "_x", "K9"])
def test_valid_names(name):
    assert validate_embed_name(name) == name


@pytest.mark.parametrize("name", ["", "9lives", "my-cubin", "a b", "é", "x;y"])
def test_invalid_names_fail_before_any_tool(name, tmp_path, monkeypatch):
    # With no linker at all, only the name check can explain the error.
    monkeypatch.setenv("LD", "/nonexistent/ld")
    with pytest.raises(ValueError, match=r"^embedded CUBIN name must be a C identifier"):
        embed_image(tmp_path / "out.o", b"unused", name)
    assert not (tmp_path / "out.o").exists()


def test_symbols_and_sections(compile_kernel, tmp_path):
    cubin = compile_kernel("sm_80")
    out = tmp_path / "only.o"
    embed_image(out, cubin, "my_cubin")
    symbols = _symbols(out)
    start, start_kind = symbols["__tvm_ffi__cubin_my_cubin"]
    end, end_kind = symbols["__tvm_ffi__cubin_my_cubin_end"]
    assert end - start == len(cubin)
    assert start_kind == end_kind == "R"  # global (no input objects to bind them), read-only
    assert not any(name.startswith("_binary_") for name in symbols)
    sections = _sections(out)
    line = next(row for row in sections.splitlines() if ".rodata.tvm_ffi_cubin" in row)
    fields = line.split()
    assert fields[-1] == "64"  # alignment
    assert "A" in fields and "W" not in line.split("PROGBITS")[1]
    assert int(fields[fields.index("PROGBITS") + 3], 16) == len(cubin) + 1  # image + NUL
    assert ".note.GNU-stack" in sections


def test_merge_localizes_and_library_reads_bytes(compile_reader, compile_kernel, cxx, tmp_path):
    cubin = compile_kernel("sm_90")
    reader = compile_reader(tmp_path)
    out = tmp_path / "merged.o"
    embed_image(out, cubin, "blob", input_obj=reader)
    symbols = _symbols(out)
    assert symbols["__tvm_ffi__cubin_blob"][1] == "r"  # local now
    assert symbols["__tvm_ffi__cubin_blob_end"][1] == "r"
    assert symbols["embedded_blob"][1] == "T"
    lib = _link(cxx, [out], tmp_path / "libreader.so")
    dynamic = subprocess.run(["nm", "-D", str(lib)], capture_output=True, text=True).stdout
    assert "__tvm_ffi__cubin" not in dynamic
    assert _read_blob(lib) == cubin + b"\0"


def test_two_libraries_same_name_side_by_side(compile_reader, compile_kernel, cxx, tmp_path):
    images = [compile_kernel("sm_80"), compile_kernel("sm_90")]
    assert images[0] != images[1]
    libs = []
    for i, image in enumerate(images):
        folder = tmp_path / f"lib{i}"
        folder.mkdir()
        obj = folder / "merged.o"
        embed_image(obj, image, "blob", input_obj=compile_reader(folder))
        libs.append(_link(cxx, [obj], folder / f"libsame{i}.so"))
    first, second = (_read_blob(lib) for lib in libs)
    assert first == images[0] + b"\0"
    assert second == images[1] + b"\0"


def test_ptx_is_nul_terminated(compile_reader, compile_kernel, cxx, tmp_path):
    ptx = compile_kernel("compute_90", ptx=True).rstrip(b"\0")
    obj = tmp_path / "ptx.o"
    embed_image(obj, ptx, "blob", input_obj=compile_reader(tmp_path))
    data = _read_blob(_link(cxx, [obj], tmp_path / "libptx.so"))
    assert data == ptx + b"\0"


def test_several_images_and_paths(compile_kernel, cxx, tmp_path):
    path = tmp_path / "k.cubin"
    path.write_bytes(compile_kernel("sm_75"))
    out = tmp_path / "many.o"
    embed_cubins(out, {"first": path, "second": compile_kernel("sm_86")})
    symbols = _symbols(out)
    assert (
        symbols["__tvm_ffi__cubin_first_end"][0] - symbols["__tvm_ffi__cubin_first"][0]
        == path.stat().st_size
    )
    assert symbols["__tvm_ffi__cubin_second_end"][0] - symbols["__tvm_ffi__cubin_second"][0] == len(
        compile_kernel("sm_86")
    )
    assert symbols["__tvm_ffi__cubin_second"][0] % 64 == 0


def test_fatbin_value_embeds_a_fatbin(compile_kernel, tmp_path):
    out = tmp_path / "fat.o"
    embed_cubins(out, {"fat": {"sm_80": compile_kernel("sm_80"), "sm_90": compile_kernel("sm_90")}})
    symbols = _symbols(out)
    size = symbols["__tvm_ffi__cubin_fat_end"][0] - symbols["__tvm_ffi__cubin_fat"][0]
    assert size > len(compile_kernel("sm_80")) + len(compile_kernel("sm_90"))


def test_make_fatbin_rules(compile_kernel):
    from tvm_ffi.utils import image_archs

    fatbin = make_fatbin({"sm_80": compile_kernel("sm_80"), "sm_90": compile_kernel("sm_90")})
    assert image_archs(fatbin) == ["sm_80", "sm_90"]
    with pytest.raises(ValueError, match=r"^image 'sm_90' is a cubin for sm_80$"):
        make_fatbin({"sm_90": compile_kernel("sm_80")})
    with pytest.raises(ValueError, match=r"^fatbin image keys look like"):
        make_fatbin({"hopper": compile_kernel("sm_90")})
    with pytest.raises(
        ValueError,
        match=r"^cannot embed image 'sm_80' into a fatbin: not a CUBIN, PTX or fatbin image",
    ):
        make_fatbin({"sm_80": b"\x01\x02\x03\x04"})


def test_rejects_non_images_and_keeps_output(tmp_path):
    out = tmp_path / "out.o"
    out.write_bytes(b"previous")
    with pytest.raises(
        ValueError,
        match=re.escape(
            "cannot embed 'x': not a CUBIN, PTX or fatbin image (first bytes: 12 34 56 78)"
        ),
    ):
        embed_image(out, b"\x12\x34\x56\x78", "x")
    assert out.read_bytes() == b"previous"
    assert [p.name for p in tmp_path.iterdir()] == ["out.o"]


@pytest.mark.parametrize("var,tool", [("AS", "as"), ("LD", "ld"), ("OBJCOPY", "objcopy")])
def test_missing_tool_is_named(compile_reader, compile_kernel, tmp_path, monkeypatch, var, tool):
    # With an input object to merge, every one of the three runs.
    reader = compile_reader(tmp_path)
    monkeypatch.setenv(var, "/nonexistent/bin/tool")
    with pytest.raises(RuntimeError, match=rf"needs '{tool}' from GNU binutils.*set \${var}"):
        embed_image(tmp_path / "out.o", compile_kernel("sm_80"), "k", input_obj=reader)
    assert not (tmp_path / "out.o").exists()


def test_without_input_objects_only_the_assembler_runs(compile_kernel, tmp_path, monkeypatch):
    monkeypatch.setenv("LD", "/nonexistent/bin/ld")
    monkeypatch.setenv("OBJCOPY", "/nonexistent/bin/objcopy")
    embed_image(tmp_path / "out.o", compile_kernel("sm_80"), "k")
    assert "__tvm_ffi__cubin_k" in _symbols(tmp_path / "out.o")


def testembed_cli(compile_reader, compile_kernel, cxx, tmp_path):
    (tmp_path / "k.cubin").write_bytes(compile_kernel("sm_80"))
    reader = compile_reader(tmp_path)
    proc = embed_cli(
        "--output-obj",
        "out.o",
        "--input-obj",
        str(reader),
        "--cubin",
        "k.cubin",
        "--name",
        "blob",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    lib = _link(cxx, [tmp_path / "out.o"], tmp_path / "libcli.so")
    assert _read_blob(lib) == compile_kernel("sm_80") + b"\0"


def test_cli_errors(tmp_path):
    proc = embed_cli(
        "--output-obj", "o.o", "--cubin", "a", "--cubin", "b", "--name", "x", cwd=tmp_path
    )
    assert proc.returncode == 2
    assert "give one --name per --cubin (got 2 --cubin and 1 --name)" in proc.stderr
    (tmp_path / "a").write_bytes(b"\x7fELF")
    proc = embed_cli("--output-obj", "o.o", "--cubin", "a", "--name", "1x", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.startswith("embed_cubin: error: embedded CUBIN name must be a C identifier")


def test_guide_manual_objcopy_route(compile_reader, compile_kernel, cxx, tmp_path):
    """The guide's `ld -r -b binary` + objcopy steps give symbols TVM_FFI_EMBED_CUBIN finds."""
    cubin = compile_kernel("sm_75")
    (tmp_path / "kernel.cubin").write_bytes(cubin)
    subprocess.run(
        ["ld", "-r", "-b", "binary", "-o", "kernel_data.o", "kernel.cubin"],
        cwd=tmp_path,
        check=True,
    )
    subprocess.run(
        [
            "objcopy",
            "--rename-section",
            ".data=.rodata,alloc,load,readonly,data,contents",
            "--redefine-sym",
            "_binary_kernel_cubin_start=__tvm_ffi__cubin_blob",
            "--redefine-sym",
            "_binary_kernel_cubin_end=__tvm_ffi__cubin_blob_end",
            "kernel_data.o",
        ],
        cwd=tmp_path,
        check=True,
    )
    reader = compile_reader(tmp_path)
    lib = _link(cxx, [reader, tmp_path / "kernel_data.o"], tmp_path / "libguide.so")
    assert _read_blob(lib)[: len(cubin)] == cubin
