"""Embed CUBIN/PTX/fatbin images into an object file for ``TVM_FFI_EMBED_CUBIN(name)``.

Each image becomes the symbols ``__tvm_ffi__cubin_<name>`` (first byte) and
``__tvm_ffi__cubin_<name>_end`` (one past the last byte) in a read-only, 64-byte aligned
section, followed by one NUL byte so PTX text is a C string in place. The result is merged
with the given input objects and the added symbols are made local, so two libraries that
embed the same name never see each other's data.

Command line::

    python -m tvm_ffi.utils.embed_cubin --output-obj OUT.o [--input-obj IN.o]... \\
        --cubin K.cubin --name NAME [--cubin K2.cubin --name NAME2]...

Needs GNU ``ld`` and ``objcopy`` (``$LD`` / ``$OBJCOPY`` override them); ``make_fatbin`` also
needs CUDA's ``fatbinary``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Union

from ._image import check_image, image_archs

__all__ = ["embed_cubin", "embed_cubins", "make_fatbin", "validate_embed_name"]

ImageSource = Union[bytes, bytearray, memoryview, str, "os.PathLike[str]"]

SECTION = ".rodata.tvm_ffi_cubin"
SYMBOL_PREFIX = "__tvm_ffi__cubin_"
_ALIGNMENT = 64  # generous: the driver reads ELF and fatbin headers with aligned loads
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_ARCH_KEY = re.compile(r"(sm|compute)_(\d+)([af]?)\Z")


def validate_embed_name(name: str) -> str:
    """Return ``name`` if it can be part of a C symbol, else raise ValueError."""
    if not isinstance(name, str) or not _IDENTIFIER.match(name):
        raise ValueError(
            f"embedded CUBIN name must be a C identifier (letters, digits, _; not starting with a "
            f"digit), got {name!r}"
        )
    return name


def _tool(env_var: str, default: str) -> str:
    name = os.environ.get(env_var) or default
    path = shutil.which(name)
    if path is None:
        raise RuntimeError(
            f"embedding a CUBIN needs {default!r} from GNU binutils, but {name!r} was not found "
            f"(install binutils or set ${env_var})"
        )
    return path


def _run(cmd: list[str], cwd: str) -> None:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(
            f"command failed with exit code {proc.returncode}: {' '.join(cmd)}\n"
            f"{proc.stdout}{proc.stderr}"
        )


def _read(source: ImageSource) -> bytes:
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source)
    return Path(source).read_bytes()


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
    candidates = [os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"]
    for home in filter(None, candidates):
        tool = Path(home) / "bin" / "fatbinary"
        if tool.is_file():
            return str(tool)
    found = shutil.which("fatbinary")
    if found:
        return found
    raise RuntimeError("CUDA's 'fatbinary' tool was not found; set CUDA_HOME to the toolkit root")


def make_fatbin(images: Mapping[str, ImageSource]) -> bytes:
    """Pack per-architecture images into one fatbin; the driver picks the one for the device.

    Keys name the architecture (``"sm_80"``, ``"sm_90a"``, ``"compute_90"``); whether a value
    is a cubin or PTX is read from its content, and a cubin must be for the SM its key names.
    """
    if not images:
        raise ValueError("make_fatbin needs at least one image")
    specs = []
    for key, source in images.items():
        m = _ARCH_KEY.match(key) if isinstance(key, str) else None
        if m is None:
            raise ValueError(
                f"fatbin image keys look like 'sm_90', 'sm_90a' or 'compute_90', got {key!r}"
            )
        data = _read(source)
        try:
            kind = check_image(data)
        except ValueError as err:
            raise ValueError(f"image {key!r}: {err}") from None
        if kind == "fatbin":
            raise ValueError(f"image {key!r} is already a fatbin; pass cubin or PTX images")
        if kind == "cubin":
            (held,) = image_archs(data)
            if re.match(r"sm_(\d+)", held).group(1) != m.group(2):
                raise ValueError(f"image {key!r} is a cubin for {held}")
        specs.append(("elf" if kind == "cubin" else "ptx", m.group(2) + m.group(3), data))
    with tempfile.TemporaryDirectory(prefix="tvm_ffi_fatbin_") as tmp:
        cmd = [_fatbinary(), f"--create={tmp}/out.fatbin", "-64"]
        for i, (kind, sm, data) in enumerate(specs):
            path = Path(tmp) / f"image{i}.{'cubin' if kind == 'elf' else 'ptx'}"
            # fatbinary reads PTX up to its end; a trailing NUL would become part of the text.
            path.write_bytes(data.split(b"\0", 1)[0] if kind == "ptx" else data)
            cmd.append(f"--image3=kind={kind},sm={sm},file={path}")
        _run(cmd, cwd=tmp)
        return (Path(tmp) / "out.fatbin").read_bytes()


def _image_object(name: str, data: bytes, tmp: str) -> str:
    """An object holding one image between the two symbols, in its own file under tmp."""
    ld, objcopy = _tool("LD", "ld"), _tool("OBJCOPY", "objcopy")
    blob = f"{name}.bin"  # ld names the symbols after the file: _binary_<name>_bin_start
    Path(tmp, blob).write_bytes(data + b"\0")
    obj = f"{name}.image.o"
    # -z noexecstack adds .note.GNU-stack: linking this object never asks for an executable stack.
    _run([ld, "-r", "-b", "binary", "-z", "noexecstack", "-o", obj, blob], cwd=tmp)
    stem = f"_binary_{name}_bin"
    # Alignment first, under the old name: objcopy versions differ in which name a combined
    # --rename-section/--set-section-alignment call matches.
    _run([objcopy, f"--set-section-alignment=.data={_ALIGNMENT}", obj], cwd=tmp)
    _run(
        [
            objcopy,
            f"--rename-section=.data={SECTION},alloc,load,readonly,data,contents",
            f"--strip-symbol={stem}_start",
            f"--strip-symbol={stem}_end",
            f"--strip-symbol={stem}_size",
            f"--add-symbol={SYMBOL_PREFIX}{name}={SECTION}:0,global,object",
            f"--add-symbol={SYMBOL_PREFIX}{name}_end={SECTION}:{len(data)},global,object",
            obj,
        ],
        cwd=tmp,
    )
    return str(Path(tmp, obj))


def embed_cubins(
    output_obj: str | os.PathLike[str],
    images: Mapping[str, ImageSource | Mapping[str, ImageSource]],
    input_objs: Iterable[str | os.PathLike[str]] = (),
) -> None:
    """Write ``output_obj`` holding every image of ``images`` (name -> bytes or path, or
    name -> {arch: image} to embed a fatbin) merged with ``input_objs``.

    With input objects, the added symbols are made local to the output (the input's references
    to them are resolved at this step), so libraries embedding the same name do not clash.
    The output is written atomically: it is either complete or untouched.
    """
    if not images:
        raise ValueError("embed_cubins needs at least one image")
    for name in images:
        validate_embed_name(name)
    blobs = {}
    for name, source in images.items():
        data = make_fatbin(source) if isinstance(source, Mapping) else _read(source)
        try:
            check_image(data)
        except ValueError as err:
            raise ValueError(f"cannot embed {name!r}: {err}") from None
        blobs[name] = data
    inputs = [str(Path(p).resolve()) for p in input_objs]
    for path in inputs:
        if not Path(path).is_file():
            raise FileNotFoundError(f"input object not found: {path}")
    ld, objcopy = _tool("LD", "ld"), _tool("OBJCOPY", "objcopy")
    output = Path(output_obj).resolve()
    output.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tvm_ffi_embed_") as tmp:
        parts = inputs + [_image_object(name, data, tmp) for name, data in blobs.items()]
        merged = Path(tmp, "merged.o")
        _run([ld, "-r", "-z", "noexecstack", "-o", str(merged), *parts], cwd=tmp)
        if inputs:
            localize = []
            for name in blobs:
                localize += [
                    f"--localize-symbol={SYMBOL_PREFIX}{name}",
                    f"--localize-symbol={SYMBOL_PREFIX}{name}_end",
                ]
            _run([objcopy, *localize, str(merged)], cwd=tmp)
        fd, staged = tempfile.mkstemp(prefix=output.name + ".", suffix=".tmp", dir=output.parent)
        os.close(fd)
        try:
            shutil.copyfile(merged, staged)
            os.replace(staged, output)
        except BaseException:
            os.unlink(staged)
            raise


def embed_cubin(
    output_obj: str | os.PathLike[str],
    cubin: ImageSource,
    name: str,
    input_obj: str | os.PathLike[str] | None = None,
) -> None:
    """Embed one image under ``name``; see :func:`embed_cubins`."""
    embed_cubins(output_obj, {name: cubin}, [input_obj] if input_obj is not None else ())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tvm_ffi.utils.embed_cubin",
        description="Embed CUBIN/PTX/fatbin images as __tvm_ffi__cubin_<name> symbols.",
    )
    parser.add_argument("--output-obj", required=True, help="object file to write")
    parser.add_argument(
        "--input-obj", action="append", default=[], help="object to merge (repeatable)"
    )
    parser.add_argument("--cubin", action="append", required=True, help="image file (repeatable)")
    parser.add_argument(
        "--name", action="append", required=True, help="name for each --cubin, in order"
    )
    args = parser.parse_args(argv)
    if len(args.cubin) != len(args.name):
        parser.error(
            f"give one --name per --cubin (got {len(args.cubin)} --cubin and "
            f"{len(args.name)} --name)"
        )
    if len(set(args.name)) != len(args.name):
        parser.error("each --name may appear only once")
    try:
        embed_cubins(args.output_obj, dict(zip(args.name, args.cubin)), args.input_obj)
    except (ValueError, RuntimeError, OSError) as err:
        print(f"embed_cubin: error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
