"""Check and normalise what the user passed to load_inline/build, before any tool runs."""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence

__all__ = [
    "Spec",
    "check_backend",
    "check_identifier",
    "check_module_name",
    "embed_images",
    "file_stem",
    "flag_list",
    "source_list",
    "string_list",
]

# A stem that is safe as is in a file name and on a command line: no separator, no
# leading dot (hidden file, "..") or dash (read as an option), nothing the shell quotes.
# A pattern, not a compiled regex: a cache hit imports this module and never needs it.
_SAFE_STEM = r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,63}"

TYPE_CHECKING = False
if TYPE_CHECKING:  # for checkers only: a cache hit imports neither typing nor pathlib
    from pathlib import Path
    from typing import Union

    #: What ``embed_cubin`` maps a name to: one image, or arch ("sm_90") -> image (a fatbin).
    EmbedValue = Union[
        bytes, bytearray, memoryview, Mapping[str, Union[bytes, bytearray, memoryview]]
    ]

#: How a source file is built: ``cxx`` (C++), ``c`` (C), ``cuda`` (nvcc) or ``obj`` (linked as is).
FILE_KINDS = ("cxx", "c", "cuda", "obj")


class Spec:
    """One module to build: sources as text or files, flags, and images to embed.

    A plain class, not a dataclass: this module is imported on every cache hit, and the
    dataclasses module (with inspect) costs more than the hit itself.
    """

    api: str  # "load_inline", "build", ... for error messages
    name: str
    inline_cpp: str | None  # generated main.cpp text
    inline_cuda: str | None  # generated cuda.cu text
    files: list[Path]
    file_kinds: list[str]  # one of FILE_KINDS per file
    cflags: list[str]
    cuda_cflags: list[str]
    ldflags: list[str]
    include_paths: list[str]
    # name -> single image, or name -> {arch: image} to be combined into a fatbin
    embeds: dict[str, bytes | dict[str, bytes]]
    docs: dict[str, str]
    object_output: bool  # a relocatable object (``output="x.o"``) instead of a .so
    # The CUDA headers even without CUDA sources or images: the objects of a build whose
    # images are linked in a separate step (see _cached_build._two_level).
    cuda_runtime: bool
    # ``files`` are published cache entries whose path names their key: hashed by path.
    keyed_files: bool
    # The file stem when it must not depend on the module name (see _cached_build._two_level).
    entry_stem: str | None
    # cudart without CUDA sources: the link of objects made from them (_cached_build._two_level).
    link_cudart: bool
    archs: list | None  # arch=: a list of _arch.Arch, None for the default choice
    # CUDA's include directories, given instead of searched: the launcher runtime's, which
    # are its module's (see _launcher.runtime_spec).
    cuda_include_dirs: list[str]
    # The hit index's request key, kept by _hit_index.find so that a miss records its
    # entry without hashing the request again; "" until then (no key is empty).
    request: str | None = ""

    # Field -> default (a type is called for a fresh empty value). Read-only.
    _DEFAULTS = {  # noqa: RUF012
        "inline_cpp": None, "inline_cuda": None, "files": list, "file_kinds": list,
        "cflags": list, "cuda_cflags": list, "ldflags": list, "include_paths": list,
        "embeds": dict, "docs": dict, "object_output": False, "cuda_runtime": False,
        "keyed_files": False, "entry_stem": None, "link_cudart": False, "archs": None,
        "cuda_include_dirs": list,
    }  # fmt: skip

    def __init__(self, api: str, name: str, **fields: object) -> None:
        unknown = set(fields) - set(self._DEFAULTS)
        if unknown:
            raise TypeError(f"Spec: unknown fields {sorted(unknown)}")
        self.api = api
        self.name = name
        for key, default in self._DEFAULTS.items():
            value = fields.get(key, default)
            setattr(self, key, value() if value is default and callable(default) else value)
        if not self.file_kinds:
            self.file_kinds = [kind_from_suffix(p) for p in self.files]

    def replace(self, **changes: object) -> Spec:
        """A copy with ``changes`` applied (like ``dataclasses.replace``)."""
        fields = {key: getattr(self, key) for key in self._DEFAULTS}
        fields.update(changes)
        return Spec(self.api, self.name, **fields)

    def __repr__(self) -> str:
        return f"Spec({self.api!r}, {self.name!r})"

    @property
    def stem(self) -> str:
        """The file name of the library without its suffix (see :func:`file_stem`)."""
        return self.entry_stem or file_stem(self.name)

    @property
    def has_cuda_sources(self) -> bool:
        return self.inline_cuda is not None or "cuda" in self.file_kinds


def kind_from_suffix(path: Path) -> str:
    """The build of a file given in ``sources=``, where the suffix decides."""
    return {".cu": "cuda", ".c": "c", ".o": "obj", ".a": "obj"}.get(path.suffix, "cxx")


def check_identifier(api: str, what: str, value: object) -> str:
    """Return ``value`` if it is a C identifier, else raise ValueError (or TypeError)."""
    if not isinstance(value, str):
        raise TypeError(f"{api}: {what} must be a str (got {type(value).__name__})")
    # An ASCII Python identifier is exactly a C one: [A-Za-z_][A-Za-z0-9_]*.
    if not (value.isascii() and value.isidentifier()):
        raise ValueError(f"{api}: {what} must be a C identifier (got {value!r})")
    return value


def check_module_name(api: str, value: object) -> str:
    """Any non-empty str names a module (apache-tvm-ffi takes ``my-ops``, ``v1.2``, ``3d``):
    the file names are derived from it by :func:`file_stem`."""
    if not isinstance(value, str):
        raise TypeError(f"{api}: module name must be a str (got {type(value).__name__})")
    if not value.strip():
        raise ValueError(f"{api}: module name must not be empty (got {value!r})")
    return value


@functools.lru_cache(maxsize=256)  # on every cache hit, twice
def file_stem(name: str) -> str:
    """A file-name stem for module ``name``: the name itself when it is short and plain,
    else its plain characters (others become ``_``) plus a hash of the whole name, so
    two names never share a file and no name yields a path the OS refuses."""
    import re

    if re.fullmatch(_SAFE_STEM, name):
        return name
    plain = re.sub(r"[^A-Za-z0-9_.+-]", "_", name).lstrip(".-+")[:40] or "module"
    import hashlib  # only for names that need it: hashlib is slow to import

    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{plain}_{digest}"


def check_backend(api: str, value: object) -> None:
    """``backend=``: this package builds GPU code with CUDA only."""
    if value is not None and value != "cuda":
        raise ValueError(
            f"{api}: backend must be 'cuda' or None (got {value!r}); tvm-ffi-cubin builds GPU "
            "code with CUDA only"
        )


def check_flag(api: str, label: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{api}: {label} must be True or False (got {value!r:.80})")
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


def source_texts(api: str, label: str, value: object) -> list[str]:
    """:func:`string_list` for source text, which must have a UTF-8 form (a lone surrogate,
    e.g. from a bad decode, has none): ValueError naming where it is."""
    texts = string_list(api, label, value)
    for index, text in enumerate(texts):
        if text.isascii():
            continue
        try:
            text.encode()
        except UnicodeEncodeError as err:
            line = text.count("\n", 0, err.start) + 1
            column = err.start - text.rfind("\n", 0, err.start)
            where = label if isinstance(value, str) else f"{label}[{index}]"
            raise ValueError(
                f"{api}: {where} line {line} column {column} holds {text[err.start]!r}, which "
                "has no UTF-8 form (a lone surrogate); source text must be valid Unicode"
            ) from err
    return texts


# What no flag or path of a build may hold: build.ninja has no way to write these (a newline
# ends the line, and what follows would be read as ninja statements: a rule, a build step),
# and no compiler flag or file name a build needs holds one.
_UNWRITABLE = (("\n", "a newline"), ("\r", "a carriage return"), ("\0", "a NUL byte"))
_NO_PATH = "build.ninja cannot name such a path"


def check_writable(api: str, label: str, items: Sequence[str], what: str, indexed: bool) -> None:
    """Refuse a flag or path of ``items`` that holds a character build.ninja cannot write:
    ValueError naming ``label`` (``label[index]`` when ``indexed``) and the item."""
    if all(map(str.isprintable, items)):  # the usual case: one scan each, on every call
        return
    for index, item in enumerate(items):
        for char, name in _UNWRITABLE:
            if char in item:
                where = f"{label}[{index}]" if indexed else label
                raise ValueError(f"{api}: {where} holds {name} (got {item!r:.80}); {what}")


def flag_list(api: str, label: str, value: object) -> list[str]:
    """Compiler flags: a str is split as a shell would (``"-O0 -g"`` is two flags,
    ``"-DMSG='a b'"`` one); a list is taken as it is, one flag per item. A flag holding a
    newline, a carriage return or a NUL byte is refused (see :func:`check_writable`)."""
    if isinstance(value, str):
        import shlex

        try:
            flags = shlex.split(value)
        except ValueError as err:
            raise ValueError(f"{api}: {label} cannot be split like a shell would: {err}") from None
    else:
        flags = string_list(api, label, value)
    check_writable(api, label, flags, "a compiler flag never does", not isinstance(value, str))
    return flags


def source_list(api: str, value: object, label: str = "sources") -> list[Path]:
    """Source file paths, made absolute (ninja runs in the build directory) and checked."""
    indexed = not isinstance(value, (str, os.PathLike))
    if not indexed:
        value = [value]
    if not isinstance(value, Sequence):  # an empty list is no file, as for apache-tvm-ffi
        raise TypeError(f"{api}: {label} must be a path or a list of paths (got {value!r:.80})")
    from pathlib import Path

    paths = []
    for index, item in enumerate(value):
        if not isinstance(item, (str, os.PathLike)):
            raise TypeError(f"{api}: {label} must hold paths (got {item!r:.80})")
        where = f"{label}[{index}]" if indexed else label
        check_writable(api, where, [os.fsdecode(item)], _NO_PATH, False)
        path = Path(item).resolve()
        check_writable(api, where, [str(path)], _NO_PATH, False)  # a link's target, too
        if not path.is_file():
            raise FileNotFoundError(f"{api}: source file not found: {item}")
        paths.append(path)
    return paths


def typed_files(api: str, sources: object, cpp_files: object, cuda_files: object) -> tuple:
    """``(paths, kinds)`` from ``build``'s three file arguments.

    ``sources=`` (this package's spelling) lets the suffix decide; ``cpp_files=`` and
    ``cuda_files=`` (apache-tvm-ffi's) let the argument decide, except that ``.o`` files and
    ``.a`` archives are linked as they are and ``.c`` files in ``cpp_files`` are compiled as C.
    """
    paths: list[Path] = []
    kinds: list[str] = []
    if sources is not None:
        for path in source_list(api, sources):
            paths.append(path)
            kinds.append(kind_from_suffix(path))
    if cpp_files is not None:
        for path in source_list(api, cpp_files, "cpp_files"):
            if path.suffix == ".cu":
                raise ValueError(
                    f"{api}: cpp_files holds the CUDA source {path}; pass it in cuda_files"
                )
            paths.append(path)
            kinds.append({".o": "obj", ".a": "obj", ".c": "c"}.get(path.suffix, "cxx"))
    if cuda_files is not None:
        for path in source_list(api, cuda_files, "cuda_files"):
            paths.append(path)
            kinds.append("obj" if path.suffix in (".o", ".a") else "cuda")
    if not paths:
        raise ValueError(f"{api}: give cpp_files, cuda_files or sources (all are empty)")
    return paths, kinds


def include_list(api: str, value: object) -> list[str]:
    # Absolute, because the compiler runs with the build directory as its cwd.
    paths = [os.path.abspath(p) for p in string_list(api, "extra_include_paths", value)]
    check_writable(api, "extra_include_paths", paths, _NO_PATH, not isinstance(value, str))
    return paths


def function_docs(api: str, value: object) -> dict[str, str]:
    """``functions=``: a name, a list of names, or a dict name -> docstring (or None)."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        items = list(value.items())
    else:
        items = [(n, "") for n in string_list(api, "functions", value)]
    docs = {}
    for fname, doc in items:
        check_identifier(api, "function name", fname)
        if doc is None:
            doc = ""
        if not isinstance(doc, str):
            raise TypeError(
                f"{api}: docstring of {fname!r} must be a str or None (got {type(doc).__name__})"
            )
        docs[fname] = doc
    return docs


#: What apache-tvm-ffi's load_inline puts before every source, so sources that include
#: nothing still see TensorView, DLDataType ==, TVM_FFI_ICHECK, TVMFFIEnvGetStream and the
#: export macro.
PRELUDE_INCLUDES = (
    "tvm/ffi/container/tensor.h",
    "tvm/ffi/dtype.h",
    "tvm/ffi/error.h",
    "tvm/ffi/extra/c_env_api.h",
    "tvm/ffi/function.h",
)


#: Compiler flags that include the prelude before the first line of a source: the
#: generated ``main.cpp``/``cuda.cu`` stay the user's text, line numbers included.
PRELUDE_FLAGS = tuple(flag for header in PRELUDE_INCLUDES for flag in ("-include", header))


def export_block(docs: Mapping[str, str]) -> str:
    """Source text that exports ``docs``' functions (they must be declared above it) and
    their docstrings, as apache-tvm-ffi writes them: ``__tvm_ffi__doc_<name>`` in the
    library, which ``ffi.ModuleGetFunctionDoc`` answers."""
    if not docs:
        return ""
    lines = ["", "// Exports requested with functions= (added by tvm_ffi.cpp)."]
    for fname, doc in docs.items():
        lines.append(f"TVM_FFI_DLL_EXPORT_TYPED_FUNC({fname}, {fname});")
        if doc:
            lines.append(f"TVM_FFI_DLL_EXPORT_TYPED_FUNC_DOC({fname}, {_cxx_literal(doc)});")
    return "\n".join(lines) + "\n"


def _cxx_literal(text: str) -> str:
    """``text`` as a C++ string literal that only spells it: every byte but letters,
    digits, space and ``.,:;_-`` as a three-digit octal escape, so that no quote, backslash,
    line end, comment or trigraph of the caller's text reaches the compiler as such. A NUL
    ends the docstring there (the macro takes a C string)."""
    plain = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,:;_-"
    data = text.encode("utf-8", "backslashreplace")  # a lone surrogate is spelled out
    return '"' + "".join(chr(b) if b in plain else f"\\{b:03o}" for b in data) + '"'


def check_embed_names(api: str, names: list[str]) -> None:
    """Refuse names that cannot be embedded together (``X`` next to ``X_end``)."""
    if len(names) < 2:
        return  # the common case; a cache hit then does not import the rule
    from .._embed_names import end_marker_clash

    clash = end_marker_clash(names)
    if clash is not None:
        raise ValueError(f"{api}: {clash}")


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
    check_embed_names(api, list(images))
    return images


def _image_bytes(api: str, label: str, data: object) -> bytes:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"{api}: {label} must be bytes (got {type(data).__name__})")
    data = bytes(data)
    if not data:
        raise ValueError(f"{api}: {label} is empty")
    return data
