"""Find the one CUDA a process builds with: its headers, nvcc and libcudart, from one place.

Every user of CUDA in this package (JIT builds, ``nvrtc_compile``'s headers, the fatbin
tool) asks :func:`find_cuda`, which chooses ONE installation per process whatever a build
asks for, so that a wrapper's headers and a module's device code never come from two
CUDAs. The candidates, in order:

1. ``CUDA_HOME``, then ``CUDA_PATH``: a variable that is set is the choice; it is never
   passed over, and a build it cannot serve fails saying what it lacks.
2. ``nvcc`` on ``PATH``: the toolkit around it, or, for a wrapper script outside any
   toolkit, the toolkit that nvcc itself reports (``nvcc --dryrun``).
3. cuda-pathfinder: NVIDIA's pip wheels (``nvidia/cu13``, or CUDA 12's ``nvidia/cuda_nvcc``
   and ``nvidia/cuda_runtime`` in site-packages), conda (``$CONDA_PREFIX``), then the
   toolkit of the ``libcudart`` the dynamic loader finds.
4. ``/usr/local/cuda``, ``/opt/cuda``, then ``/usr/local/cuda-*`` (newest first).

A candidate is complete with the headers (``cuda.h``, ``cuda_runtime.h``,
``crt/host_defines.h``), nvcc with its device compiler (``nvvm/bin/cicc``) and libcudart.
The first complete candidate wins; with none, the first whose headers are complete (a
wrapper of embedded images needs nothing else; a build that needs nvcc says what completes
it). A partial tree is passed over, and named with the pip package that completes it: the
CUDA build of torch brings ``nvidia/cu13`` without ``crt/``, which is ``nvidia-cuda-crt``.

Nothing happens at import time, and this module imports nothing of the package at its
top, so that set-up code can load the file by path. The choice is cached per process,
keyed by the environment it reads, and remembered in the cache root, so that a process
that only loads cached modules neither spawns nvcc nor imports cuda-pathfinder.
"""

from __future__ import annotations

import dataclasses
import functools
import glob
import os
import re
import site
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CudaInstall", "find_cuda", "find_cuda_binary", "includes_cuda_header"]

_INSTALL_HINT = (
    "set CUDA_HOME to a CUDA toolkit, or `pip install cuda-toolkit[cudart,crt,nvcc,nvvm]` "
    "(the wheels nvidia-cuda-runtime, nvidia-cuda-crt, nvidia-cuda-nvcc, nvidia-nvvm)"
)
# Where /usr/local/cuda-like installs are looked for last; a test may empty it.
_SYSTEM_ROOTS = ("/usr/local/cuda", "/opt/cuda")
_VERSIONED_ROOTS = "/usr/local/cuda-*"

# What a build needs of a CUDA, what its absence reads as, and the pip wheel (and the
# cuda-toolkit extra) that brings it into a wheel tree.
_HEADERS = ("cuda.h", "cuda_runtime.h", "crt/host_defines.h")
_ABSENT = {
    "cuda.h": "no include/cuda.h",
    "cuda_runtime.h": "no include/cuda_runtime.h",
    "crt/host_defines.h": "no include/crt/host_defines.h",
    "nvcc": "no bin/nvcc",
    "nvvm": "no nvvm/bin/cicc beside nvcc",
    "cudart": "no libcudart.so* in lib64 or lib",
}
_RUNTIME, _CRT = ("nvidia-cuda-runtime", "cudart"), ("nvidia-cuda-crt", "crt")
_NVCC, _NVVM = ("nvidia-cuda-nvcc", "nvcc"), ("nvidia-nvvm", "nvvm")
_WHEELS = {
    "cuda.h": (_RUNTIME,),
    "cuda_runtime.h": (_RUNTIME,),
    "crt/host_defines.h": (_CRT,),
    "nvcc": (_NVCC, _NVVM),  # nvcc needs nvvm too
    "nvvm": (_NVVM,),
    "cudart": (_RUNTIME,),
}


@dataclass(frozen=True)
class CudaInstall:
    """One CUDA installation, and what a build uses of it."""

    root: Path  # the toolkit root, or the wheel / conda directory holding the headers
    how: str  # how it was found: "CUDA_HOME", "nvcc on PATH (...)", "cuda-pathfinder: ..."
    include_dirs: tuple[Path, ...]  # the directory of cuda_runtime.h (and nvcc's own)
    cccl_dir: Path | None = None  # <include>/cccl (CUDA 13 keeps CCCL, <nv/target>, there)
    nvcc: Path | None = None
    cudart: Path | None = None  # the libcudart file to link
    missing: tuple[str, ...] = ()  # keys of _ABSENT: what this installation lacks
    passed_over: tuple[str, ...] = ()  # the partial CUDAs found before it, and why

    def describe(self) -> str:
        """One line for ``verbose``: which CUDA, how it was found, and why this one."""
        parts = [f"CUDA {self.root} (found through {self.how})"]
        if self.nvcc is not None and self.nvcc.parent.parent != self.root:
            parts.append(f"nvcc {self.nvcc}")
        if self.cudart is not None and self.cudart.parent.parent != self.root:
            parts.append(f"cudart {self.cudart}")
        if self.passed_over:
            parts.append(f"passed over: {'; '.join(self.passed_over)}")
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


def _site_dirs() -> list[str]:
    dirs = list(site.getsitepackages())
    if site.ENABLE_USER_SITE and site.getusersitepackages():
        dirs.append(site.getusersitepackages())
    return dirs


def _is_wheel_tree(root: Path) -> bool:
    text = os.path.join(str(root), "")
    return "site-packages" in root.parts or any(
        text.startswith(os.path.join(d, "")) for d in _site_dirs()
    )


def lacking(install: CudaInstall, keys) -> str:
    """``keys`` (of ``_ABSENT``) as words, with the pip wheels that complete a wheel tree."""
    text = ", ".join(_ABSENT[key] for key in keys)
    if _is_wheel_tree(install.root):
        wheels = dict(pair for key in keys for pair in _WHEELS[key])
        text += (
            f" (pip install {' '.join(wheels)} completes it; or "
            f"cuda-toolkit[{','.join(wheels.values())}])"
        )
    return text


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


def _include_under(root: Path) -> Path | None:
    for include in [root / "include", *map(Path, sorted(glob.glob(f"{root}/targets/*/include")))]:
        if (include / "cuda_runtime.h").is_file():
            return include
    return root / "include" if (root / "include").is_dir() else None


def _examine(root: Path, how: str, tool: Path | None = None, more: tuple = ()) -> CudaInstall:
    """The installation at ``root`` (nvcc ``tool`` and ``more`` include directories where
    a wheel layout keeps them apart), with what it lacks."""
    include = _include_under(root)
    tool = tool if tool is not None else root / "bin" / "nvcc"
    includes = tuple(dict.fromkeys(d for d in (include, *more) if d is not None and d.is_dir()))
    missing = [h for h in _HEADERS if not any((d / h).is_file() for d in includes)]
    has_nvcc = tool.is_file()
    if not has_nvcc:
        missing.append("nvcc")
    elif not (tool.parent.parent / "nvvm" / "bin" / "cicc").is_file():
        missing.append("nvvm")
    lib = next((x for x in (_cudart_near(d.parent) for d in includes) if x), None)
    lib = lib or _cudart_near(root)
    if lib is None:
        missing.append("cudart")
    cccl = include / "cccl" if include is not None else None
    return CudaInstall(
        root=root,
        how=how,
        include_dirs=includes,
        cccl_dir=cccl if cccl is not None and cccl.is_dir() else None,
        nvcc=tool if has_nvcc else None,
        cudart=lib,
        missing=tuple(missing),
    )


def _headers_complete(install: CudaInstall) -> bool:
    return not any(key in _HEADERS for key in install.missing)


# --- the candidates, in order ------------------------------------------------------------


def _nvcc_reports(nvcc: str) -> Path | None:
    """The toolkit that ``nvcc`` runs from, as nvcc itself says (``_HERE_``, its bin
    directory, in a dry run): a wrapper script outside the toolkit resolves to it."""
    import subprocess

    try:
        proc = subprocess.run(
            [nvcc, "--dryrun", "-c", "-x", "cu", os.devnull, "-o", os.devnull],
            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    here = re.search(r"^#\$ _HERE_=(.+)$", proc.stdout + proc.stderr, re.MULTILINE)
    return Path(here.group(1).strip()).parent if here else None


def _on_path(search_path: str | None, tried: list[str]):
    import shutil

    found = shutil.which("nvcc", path=search_path)
    if found is None:
        tried.append("nvcc on PATH (not found)")
        return
    # The path as found (a symbolic-link farm like /usr/bin/nvcc), the resolved one, then
    # what nvcc reports (a wrapper script such as /usr/local/bin/nvcc).
    tops = [Path(found).parent.parent, Path(found).resolve().parent.parent]
    for top in dict.fromkeys(tops):
        include = _include_under(top)
        if include is not None and (include / "cuda_runtime.h").is_file():
            yield _examine(top, f"nvcc on PATH ({found})")
            return
    reported = _nvcc_reports(found)
    if reported is None:
        tried.append(f"nvcc on PATH ({found}: no toolkit around it, and it reports none)")
        return
    yield _examine(reported, f"nvcc on PATH ({found}, which runs {reported / 'bin' / 'nvcc'})")


def _how_pathfinder(path: Path, found_via: str) -> str:
    if _is_wheel_tree(path):
        return "cuda-pathfinder: pip wheel"
    conda = os.environ.get("CONDA_PREFIX")
    if conda and str(path).startswith(os.path.join(conda, "")):
        return "cuda-pathfinder: conda"
    described = {
        "site-packages": "pip wheel",
        "system-ctk-root": "the toolkit of the libcudart the dynamic loader finds",
    }
    return f"cuda-pathfinder: {described.get(found_via, found_via)}"


def _from_pathfinder(tried: list[str]):
    try:
        import cuda.pathfinder as pathfinder
    except ImportError:
        tried.append("cuda-pathfinder (not installed: pip install cuda-pathfinder)")
        return
    try:
        found = _ask_pathfinder(pathfinder)
    except Exception as err:  # an old version, or its probe failing: go on searching
        tried.append(f"cuda-pathfinder (failed: {type(err).__name__}: {err})")
        return
    if not found:
        tried.append(
            f"cuda-pathfinder (pip wheels under {', '.join(_site_dirs())}; conda: "
            f"{os.environ.get('CONDA_PREFIX') or 'CONDA_PREFIX unset'}; the toolkit of the "
            "libcudart the dynamic loader finds): no nvcc, no cuda_runtime.h"
        )
    yield from found


def _ask_pathfinder(pathfinder) -> list[CudaInstall]:
    found = []
    # The headers first: they find the wheels (a partial tree among them is then named).
    located = pathfinder.locate_nvidia_header_directory("cudart")
    if located is not None and located.abs_path is not None:
        include = Path(located.abs_path)
        found.append(_examine(include.parent, _how_pathfinder(include, located.found_via)))
    tool = pathfinder.find_nvidia_binary_utility("nvcc")
    if tool is not None:
        tool = Path(tool)
        top = tool.parent.parent
        how = _how_pathfinder(tool, "the nvcc it found")
        runtime = top.parent / "cuda_runtime"
        if top.name == "cuda_nvcc" and (runtime / "include" / "cuda_runtime.h").is_file():
            # CUDA 12's wheels keep nvcc (with crt/) and cuda_runtime.h apart.
            with_nvcc = _examine(runtime, how, tool, (top / "include",))
        else:
            with_nvcc = _examine(top, how, tool)
        # The same tree, found through its headers and its nvcc, is one candidate.
        found = [c for c in found if c.root.resolve() != with_nvcc.root.resolve()]
        found.append(with_nvcc)
    return found


def _from_system(tried: list[str]):
    versioned = sorted(glob.glob(_VERSIONED_ROOTS), key=_version_key, reverse=True)
    for candidate in [*_SYSTEM_ROOTS, *versioned]:
        if os.path.isdir(candidate):
            yield _examine(Path(candidate), candidate)
        else:
            tried.append(f"{candidate} (absent)")
    if not versioned:
        tried.append(f"{_VERSIONED_ROOTS} (none)")


@dataclass(frozen=True)
class _NotFound:
    """No CUDA has complete headers: every place tried, and the partial CUDAs found."""

    tried: tuple[str, ...]
    partial: tuple[CudaInstall, ...]


def _choose(search_path: str | None) -> CudaInstall | _NotFound:
    """The first complete candidate, else the first with complete headers."""
    tried = ["CUDA_HOME (unset)", "CUDA_PATH (unset)"]
    passed: list[CudaInstall] = []
    seen: set[Path] = set()
    sources = (_on_path(search_path, tried), _from_pathfinder(tried), _from_system(tried))
    for candidate in (c for source in sources for c in source):
        if candidate.root.resolve() in seen:
            continue
        seen.add(candidate.root.resolve())
        if not candidate.missing:
            break
        passed.append(candidate)
        tried.append(f"{candidate.root} ({candidate.how}: {lacking(candidate, candidate.missing)})")
    else:
        candidate = next((c for c in passed if _headers_complete(c)), None)
        if candidate is None:
            return _NotFound(tuple(tried), tuple(passed))
    notes = tuple(f"{c.root} ({lacking(c, c.missing)})" for c in passed if c is not candidate)
    return dataclasses.replace(candidate, passed_over=notes)


@functools.cache
def _search(
    env_home: str | None, env_path: str | None, search_path: str | None, cache_root: str | None
) -> CudaInstall | _NotFound:
    """The process's CUDA, or why there is none (cached too: a failed search is not redone)."""
    for var, value in (("CUDA_HOME", env_home), ("CUDA_PATH", env_path)):
        if value:  # the user's choice, never passed over (find_cuda says what it lacks)
            return _examine(Path(value), var)
    if cache_root is None:
        return _choose(search_path)
    from . import _cuda_toolkit_memo as _memo

    memo = _memo.memo_file(cache_root, search_path, _watched(search_path))
    remembered = _from_record(_memo.recall(memo))
    if remembered is not None:
        return remembered
    found = _choose(search_path)
    if isinstance(found, CudaInstall):
        _memo.remember(memo, _to_record(found))
    return found


def _watched(search_path: str | None) -> list[str | None]:
    """Where a CUDA installed since a search would show: nvcc on the search path, the system
    roots, pip's nvidia/, nvidia/cu13 and their folders (crt/ goes to include/, nvcc to bin/)."""
    import shutil

    watched = [shutil.which("nvcc", path=search_path), *_SYSTEM_ROOTS]
    for site_dir in _site_dirs():
        watched.append(os.path.join(site_dir, "nvidia"))
        watched += sorted(glob.glob(os.path.join(site_dir, "nvidia", "*", "")))
        watched += sorted(glob.glob(os.path.join(site_dir, "nvidia", "*", "*", "")))
    return watched


def _optional_path(text: str | None) -> Path | None:
    return None if text is None else Path(text)


def _from_record(record: dict | None) -> CudaInstall | None:
    """The remembered install, or None when the record is unreadable or the install has been
    removed since (search again)."""
    if record is None:
        return None
    try:
        install = CudaInstall(
            root=Path(record["root"]),
            how=str(record["how"]),
            include_dirs=tuple(Path(p) for p in record["include_dirs"]),
            cccl_dir=_optional_path(record["cccl_dir"]),
            nvcc=_optional_path(record["nvcc"]),
            cudart=_optional_path(record["cudart"]),
            missing=tuple(str(key) for key in record["missing"]),
            passed_over=tuple(str(note) for note in record["passed_over"]),
        )
    except (ValueError, KeyError, TypeError):
        return None
    headers = any((d / "cuda_runtime.h").exists() for d in install.include_dirs)
    if not headers or not all(p is None or p.exists() for p in (install.nvcc, install.cudart)):
        return None
    return install


def _to_record(install: CudaInstall) -> dict:
    return {
        "root": str(install.root),
        "how": install.how,
        "include_dirs": [str(d) for d in install.include_dirs],
        "cccl_dir": str(install.cccl_dir) if install.cccl_dir else None,
        "nvcc": str(install.nvcc) if install.nvcc else None,
        "cudart": str(install.cudart) if install.cudart else None,
        "missing": list(install.missing),
        "passed_over": list(install.passed_over),
    }


def _wanted(nvcc: bool, cudart: bool) -> tuple[str, ...]:
    return _HEADERS + (("nvcc", "nvvm") if nvcc else ()) + (("cudart",) if cudart else ())


def find_cuda(*, nvcc: bool, cudart: bool, cache_root: Path | None = None) -> CudaInstall:
    """The process's CUDA (the same for every build), with nvcc and libcudart set only when
    asked for: the headers always. ``cache_root`` remembers the choice there.

    Raises
    ------
    RuntimeError
        No CUDA has complete headers (the message lists every place tried and what each
        lacks, with the pip wheels that complete a wheel tree), the process's CUDA lacks
        what this build asks for, or ``CUDA_HOME`` / ``CUDA_PATH`` names a directory that
        lacks it.
    """
    env = os.environ
    home, path = env.get("CUDA_HOME") or None, env.get("CUDA_PATH") or None
    found = _search(home, path, env.get("PATH"), str(cache_root) if cache_root else None)
    needs = _needs_text(nvcc, cudart)
    wanted = _wanted(nvcc, cudart)
    if isinstance(found, _NotFound):
        advice = f"; {_INSTALL_HINT}"
        if found.partial:  # the wheels that complete it are the shortest way
            first = found.partial[0]
            lacks = [key for key in first.missing if key in wanted]
            advice = (
                f": {first.root} ({first.how}) has {lacking(first, lacks)}; or set CUDA_HOME "
                "to a CUDA toolkit"
            )
        raise RuntimeError(
            f"CUDA not found: this build needs {needs}, and no CUDA has all the headers"
            f"{advice}. Tried: {', '.join(found.tried)}"
        )
    lacks = [key for key in found.missing if key in wanted]
    if lacks:
        if found.how in ("CUDA_HOME", "CUDA_PATH"):
            raise RuntimeError(
                f"{found.how}={found.root} is not a usable CUDA toolkit "
                f"({lacking(found, lacks)}); this build needs {needs}"
            )
        raise RuntimeError(
            f"this build needs {needs}, and the CUDA of this process, {found.describe()}, "
            f"has {lacking(found, lacks)}; or set CUDA_HOME to a CUDA toolkit that has it"
        )
    return dataclasses.replace(
        found, nvcc=found.nvcc if nvcc else None, cudart=found.cudart if cudart else None
    )


def find_cuda_binary(name: str) -> Path:
    """A tool of the CUDA that has nvcc (``fatbinary``, ``ptxas``...), from nvcc's own
    directory: a tool of another toolkit would not match it."""
    install = find_cuda(nvcc=True, cudart=False)
    assert install.nvcc is not None
    tool = install.nvcc.parent / name
    if not tool.is_file():
        raise RuntimeError(f"CUDA tool {name!r} not found: tried {tool}")
    return tool
