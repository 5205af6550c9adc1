"""Check and normalise what the user passed to load_inline/build, before any tool runs."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Union

__all__ = ["Spec", "check_identifier", "embed_images", "source_list", "string_list"]

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

#: What ``embed_cubin`` maps a name to: one image, or arch ("sm_90") -> image (a fatbin).
EmbedValue = Union[bytes, bytearray, memoryview, Mapping[str, Union[bytes, bytearray, memoryview]]]


@dataclass
class Spec:
    """One module to build: sources as text or files, flags, and images to embed."""

    api: str  # "load_inline", "build", ... for error messages
    name: str
    inline_cpp: str | None = None  # generated main.cpp text
    inline_cuda: str | None = None  # generated cuda.cu text
    files: list[Path] = field(default_factory=list)
    cflags: list[str] = field(default_factory=list)
    cuda_cflags: list[str] = field(default_factory=list)
    ldflags: list[str] = field(default_factory=list)
    include_paths: list[str] = field(default_factory=list)
    # name -> single image, or name -> {arch: image} to be combined into a fatbin
    embeds: dict[str, bytes | dict[str, bytes]] = field(default_factory=dict)
    docs: dict[str, str] = field(default_factory=dict)

    @property
    def has_cuda_sources(self) -> bool:
        return self.inline_cuda is not None or any(p.suffix == ".cu" for p in self.files)

    @property
    def uses_cuda(self) -> bool:
        # Embedded images are launched through the CUDA runtime: headers and cudart needed.
        return self.has_cuda_sources or bool(self.embeds)


def check_identifier(api: str, what: str, value: object) -> str:
    """Return ``value`` if it is a C identifier, else raise ValueError (or TypeError)."""
    if not isinstance(value, str):
        raise TypeError(f"{api}: {what} must be a str (got {type(value).__name__})")
    if not _IDENTIFIER.fullmatch(value):
        raise ValueError(f"{api}: {what} must be a C identifier (got {value!r})")
    return value


def string_list(api: str, label: str, value: object) -> list[str]:
    """``None`` -> [], ``"x"`` -> ["x"], a sequence of str -> list; else TypeError."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, Sequence) and all(isinstance(item, str) for item in value):
        return list(value)
    raise TypeError(f"{api}: {label} must be a str or a list of str (got {value!r:.80})")


def source_list(api: str, value: object) -> list[Path]:
    """Source file paths, made absolute (ninja runs in the build directory) and checked."""
    if isinstance(value, (str, os.PathLike)):
        value = [value]
    if not isinstance(value, Sequence) or not value:
        raise TypeError(
            f"{api}: sources must be a path or a non-empty list of paths (got {value!r:.80})"
        )
    paths = []
    for item in value:
        if not isinstance(item, (str, os.PathLike)):
            raise TypeError(f"{api}: sources must hold paths (got {item!r:.80})")
        path = Path(item).resolve()
        if not path.is_file():
            raise FileNotFoundError(f"{api}: source file not found: {item}")
        paths.append(path)
    return paths


def include_list(api: str, value: object) -> list[str]:
    # Absolute, because the compiler runs with the build directory as its cwd.
    return [os.path.abspath(p) for p in string_list(api, "extra_include_paths", value)]


def function_docs(api: str, value: object) -> dict[str, str]:
    """``functions=``: a name, a list of names, or a dict name -> docstring."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        items = list(value.items())
    else:
        items = [(n, "") for n in string_list(api, "functions", value)]
    docs = {}
    for fname, doc in items:
        check_identifier(api, "function name", fname)
        if not isinstance(doc, str):
            raise TypeError(
                f"{api}: docstring of {fname!r} must be a str (got {type(doc).__name__})"
            )
        docs[fname] = doc
    return docs


def export_block(docs: Mapping[str, str]) -> str:
    """Source text that exports ``docs``' functions (they must be declared above it)."""
    if not docs:
        return ""
    lines = [
        "",
        "// Exports requested with functions= (added by tvm_ffi.cpp).",
        "#include <tvm/ffi/function.h>",
    ]
    lines += [f"TVM_FFI_DLL_EXPORT_TYPED_FUNC({fname}, {fname});" for fname in docs]
    return "\n".join(lines) + "\n"


def embed_images(api: str, value: object) -> dict[str, bytes | dict[str, bytes]]:
    """Check ``embed_cubin`` and copy its images to immutable bytes."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(
            f"{api}: embed_cubin must be a dict of name -> bytes (got {type(value).__name__})"
        )
    images: dict[str, bytes | dict[str, bytes]] = {}
    for name, image in value.items():
        check_identifier(api, "embed name", name)
        if isinstance(image, Mapping):
            if not image:
                raise ValueError(f"{api}: embed_cubin[{name!r}] is an empty mapping")
            per_arch = {}
            for arch, data in image.items():
                if not isinstance(arch, str):
                    raise TypeError(
                        f"{api}: embed_cubin[{name!r}] keys must be arch names like 'sm_90' "
                        f"(got {arch!r})"
                    )
                per_arch[arch] = _image_bytes(api, f"embed_cubin[{name!r}][{arch!r}]", data)
            images[name] = per_arch
        else:
            images[name] = _image_bytes(api, f"embed_cubin[{name!r}]", image)
    return images


def _image_bytes(api: str, label: str, data: object) -> bytes:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"{api}: {label} must be bytes (got {type(data).__name__})")
    data = bytes(data)
    if not data:
        raise ValueError(f"{api}: {label} is empty")
    return data
