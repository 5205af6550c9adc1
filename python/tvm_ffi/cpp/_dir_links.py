"""The directories a build reads (the package's headers, CUDA's, the caller's include paths
and source folders), named through links inside the build directory, so that a compile
command is the same wherever they and the cache are.

A compiler cache (ccache, sccache) keys an object by its command line and by the paths the
preprocessor writes into its output (line markers name every header it read). The steps
run in the build directory; an absolute ``-I`` of the package (a venv's site-packages, a
checkout), of a pip CUDA wheel or a source's absolute path would make two hosts, two venvs
or two checkouts miss each other's objects. ``-Iinc/tvm_ffi``, a link in the build
directory to the package's include directory, reads the same headers under the same name
everywhere. Neither a path relative to the build directory (the cache and the package
move independently) nor the caches' base-directory settings (they rewrite paths relative
to the working directory, which lies in the cache) can do that. A source file is compiled
through a link to its folder (``src/0/kernel.cu``), so that its ``#include "..."`` still
finds its neighbours.

A compiler's message then names ``inc/tvm_ffi/tvm/ffi/...``: :func:`readable` gives the
directory back for the messages the user reads.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from . import _cache

__all__ = ["DirLink", "include_links", "make_links", "readable", "source_links"]


@dataclass(frozen=True)
class DirLink:
    """A symbolic link ``name`` (relative to the build directory, as the commands name it)
    to the directory ``target``."""

    name: str
    target: str


def include_links(package: str, cuda: Sequence[str], user: Sequence[str]) -> list[DirLink]:
    """The links of the include directories, in search order: the package's, CUDA's (nvcc's
    own first), the caller's."""
    links = [DirLink("inc/tvm_ffi", package)]
    links += [DirLink("inc/cuda" if i == 0 else f"inc/cuda_{i}", d) for i, d in enumerate(cuda)]
    links += [DirLink(f"inc/{i}", folder) for i, folder in enumerate(user)]
    return links


def source_links(paths: Sequence[Path]) -> tuple[list[DirLink], list[str]]:
    """(a link per folder of ``paths``, each path as named through its folder's link)."""
    folders: dict[str, DirLink] = {}
    names = []
    for path in paths:
        parent = str(path.parent)
        link = folders.setdefault(parent, DirLink(f"src/{len(folders)}", parent))
        names.append(f"{link.name}/{path.name}")
    return list(folders.values()), names


def make_links(dir_fd: int, build_dir: Path, links: Sequence[DirLink]) -> None:
    """Point each link under ``dir_fd`` (``build_dir``, named in errors) at its target,
    unless it does already. Under the entry's lock; a link is replaced by a rename, so a
    reader never finds it missing, and a failed one leaves no temporary link behind."""
    for link in links:
        with _cache.parent_of(dir_fd, link.name) as (fd, name):
            with contextlib.suppress(OSError):
                if os.readlink(name, dir_fd=fd) == link.target:
                    continue
            tmp = f"{name}.{os.getpid()}.tmp"
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=fd)
            try:
                os.symlink(link.target, tmp, dir_fd=fd)
                os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
            except OSError as err:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=fd)
                raise OSError(err.errno, err.strerror, str(build_dir / link.name)) from None


def readable(text: str, links: Sequence[DirLink], build_dir: Path) -> str:
    """``text`` (compiler output) with each link's name replaced by the directory it names:
    ``inc/tvm_ffi/tvm/ffi/x.h:3:1: error`` becomes ``/.../site-packages/tvm_ffi/include/...``.
    A name counts where a path starts (not inside ``/x/inc/0/``), or after the build
    directory's own path."""
    if not links:
        return text
    by_name = {f"{link.name}/": f"{link.target}/" for link in links}
    names = "|".join(re.escape(name) for name in sorted(by_name, key=len, reverse=True))
    prefix = re.escape(f"{build_dir}/")
    pattern = re.compile(rf"(?:{prefix}|(?<![\w./-]))({names})")
    return pattern.sub(lambda match: by_name[match.group(1)], text)
