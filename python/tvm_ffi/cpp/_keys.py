"""A module's key: content and identity only, the same on every host that builds the same
module with the same tools (see docs/dev/remote_cache.md).

The key names the cache entry here and in a shared remote cache, so it must not hold what
differs between two hosts (or two installs, or two cache directories on one host): the
package's install path, the cache root, the Python's path, the tools' paths. What it
holds instead:

- the request, through :func:`._hit_index.feed_spec` (the one way both keys read a spec);
- ``build.ninja``, with each of those paths replaced by a name (``$PACKAGE``, ``$CACHE``,
  ``$cxx``, ...): the flags, the target architectures and the build steps stay;
- the tools' identities (``--version`` and a digest of the binary, not their path), the
  digest of the package's headers and compiled files, of the CUDA headers and of every
  file the link names, and the machine's architecture.

Digests of files are remembered per process by the files' stamps (size, mtime, inode),
and the package's on disk beside the tools' identities: a full lookup hashes no header.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import tvm_ffi

from ..utils import _embed_layout
from . import _cache, _hit_index, _toolchain

__all__ = ["CUDA_HEADERS", "module_key", "package_digest"]

#: The label of the CUDA headers among a build's tools (see _cached_build._plan).
CUDA_HEADERS = "cuda-headers"
# A file's stamp -> the SHA-256 of its content, for this process.
_digests: dict[str, str] = {}


def file_digest(path: str) -> str:
    """SHA-256 of the file at ``path`` (remembered by its stamp)."""
    stamp = _hit_index.file_stamp(path) + f"\t{os.stat(path).st_ino}"
    found = _digests.get(stamp)
    if found is None:
        found = _digests[stamp] = _toolchain.file_sha256(path)
    return found


def package_digest(root: Path) -> str:
    """SHA-256 over the package's headers and compiled files (their paths relative to
    their folder, and their bytes): two installs of one release agree, wherever they are.
    Remembered under ``<root>/toolchain/`` (and the host's, see _toolchain.host_memo) by
    the package's stamp fingerprint."""
    include = str(_hit_index.include_dir())
    fingerprint = _hit_index.package_fingerprint(include)
    found = _digests.get(f"package:{fingerprint}")
    if found is not None:
        return found

    # The cache's own record, else the host's (see _toolchain.host_memo: the fingerprint
    # holds the files' paths, sizes, mtimes and the compiled files' inodes).
    def read(record: Path) -> str | None:
        try:
            text = record.read_text().strip()
        except OSError:
            return None
        return text if len(text) == 64 else None

    def compute() -> str:
        hasher = _cache.KeyHasher()
        lib = os.path.join(os.path.dirname(tvm_ffi.__file__), "lib")
        for label, top in (("lib", lib), ("include", os.path.join(include, "tvm", "ffi"))):
            for path in sorted(_files(top)):
                # The precompiled prelude (tens of MB) is named by prebuilt.json (hashed
                # here), which records the prelude text and the size it was built to:
                # hashing its bytes cost a first build in a fresh cache ~30 ms.
                digest = "see prebuilt.json" if path.endswith(".gch") else file_digest(path)
                hasher.add(f"{label}/{os.path.relpath(path, top)}", digest)
        return hasher.hexdigest(64)

    found = _toolchain.remembered(
        root,
        f"package-{fingerprint[:32]}",
        read=read,
        compute=compute,
        write=lambda record, value: _cache.replace_atomically(record, value.encode()),
    )
    _digests[f"package:{fingerprint}"] = found
    return found


def _files(top: str) -> list[str]:
    found = []
    for folder, _, names in os.walk(top):
        found += [os.path.join(folder, name) for name in names]
    return found


def portable(text: str, places: dict[str, str]) -> str:
    """``text`` with each path of ``places`` (path -> name) replaced by its name, the
    longest first (the include folder of an install lies inside its package folder)."""
    for path in sorted(places, key=len, reverse=True):
        if path:
            text = text.replace(path, places[path])
    return text


def module_key(
    spec,
    ninja_text: str,
    tools: list[tuple[str, str]],
    root: Path,
    sources: Sequence[tuple[str, str]] = (),
    cuda_root: Path | None = None,
) -> str:
    """The key of the entry that ``spec`` builds with ``build.ninja`` text ``ninja_text``
    and ``tools`` ((label, path) pairs), in the cache at ``root``; ``sources``: generated
    translation units (see _launcher); ``cuda_root``: the CUDA toolkit the build uses."""
    import sys

    places = {
        str(root): "$CACHE",
        os.path.dirname(tvm_ffi.__file__): "$PACKAGE",
        str(_hit_index.include_dir()): "$INCLUDE",
        sys.executable: "$PYTHON",
    }
    if cuda_root is not None:
        places[str(cuda_root)] = "$CUDA"
    for label, tool in tools:
        places[tool] = f"${label}"
    hasher = _cache.KeyHasher()
    hasher.add("recipe", _hit_index.RECIPE)
    hasher.add("abi", _hit_index.ABI)
    hasher.add("version", tvm_ffi.__version__)  # looked up per call, never bound at import
    hasher.add("machine", os.uname().machine)
    hasher.add("package", package_digest(root))
    hasher.add("ninja", portable(ninja_text, places))
    for label, tool in tools:
        if label == CUDA_HEADERS:
            hasher.add(label, file_digest(tool))
        else:
            hasher.add(label, _toolchain.tool_identity(Path(tool), root))
    for path in _hit_index.linked_files(spec.ldflags):
        hasher.add("linked", file_digest(path))
    _hit_index.feed_spec(hasher, spec, lambda text: portable(text, places))
    for name, text in sources:
        hasher.add(name, text)
    if spec.embeds:  # the layout the images are embedded in, by the JIT or the embed tool
        hasher.add("embed layout", _embed_layout.template())
    return hasher.hexdigest()
