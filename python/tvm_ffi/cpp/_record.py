"""``TVM_FFI_RECORD=<file>``: a record of every cached module a process builds or loads, to
prebuild and pull on other hosts (``python -m tvm_ffi.cache``; see
docs/dev/remote_cache.md).

A record is one JSON line: the module's name, its cache entry (the portable key) and
library, and its key inputs as the build reads them: the generated source texts, the
source files, the embedded images (each by the SHA-256 of its bytes), the flags, the
include folders and the architectures. The bytes themselves go next to the record file,
content-addressed (``<file>.blobs/<sha256>``): a workload's processes load the same
modules again and again, and an embedded image is megabytes, so each is written once
and a line stays short enough for one ``O_APPEND`` write that concurrent processes never
interleave. The reader (:func:`read`) trusts nothing in the file: a line that is not a
record is an error naming its number, and a blob is checked against its digest.
"""

from __future__ import annotations

import json
import os
import re

from .. import _log
from . import _cache

__all__ = ["ENV", "Record", "note", "read"]

ENV = "TVM_FFI_RECORD"
FORMAT = 1
# Entries this process has recorded (one line per module and process), and the record
# files that failed (warned once, then not tried again).
_noted: set[tuple[str, str]] = set()
_failed: set[str] = set()
# What an entry directory and its library may be called (see _spec.file_stem): no
# separator and no leading dot, so a record can name nothing outside the cache.
_ENTRY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,200}")
_DIGEST = re.compile(r"[0-9a-f]{64}")
_LISTS = ("cflags", "cuda_cflags", "ldflags", "include_paths")


def _blob(folder: str, data: bytes) -> str:
    """Store ``data`` under ``folder`` by its digest (once; atomically); the digest."""
    import hashlib

    digest = hashlib.sha256(data).hexdigest()
    path = os.path.join(folder, digest)
    if not os.path.exists(path):
        os.makedirs(folder, exist_ok=True)
        from pathlib import Path

        _cache.replace_atomically(Path(path), data)
    return digest


def _line(spec, path: str, folder: str) -> dict:
    """The record of ``spec``, whose library is ``path``; its bytes stored under ``folder``."""

    def text(value: str | None) -> str | None:
        return None if value is None else _blob(folder, value.encode())

    embeds = {}
    for name, image in spec.embeds.items():
        if isinstance(image, dict):
            embeds[name] = {arch: _blob(folder, bytes(data)) for arch, data in image.items()}
        else:
            embeds[name] = _blob(folder, bytes(image))
    inputs = {
        "inline_cpp": text(spec.inline_cpp),
        "inline_cuda": text(spec.inline_cuda),
        "files": [
            {"path": str(file), "kind": kind, "sha256": _blob(folder, file.read_bytes())}
            for file, kind in zip(spec.files, spec.file_kinds)
        ],
        **{field: list(getattr(spec, field)) for field in _LISTS},
        "embeds": embeds,
        "arch": None if spec.archs is None else ";".join(map(str, spec.archs)),
        "arch_list": _arch_list(spec),
    }
    return {
        "tvm_ffi_record": FORMAT,
        "api": spec.api,
        "name": spec.name,
        "entry": os.path.basename(os.path.dirname(path)),
        "library": os.path.basename(path),
        "machine": os.uname().machine,
        "inputs": inputs,
    }


def _arch_list(spec) -> str | None:
    """The architectures a build of ``spec`` chose by itself (the variable, the visible
    GPUs or the default list), so that a builder without these GPUs chooses the same:
    replayed as ``TVM_FFI_CUDA_ARCH_LIST``. None where ``arch=`` or a flag chose them."""
    from . import _arch

    if not spec.has_cuda_sources or spec.archs is not None:
        return None
    if _arch.user_arch_flag(spec.cuda_cflags) is not None:
        return None
    return ";".join(map(str, _arch.target_archs(_cache.cache_root())))


def note(spec, path: str | os.PathLike[str]) -> None:
    """Append the record of ``spec`` (built or found at ``path``) to ``$TVM_FFI_RECORD``,
    once per entry and process. Never fails the load: a record that cannot be written is
    said once and recording stops for that file."""
    target = os.environ.get(ENV, "").strip()
    path = os.fspath(path)
    if not target or spec.object_output or (target, path) in _noted or target in _failed:
        return  # an object output (output="x.o") is never shared: nothing to prebuild
    _noted.add((target, path))
    try:
        target = os.path.abspath(os.path.expanduser(target))
        line = json.dumps(_line(spec, path, target + ".blobs"), sort_keys=True) + "\n"
        fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            os.write(fd, line.encode())  # one write: O_APPEND keeps lines whole
        finally:
            os.close(fd)
    except (OSError, ValueError) as err:
        _failed.add(os.environ.get(ENV, "").strip())
        _log.warn(f"tvm_ffi.cpp: cannot record {spec.name!r} in {ENV}={target}: {err}")


class Record:
    """One line of a record file, checked: what a builder needs to rebuild the module."""

    def __init__(self, where: str, data: object, blobs: str) -> None:
        self.where = where  # "<file>:<line>", for messages
        self._blobs = blobs
        try:
            self._check(data)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise ValueError(f"{where}: not a tvm_ffi record ({err})") from None

    def _check(self, data) -> None:
        if data.get("tvm_ffi_record") != FORMAT:
            raise ValueError(f"format {data.get('tvm_ffi_record')!r}, this reader takes {FORMAT}")
        self.api, self.name = _str(data, "api"), _str(data, "name")
        self.entry, self.library = _str(data, "entry"), _str(data, "library")
        self.machine = _str(data, "machine")
        for label, value in (("entry", self.entry), ("library", self.library)):
            if not _ENTRY.fullmatch(value) or ".." in value:
                raise ValueError(f"{label} {value!r} is not a cache entry name")
        inputs = data["inputs"]
        if not isinstance(inputs, dict):
            raise TypeError("inputs must be an object")
        self.inputs = inputs
        for field in ("inline_cpp", "inline_cuda", "arch", "arch_list"):
            if inputs[field] is not None:
                _str(inputs, field)
        for field in _LISTS:
            if not all(isinstance(item, str) for item in _list(inputs, field)):
                raise TypeError(f"{field} must be a list of strings")
        for file in _list(inputs, "files"):
            _str(file, "path"), _str(file, "kind"), _digest(file["sha256"])
        embeds = inputs["embeds"]
        if not isinstance(embeds, dict):
            raise TypeError("embeds must be an object")
        for image in embeds.values():
            for digest in image.values() if isinstance(image, dict) else [image]:
                _digest(digest)
        for digest in (inputs["inline_cpp"], inputs["inline_cuda"]):
            if digest is not None:
                _digest(digest)
        self._check_as_a_call(inputs)

    def _check_as_a_call(self, inputs: dict) -> None:
        """The checks of the public functions, in their words: embed names become
        assembler symbols, flags and folders go into build.ninja, so a record is refused
        as the call it stands for would be."""
        from . import _arch, _spec

        api = self.api
        if inputs["inline_cpp"] is None and inputs["inline_cuda"] is None and not inputs["files"]:
            raise ValueError("it names no source")
        kinds = [file["kind"] for file in inputs["files"]]
        if not set(kinds) <= set(_spec.FILE_KINDS):
            raise ValueError(f"file kinds must be of {_spec.FILE_KINDS} (got {kinds})")
        _spec.check_module_name(api, self.name)
        for name, image in inputs["embeds"].items():
            _spec.check_identifier(api, "embed name", name)
            if isinstance(image, dict) and not image:
                raise ValueError(f"{api}: embed_cubin[{name!r}] is an empty mapping")
        self.flags = {field: _spec.flag_list(api, field, inputs[field]) for field in _LISTS[:3]}
        self.flags["include_paths"] = _spec.include_list(api, inputs["include_paths"])
        for field in ("arch", "arch_list"):  # read as TVM_FFI_CUDA_ARCH_LIST would be
            if inputs[field] is not None:
                _arch.parse_arch_list(inputs[field], source=f"{api}: {field}")

    def blob(self, digest: str) -> bytes:
        """The stored bytes of ``digest``, checked."""
        import hashlib

        path = os.path.join(self._blobs, digest)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as err:
            raise ValueError(f"{self.where}: stored input {path}: {err.strerror}") from None
        if hashlib.sha256(data).hexdigest() != digest:
            raise ValueError(f"{self.where}: stored input {path} does not match its digest")
        return data

    def spec(self, workdir: str):
        """The :class:`._spec.Spec` this record describes. A source file is taken from its
        recorded path where that holds the recorded bytes (its path is part of the key),
        else written under ``workdir`` (then the key differs: the caller says so)."""
        from pathlib import Path

        from . import _arch, _spec

        inputs = self.inputs

        def text(field: str) -> str | None:
            digest = inputs[field]
            if digest is None:
                return None
            try:
                return self.blob(digest).decode()
            except UnicodeDecodeError:
                raise ValueError(f"{self.where}: stored {field} {digest} is not UTF-8") from None

        files = []
        for index, file in enumerate(inputs["files"]):
            data = self.blob(file["sha256"])
            path = Path(file["path"])
            try:
                same = path.read_bytes() == data
            except OSError:
                same = False
            if not same:
                path = Path(workdir, f"{index}_{path.name}")
                path.write_bytes(data)
            files.append(path)
        embeds = {
            name: {arch: self.blob(d) for arch, d in image.items()}
            if isinstance(image, dict)
            else self.blob(image)
            for name, image in inputs["embeds"].items()
        }
        arch = inputs["arch"]
        return _spec.Spec(
            self.api,
            self.name,
            inline_cpp=text("inline_cpp"),
            inline_cuda=text("inline_cuda"),
            files=files,
            file_kinds=[file["kind"] for file in inputs["files"]],
            embeds=_spec.embed_images(self.api, embeds),  # images: not empty, bytes
            archs=None if arch is None else _arch.parse_arch_list(arch, source=self.where),
            **self.flags,
        )


def _str(data: dict, field: str) -> str:
    value = data[field]
    if not isinstance(value, str):
        raise TypeError(f"{field} must be a string")
    return value


def _list(data: dict, field: str) -> list:
    value = data[field]
    if not isinstance(value, list):
        raise TypeError(f"{field} must be a list")
    return value


def _digest(value: object) -> None:
    if not (isinstance(value, str) and _DIGEST.fullmatch(value)):
        raise ValueError(f"{value!r:.80} is not a SHA-256 digest")


def read(path: str) -> list[Record]:
    """The records of the file at ``path``, one per entry (the first of each), in order.
    ValueError naming the file, or the file and line, of what cannot be read."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        raise ValueError(f"record file {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"record file {path}: {err}") from None
    records: dict[str, Record] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            data = json.loads(line)
        except ValueError as err:
            raise ValueError(f"{where}: not a tvm_ffi record (not JSON: {err})") from None
        if not isinstance(data, dict):
            raise ValueError(f"{where}: not a tvm_ffi record (not a JSON object)")
        record = Record(where, data, path + ".blobs")
        records.setdefault(record.entry, record)
    return list(records.values())
