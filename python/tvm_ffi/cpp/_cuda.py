"""Find CUDA for a JIT build: nvcc, the headers and libcudart, wherever they are installed.

A build asks only for what its sources need (nvcc and cudart for CUDA sources, the
headers alone for a C++ wrapper of embedded images), and the first place that has all
of it wins, in this order:

1. ``CUDA_HOME``, then ``CUDA_PATH``: a variable that is set must name a toolkit that has
   what is needed; it is never silently passed over for another one.
2. ``nvcc`` on ``PATH`` (the toolkit around it).
3. cuda-pathfinder: NVIDIA's pip wheels (``nvidia/cu13``, ``nvidia/cuda_nvcc``,
   ``nvidia/cuda_runtime`` in site-packages), conda (``$CONDA_PREFIX``), then the toolkit
   of the ``libcudart`` the dynamic loader finds.
4. ``/usr/local/cuda``, ``/opt/cuda``, then ``/usr/local/cuda-*`` (newest first).

Nothing happens at import time. The result is cached per process, keyed by the
environment variables the search reads; what steps 3-4 found is also remembered in the
cache root (like the compilers' identities), so that a process that only loads cached
modules does not even import cuda-pathfinder.
"""

from __future__ import annotations

import functools
import glob
import hashlib
import json
import os
import re
import site
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CudaInstall", "find_cuda", "find_cuda_binary", "includes_cuda_header"]

_INSTALL_HINT = (
    "set CUDA_HOME to a CUDA toolkit, or `pip install nvidia-cuda-nvcc nvidia-cuda-runtime`"
)
# Where /usr/local/cuda-like installs are looked for last; a test may empty it.
_SYSTEM_ROOTS = ("/usr/local/cuda", "/opt/cuda")
_VERSIONED_ROOTS = "/usr/local/cuda-*"


@dataclass(frozen=True)
class CudaInstall:
    """What a build uses of one CUDA installation."""

    root: Path  # the toolkit root, or the wheel / conda directory holding the headers
    how: str  # how it was found: "CUDA_HOME", "nvcc on PATH", "pip wheel", ...
    include_dirs: tuple[Path, ...]  # the directory of cuda_runtime.h
    cccl_dir: Path | None = None  # <include>/cccl (CUDA 13 keeps CCCL, <nv/target>, there)
    nvcc: Path | None = None
    cudart: Path | None = None  # the libcudart file to link

    def describe(self) -> str:
        """One line for ``verbose``: which CUDA, and how it was found."""
        parts = [f"CUDA {self.root} (found through {self.how})"]
        if self.nvcc is not None and self.nvcc.parent.parent != self.root:
            parts.append(f"nvcc {self.nvcc}")
        if self.cudart is not None and self.cudart.parent.parent != self.root:
            parts.append(f"cudart {self.cudart}")
        return ", ".join(parts)

    def link_flags(self) -> list[str]:
        """Link cudart: ``-lcudart`` when there is a ``libcudart.so``; a pip wheel ships only
        ``libcudart.so.13``, linked by that name. The rpath lets the library find it."""
        assert self.cudart is not None
        lib_dir = self.cudart.parent
        name = self.cudart.name
        lib = "-lcudart" if name == "libcudart.so" else f"-l:{name}"
        return [f"-L{lib_dir}", lib, f"-Wl,-rpath,{lib_dir}"]


# `#include <...>` of a CUDA header: cuda.h, cuda_runtime.h, cuda_fp16.h, cublas.h, CCCL's
# <cuda/...>, the runtime's type headers, and this package's CUDA headers.
_CUDA_INCLUDE = re.compile(
    r"^[ \t]*#[ \t]*include[ \t]*<(?:tvm/ffi/extra/cuda/|cuda/|cu\w*\.h>|driver_types\.h>"
    r"|vector_types\.h>)",
    re.MULTILINE,
)


def includes_cuda_header(inline_cpp: str | None, files, kinds) -> bool:
    """Whether the C++ sources include a CUDA header themselves (in their own text)."""
    if inline_cpp is not None and _CUDA_INCLUDE.search(inline_cpp):
        return True
    for path, kind in zip(files, kinds):
        if kind in ("cxx", "c"):
            text = Path(path).read_text(errors="replace")
            if _CUDA_INCLUDE.search(text):
                return True
    return False


def _needs_text(nvcc: bool, cudart: bool) -> str:
    wanted = (["nvcc"] if nvcc else []) + ["the CUDA headers"] + (["libcudart"] if cudart else [])
    return ", ".join(wanted)


def _headers_under(root: Path) -> Path | None:
    for include in [root / "include", *map(Path, sorted(glob.glob(f"{root}/targets/*/include")))]:
        if (include / "cuda_runtime.h").is_file():
            return include
    return None


def _version_key(path: str) -> tuple[int, ...]:
    # cudart.so.13 is newer than .so.12; /usr/local/cuda-12.10 newer than -12.9.
    return tuple(int(part) for part in re.findall(r"\d+", os.path.basename(path)))


def _cudart_near(anchor: Path) -> Path | None:
    """libcudart in ``anchor``'s lib64/lib (a toolkit, a wheel, conda's targets/<arch>)."""
    for lib_dir in (anchor / "lib64", anchor / "lib"):
        if (lib_dir / "libcudart.so").exists():
            return lib_dir / "libcudart.so"
        versioned = sorted(glob.glob(f"{lib_dir}/libcudart.so.*"), key=_version_key)
        if versioned:
            return Path(versioned[-1])
    return None


def _from_root(root: Path, how: str, nvcc: bool, cudart: bool) -> tuple[CudaInstall | None, str]:
    """The install at a toolkit-like ``root``, or None and what it lacks."""
    include = _headers_under(root)
    tool = root / "bin" / "nvcc"
    lib = None
    if include is not None:
        lib = _cudart_near(include.parent) or _cudart_near(root)
    missing = []
    if nvcc and not tool.is_file():
        missing.append("no bin/nvcc")
    if include is None:
        missing.append("no include/cuda_runtime.h")
    if cudart and lib is None:
        missing.append("no libcudart.so* in lib64 or lib")
    if missing:
        return None, ", ".join(missing)
    assert include is not None
    cccl = include / "cccl"
    return CudaInstall(
        root=root,
        how=how,
        include_dirs=(include,),
        cccl_dir=cccl if cccl.is_dir() else None,
        nvcc=tool if nvcc else None,
        cudart=lib if cudart else None,
    ), ""


def _site_dirs() -> list[str]:
    dirs = list(site.getsitepackages())
    if site.ENABLE_USER_SITE and site.getusersitepackages():
        dirs.append(site.getusersitepackages())
    return dirs


def _how_pathfinder(path: Path, found_via: str) -> str:
    text = str(path)
    if any(text.startswith(os.path.join(d, "")) for d in _site_dirs()):
        return "cuda-pathfinder: pip wheel"
    conda = os.environ.get("CONDA_PREFIX")
    if conda and text.startswith(os.path.join(conda, "")):
        return "cuda-pathfinder: conda"
    described = {
        "site-packages": "pip wheel",
        "system-ctk-root": "the toolkit of the libcudart the dynamic loader finds",
    }
    return f"cuda-pathfinder: {described.get(found_via, found_via)}"


def _from_pathfinder(nvcc: bool, cudart: bool) -> tuple[CudaInstall | None, str]:
    try:
        import cuda.pathfinder as pathfinder
    except ImportError:
        return None, "cuda-pathfinder (not installed: pip install cuda-pathfinder)"
    try:
        return _ask_pathfinder(pathfinder, nvcc, cudart)
    except Exception as err:  # an old version, or its probe failing: go on searching
        return None, f"cuda-pathfinder (failed: {type(err).__name__}: {err})"


def _ask_pathfinder(pathfinder, nvcc: bool, cudart: bool) -> tuple[CudaInstall | None, str]:
    where = (
        f"cuda-pathfinder (pip wheels under {', '.join(_site_dirs())}; conda: "
        f"{os.environ.get('CONDA_PREFIX') or 'CONDA_PREFIX unset'}; the toolkit of the "
        "libcudart the dynamic loader finds)"
    )
    tool = None
    include = None
    found_via = "system-ctk-root"
    if nvcc:
        found = pathfinder.find_nvidia_binary_utility("nvcc")
        if found is None:
            return None, f"{where}: no nvcc"
        tool = Path(found)
        top = tool.parent.parent
        # nvcc's own tree first (a toolkit, nvidia/cu13): its headers match it. The
        # per-component wheels keep cuda_runtime.h apart, in nvidia/cuda_runtime.
        include = _headers_under(top)
        sibling = top.parent / "cuda_runtime" / "include"
        if include is None and top.name == "cuda_nvcc" and (sibling / "cuda_runtime.h").is_file():
            include = sibling
    if include is None:
        located = pathfinder.locate_nvidia_header_directory("cudart")
        if located is None or located.abs_path is None:
            return None, f"{where}: no cuda_runtime.h"
        include, found_via = Path(located.abs_path), located.found_via
    lib = _cudart_near(include.parent) if cudart else None
    if cudart and lib is None:
        return None, f"{where}: no libcudart.so* beside {include}"
    cccl = include / "cccl"
    install = CudaInstall(
        root=include.parent,
        how=_how_pathfinder(tool or include, found_via),
        include_dirs=(include,),
        cccl_dir=cccl if cccl.is_dir() else None,
        nvcc=tool,
        cudart=lib,
    )
    return install, ""


def _from_system(nvcc: bool, cudart: bool, tried: list[str]) -> CudaInstall | None:
    versioned = sorted(glob.glob(_VERSIONED_ROOTS), key=_version_key, reverse=True)
    for candidate in [*_SYSTEM_ROOTS, *versioned]:
        if not os.path.isdir(candidate):
            tried.append(f"{candidate} (absent)")
            continue
        install, lacks = _from_root(Path(candidate), candidate, nvcc, cudart)
        if install is not None:
            return install
        tried.append(f"{candidate} ({lacks})")
    if not versioned:
        tried.append(f"{_VERSIONED_ROOTS} (none)")
    return None


@functools.cache
def _search(
    nvcc: bool,
    cudart: bool,
    env_home: str | None,
    env_path: str | None,
    search_path: str | None,
    cache_root: str | None,
) -> CudaInstall | str:
    """The install, or the error message (cached too: a failed search is not redone)."""
    for var, value in (("CUDA_HOME", env_home), ("CUDA_PATH", env_path)):
        if value:
            install, lacks = _from_root(Path(value), var, nvcc, cudart)
            if install is None:
                # A variable the user set on purpose is not passed over for another CUDA.
                return (
                    f"{var}={value} is not a usable CUDA toolkit ({lacks}); "
                    f"this build needs {_needs_text(nvcc, cudart)}"
                )
            return install
    tried = ["CUDA_HOME (unset)", "CUDA_PATH (unset)"]
    import shutil

    found = shutil.which("nvcc", path=search_path)
    if found is None:
        tried.append("nvcc on PATH (not found)")
    else:
        # The path as found (a symlink farm like /usr/bin/nvcc) and the resolved one; a
        # wrapper script (/usr/local/bin/nvcc) fails both and the search goes on.
        for top in dict.fromkeys([Path(found).parent.parent, Path(found).resolve().parent.parent]):
            install, lacks = _from_root(top, f"nvcc on PATH ({found})", nvcc, cudart)
            if install is not None:
                return install
            tried.append(f"nvcc on PATH ({found}: {top} has {lacks})")
    memo = _memo_file(cache_root, nvcc, cudart, search_path)
    remembered = _recall(memo)
    if remembered is not None:
        return remembered
    install, lacks = _from_pathfinder(nvcc, cudart)
    if install is None:
        tried.append(lacks)
        install = _from_system(nvcc, cudart, tried)
    if install is None:
        return (
            f"CUDA not found: this build needs {_needs_text(nvcc, cudart)}; {_INSTALL_HINT}. "
            f"Tried: {', '.join(tried)}"
        )
    _remember(memo, install)
    return install


def find_cuda(*, nvcc: bool, cudart: bool, cache_root: Path | None = None) -> CudaInstall:
    """The CUDA installation a build uses: the headers always, nvcc and libcudart when
    asked for. ``cache_root`` remembers what cuda-pathfinder found there.

    Raises
    ------
    RuntimeError
        Nothing has what is needed (the message lists every place tried), or
        ``CUDA_HOME`` / ``CUDA_PATH`` names a directory that lacks it.
    """
    env = os.environ
    found = _search(
        nvcc,
        cudart,
        env.get("CUDA_HOME") or None,
        env.get("CUDA_PATH") or None,
        env.get("PATH"),
        str(cache_root) if cache_root is not None else None,
    )
    if isinstance(found, str):
        raise RuntimeError(found)
    return found


def find_cuda_binary(name: str) -> Path:
    """A tool of the CUDA that has nvcc (``fatbinary``, ``ptxas``...), from nvcc's own
    directory: a tool of another toolkit would not match it."""
    install = find_cuda(nvcc=True, cudart=False)
    assert install.nvcc is not None
    tool = install.nvcc.parent / name
    if not tool.is_file():
        raise RuntimeError(f"CUDA tool {name!r} not found: tried {tool}")
    return tool


# --- remembering what steps 3-4 found, so that a cache hit needs no search --------------


def _memo_file(cache_root: str | None, nvcc: bool, cudart: bool, path: str | None) -> Path | None:
    if cache_root is None:
        return None
    # A new wheel changes its site-packages' nvidia/ directory: the key (and the answer)
    # changes with it.
    stamps = []
    for directory in _site_dirs():
        try:
            stamps.append([directory, os.stat(os.path.join(directory, "nvidia")).st_mtime_ns])
        except OSError:
            stamps.append([directory, None])
    inputs = [nvcc, cudart, path, os.environ.get("CONDA_PREFIX"), sys.prefix, stamps]
    digest = hashlib.sha256(json.dumps(inputs).encode()).hexdigest()[:20]
    return Path(cache_root) / "toolchain" / f"cuda-{digest}.json"


def _recall(memo: Path | None) -> CudaInstall | None:
    if memo is None:
        return None
    try:
        record = json.loads(memo.read_text())
        install = CudaInstall(
            root=Path(record["root"]),
            how=str(record["how"]),
            include_dirs=tuple(Path(p) for p in record["include_dirs"]),
            cccl_dir=Path(record["cccl_dir"]) if record["cccl_dir"] else None,
            nvcc=Path(record["nvcc"]) if record["nvcc"] else None,
            cudart=Path(record["cudart"]) if record["cudart"] else None,
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
    present = [install.nvcc, install.cudart, *(d / "cuda_runtime.h" for d in install.include_dirs)]
    if not all(p is None or p.exists() for p in present):
        return None  # uninstalled since: search again
    return install


def _remember(memo: Path | None, install: CudaInstall) -> None:
    if memo is None:
        return
    from ._cache import replace_atomically

    def text(path: Path | None) -> str | None:
        return None if path is None else str(path)

    record = {
        "root": str(install.root),
        "how": install.how,
        "include_dirs": [str(d) for d in install.include_dirs],
        "cccl_dir": text(install.cccl_dir),
        "nvcc": text(install.nvcc),
        "cudart": text(install.cudart),
    }
    try:
        memo.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        replace_atomically(memo, json.dumps(record).encode())
    except OSError:
        pass  # only a shortcut for the next process
