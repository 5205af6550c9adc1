"""Embed CUBIN/PTX/fatbin images into an object file for ``TVM_FFI_EMBED_CUBIN(name)``.

Each image becomes the symbols ``__tvm_ffi__cubin_<name>`` (first byte) and
``__tvm_ffi__cubin_<name>_end`` (one past the last byte) in a read-only, 64-byte aligned
section of its own, followed by one NUL byte so PTX text is a C string in place: the
layout of ``tvm_ffi_embed_image.s.in`` (see ``_embed_layout``), which the assembler turns
into an object. The result is merged with the given input objects and the added symbols
are made local, so two libraries that embed the same name never see each other's data.

Command line (apache-tvm-ffi's, plus repeatable ``--cubin``/``--name`` pairs)::

    python -m tvm_ffi.utils.embed_cubin --output-obj OUT.o [--input-obj IN.o]... \\
        --cubin K.cubin --name NAME [--cubin K2.cubin --name NAME2]... [-v] [--strict]

From Python: :func:`embed_cubin` (apache-tvm-ffi's signature: one image file into one
object), :func:`embed_image` (bytes or a path, input object optional) and
:func:`embed_cubins` (several images at once). Needs GNU ``as``, and to merge input
objects ``ld`` and ``objcopy`` (``$AS``, ``$LD`` and ``$OBJCOPY`` override them);
``make_fatbin`` also needs CUDA's ``fatbinary``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Callable, Optional

from .. import _elf
from .._embed_names import SYMBOL_PREFIX, end_marker_clash
from . import _embed_layout
from ._fatbin import make_fatbin
from ._sources import ImageSource, read_image, recognise

__all__ = [
    "embed_cubin",
    "embed_cubins",
    "embed_image",
    "make_fatbin",
    "validate_embed_name",
]

Log = Optional[Callable[[str], None]]


def validate_embed_name(name: str) -> str:
    """Return ``name`` if it can be part of a C symbol, else raise ValueError."""
    if not (isinstance(name, str) and name.isascii() and name.isidentifier()):
        raise ValueError(
            f"embedded CUBIN name must be a C identifier (letters, digits, _; not starting with a "
            f"digit), got {name!r}"
        )
    return name


def _check_names(names: Iterable[str]) -> None:
    clash = end_marker_clash([validate_embed_name(name) for name in names])
    if clash is not None:
        raise ValueError(clash)


def _check_inputs(inputs: list[str], names: Iterable[str]) -> None:
    """Refuse inputs that already define an image symbol we add, or that reference the
    image ``X_end`` while we embed ``X`` (its end marker would satisfy that reference)."""
    for path in inputs:
        table = _elf.symbols(path, dynamic=False)
        if table is None:
            continue  # not an ELF object we can read: ld will say what it is
        defined = {sym.name for sym in table if sym.defined}
        undefined = {sym.name for sym in table if not sym.defined}
        for name in names:
            start, end = f"{SYMBOL_PREFIX}{name}", f"{SYMBOL_PREFIX}{name}_end"
            if start in defined or end in defined:
                raise ValueError(f"input object {path} already holds an image named {name!r}")
            if f"{end}_end" in undefined:
                raise ValueError(
                    f"embed names {name!r} and {name + '_end'!r} cannot be used together: "
                    f"{path} uses an image named {name + '_end'!r}, and {end} marks the "
                    f"end of {name!r}; rename one of them"
                )


def _tool(env_var: str, default: str) -> str:
    name = os.environ.get(env_var) or default
    path = shutil.which(name)
    if path is None:
        raise RuntimeError(
            f"embedding a CUBIN needs {default!r} from GNU binutils, but {name!r} was not found "
            f"(install binutils or set ${env_var})"
        )
    return path


def _run(cmd: list[str], cwd: str, log: Log) -> None:
    if log is not None:
        log("+ " + " ".join(cmd))
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(
            f"command failed with exit code {proc.returncode}: {' '.join(cmd)}\n"
            f"{proc.stdout}{proc.stderr}"
        )


def _assemble(assembler: str, blobs: dict[str, bytes], tmp: str, log: Log) -> Path:
    """``tmp/images.o``: every image of ``blobs`` as the layout template states it (hidden
    global symbols)."""
    images = []
    for name, data in blobs.items():
        Path(tmp, f"{name}.bin").write_bytes(data)
        images.append((name, f"{name}.bin"))  # relative: the assembler runs in tmp
    Path(tmp, "images.s").write_text(_embed_layout.assembler_source(images), encoding="utf-8")
    _run([assembler, "-o", "images.o", "images.s"], tmp, log)
    return Path(tmp, "images.o")


def _publish(built: Path, output: Path) -> None:
    """Copy ``built`` to ``output`` through a fresh file and a rename: ``output`` is either
    complete or untouched, and gets the usual mode (0666 less the umask)."""
    output.parent.mkdir(parents=True, exist_ok=True)
    staged = output.with_name(f".{output.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        with open(fd, "wb") as dst, open(built, "rb") as src:
            shutil.copyfileobj(src, dst)
        os.replace(staged, output)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(staged)
        raise


def _object_list(input_objs: object) -> list[str]:
    if isinstance(input_objs, (str, bytes, os.PathLike)):
        raise TypeError(
            f"input_objs must be a list of object paths (got a single {type(input_objs).__name__} "
            f"{os.fsdecode(input_objs)!r}; wrap it in a list)"
        )
    inputs = []
    for item in input_objs:  # type: ignore[attr-defined]
        if not isinstance(item, (str, os.PathLike)):
            raise TypeError(f"input_objs must hold paths (got {item!r:.80})")
        path = Path(item).resolve()
        if not path.is_file():
            raise FileNotFoundError(f"input object not found: {path}")
        inputs.append(str(path))
    return inputs


def _embed(output_obj: object, blobs: dict[str, bytes], inputs: list[str], log: Log) -> None:
    _check_inputs(inputs, blobs)
    # Every tool is found before any runs, so a missing one is reported first.
    assembler = _tool("AS", "as")
    merge = (_tool("LD", "ld"), _tool("OBJCOPY", "objcopy")) if inputs else None
    output = Path(output_obj).resolve()  # type: ignore[arg-type]
    with tempfile.TemporaryDirectory(prefix="tvm_ffi_embed_") as tmp:
        built = _assemble(assembler, blobs, tmp, log)
        if merge is not None:
            # Merged, the inputs' references bind to the images; then the symbols go local,
            # so two libraries embedding the same name never see each other's data.
            ld, objcopy = merge
            merged = str(Path(tmp, "merged.o"))
            _run([ld, "-r", "-z", "noexecstack", "-o", merged, *inputs, str(built)], tmp, log)
            localize = []
            for name in blobs:
                localize += [
                    f"--localize-symbol={SYMBOL_PREFIX}{name}",
                    f"--localize-symbol={SYMBOL_PREFIX}{name}_end",
                ]
            _run([objcopy, *localize, merged], tmp, log)
            built = Path(merged)
        _publish(built, output)
    if log is not None:
        log(f"wrote {output} ({', '.join(SYMBOL_PREFIX + n for n in blobs)})")


def embed_cubins(
    output_obj: str | os.PathLike[str],
    images: Mapping[str, ImageSource | Mapping[str, ImageSource]],
    input_objs: Iterable[str | os.PathLike[str]] = (),
) -> None:
    """Write ``output_obj`` holding every image of ``images`` (name -> bytes or path, or
    name -> {arch: image} to embed a fatbin) merged with ``input_objs`` (a list of paths).

    With input objects, the added symbols are made local to the output (the input's references
    to them are resolved at this step), so libraries embedding the same name do not clash.
    Every image must be a CUBIN, PTX or fatbin. The output is written atomically: it is
    either complete or untouched.
    """
    if not isinstance(images, Mapping):
        raise TypeError(f"images must be a dict of name -> image (got {type(images).__name__})")
    if not images:
        raise ValueError("embed_cubins needs at least one image")
    _check_names(images)
    inputs = _object_list(input_objs)
    blobs = {}
    for name, source in images.items():
        label = f"cannot embed {name!r}"
        data = make_fatbin(source) if isinstance(source, Mapping) else read_image(source, label)
        recognise(data, repr(name), strict=True)
        blobs[name] = data
    _embed(output_obj, blobs, inputs, None)


def embed_image(
    output_obj: str | os.PathLike[str],
    image: ImageSource,
    name: str,
    input_obj: str | os.PathLike[str] | None = None,
) -> None:
    """Embed one image (bytes or a path) under ``name``; see :func:`embed_cubins`."""
    embed_cubins(output_obj, {name: image}, [input_obj] if input_obj is not None else ())


def _warn(message: str) -> None:
    warnings.warn(message, UserWarning, stacklevel=4)


def embed_cubin(
    cubin_path: str | os.PathLike[str],
    input_obj_path: str | os.PathLike[str],
    output_obj_path: str | os.PathLike[str],
    name: str,
    verbose: bool = False,
) -> None:
    """apache-tvm-ffi's form: embed the image file ``cubin_path`` under ``name`` into a copy
    of the object ``input_obj_path``, written to ``output_obj_path``.

    An empty file or a truncated or corrupt CUBIN or fatbin is a ValueError naming the
    file; other bytes the loader refuses (no known format, text that breaks the PTX rules)
    are embedded as they are, with a UserWarning naming the file. ``verbose`` prints each
    step and command to stdout.
    """
    if not isinstance(cubin_path, (str, os.PathLike)):
        raise TypeError(
            f"cubin_path must be the path of an image file (got {type(cubin_path).__name__}); "
            "embed bytes with tvm_ffi.utils.embed_image(output, data, name, input_obj)"
        )
    _check_names([name])
    inputs = _object_list([input_obj_path])
    shown = repr(os.fspath(cubin_path))
    data = read_image(cubin_path, f"cannot embed {shown}")
    kind = recognise(data, shown, strict=False, warn=_warn)
    log = print if verbose else None
    if log is not None:
        log(
            f"embed {os.fspath(cubin_path)} ({len(data)} bytes, {kind or 'not loadable'}) "
            f"as {name!r}"
        )
    _embed(output_obj_path, {name: data}, inputs, log)


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
    parser.add_argument("-v", "--verbose", action="store_true", help="print each step")
    parser.add_argument(
        "--strict",
        action="store_true",
        help="refuse files the loader would refuse: no CUBIN, PTX or fatbin, or text that "
        "breaks the PTX rules (default: warn and embed them)",
    )
    args = parser.parse_args(argv)
    if len(args.cubin) != len(args.name):
        parser.error(
            f"give one --name per --cubin (got {len(args.cubin)} --cubin and "
            f"{len(args.name)} --name)"
        )
    if len(set(args.name)) != len(args.name):
        parser.error("each --name may appear only once")

    def warn(message: str) -> None:
        print(f"embed_cubin: warning: {message}", file=sys.stderr)

    log = print if args.verbose else None
    try:
        _check_names(args.name)
        inputs = _object_list(args.input_obj)
        blobs = {}
        for name, path in zip(args.name, args.cubin):
            data = read_image(Path(path), f"cannot embed {path!r}")
            kind = recognise(data, repr(path), strict=args.strict, warn=warn)
            if log is not None:
                log(f"embed {path} ({len(data)} bytes, {kind or 'not loadable'}) as {name!r}")
            blobs[name] = data
        _embed(args.output_obj, blobs, inputs, log)
    except (ValueError, TypeError, RuntimeError, OSError) as err:
        print(f"embed_cubin: error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
