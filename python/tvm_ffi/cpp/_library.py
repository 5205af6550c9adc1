"""Turn a checked :class:`Spec` into a built library: plan, key, cache lookup, locked build.

A cache hit costs a hash of the inputs, a few stats and nothing else: the tool paths,
their identities and the header fingerprint are remembered per process (and the
identities on disk), so no process is spawned.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
from pathlib import Path

from . import _arch, _build, _cache, _ninja, _toolchain
from ._spec import Spec

__all__ = ["build_library", "load_library", "verbose_requested"]

# Bump when the build recipe changes in a way that must invalidate cached libraries.
_RECIPE = "1"

_VERBOSE_ENV = "TVM_FFI_BUILD_VERBOSE"


def verbose_requested(verbose: bool) -> bool:
    return verbose or os.environ.get(_VERBOSE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


@functools.cache
def _include_dir() -> Path:
    from tvm_ffi import config

    return Path(config.get_include_dir())


@functools.cache
def _header_fingerprint(include_dir: Path) -> str:
    # The package version covers released headers; this also catches edits in a
    # development checkout. Once per process, so it stays off the warm path.
    hasher = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(include_dir / "tvm" / "ffi"):
        dirnames.sort()
        for filename in sorted(filenames):
            st = os.stat(os.path.join(dirpath, filename))
            hasher.update(f"{dirpath}/{filename}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return hasher.hexdigest()


def _plan(spec: Spec, root: Path | None = None) -> tuple[_ninja.BuildPlan, list[tuple[str, str]]]:
    """The ninja plan, and the toolchain (label, path) pairs whose identity keys the build.

    ``root`` (the cache root) lets the detected GPU architectures be remembered there."""
    include_dir = _include_dir()
    cxx = str(_toolchain.find_cxx())
    tools = [("cxx", cxx)]
    includes = [str(include_dir)]
    ldflags = list(spec.ldflags)
    nvcc = None
    gencode: list[str] = []
    if spec.uses_cuda:
        home = _toolchain.find_cuda_home()
        includes.append(str(home / "include"))
        lib_dir = _toolchain.cuda_lib_dir(home)
        ldflags += [f"-L{lib_dir}", "-lcudart", f"-Wl,-rpath,{lib_dir}"]
    if spec.has_cuda_sources:
        nvcc = str(_toolchain.find_cuda_tool("nvcc"))
        tools.append(("nvcc", nvcc))
        gencode = _arch.gencode_flags(_arch.target_archs(root))
    includes += spec.include_paths
    include_flags = [f"-I{path}" for path in includes]
    compiles = []
    if spec.inline_cpp is not None:
        compiles.append(_ninja.Compile("main.cpp", "obj/main.o", cuda=False))
    if spec.inline_cuda is not None:
        compiles.append(_ninja.Compile("cuda.cu", "obj/cuda.o", cuda=True))
    objects = []
    for index, (path, kind) in enumerate(zip(spec.files, spec.file_kinds)):
        if kind == "obj":
            objects.append(str(path))
            continue
        obj = f"obj/{index}_{path.stem}.o"
        compiles.append(_ninja.Compile(str(path), obj, cuda=kind == "cuda", c=kind == "c"))
    base_cflags = ["-O2", "-fPIC", "-fvisibility=hidden", *include_flags, *spec.cflags]
    plan = _ninja.BuildPlan(
        output=f"{spec.stem}.o" if spec.object_output else f"{spec.stem}.so",
        cxx=cxx,
        python=sys.executable,
        compiles=compiles,
        cflags=["-std=c++17", *base_cflags],
        c_cflags=base_cflags,
        objects=objects,
        ldflags=ldflags,
        nvcc=nvcc,
        cuda_cflags=[
            "-std=c++17",
            "-O2",
            "-Xcompiler",
            "-fPIC",
            "-Xcompiler",
            "-fvisibility=hidden",
            *gencode,
            *include_flags,
            *spec.cuda_cflags,
        ],
        embeds=[(name, f"embed/{name}.bin") for name in sorted(spec.embeds)],
    )
    return plan, tools


def _key(spec: Spec, ninja_text: str, tools: list[tuple[str, str]], root: Path) -> str:
    import tvm_ffi

    hasher = _cache.KeyHasher()
    hasher.add("recipe", _RECIPE)
    hasher.add("version", tvm_ffi.__version__)
    hasher.add("headers", _header_fingerprint(_include_dir()))
    # build.ninja holds every flag, include path, tool path and target arch.
    hasher.add("ninja", ninja_text)
    for label, tool in tools:
        hasher.add(label, _toolchain.tool_identity(Path(tool), root))
    if spec.inline_cpp is not None:
        hasher.add("main.cpp", spec.inline_cpp)
    if spec.inline_cuda is not None:
        hasher.add("cuda.cu", spec.inline_cuda)
    for path in spec.files:
        hasher.add("file", path.read_bytes())
    for name in sorted(spec.embeds):
        image = spec.embeds[name]
        if isinstance(image, dict):
            for arch in sorted(image):
                hasher.add(f"embed:{name}:{arch}", hashlib.sha256(image[arch]).digest())
        else:
            hasher.add(f"embed:{name}", hashlib.sha256(image).digest())
    return hasher.hexdigest()


def _image_bytes(image: bytes | dict[str, bytes]) -> bytes:
    if isinstance(image, dict):
        from tvm_ffi.utils.embed_cubin import make_fatbin

        return make_fatbin(image)
    return image


def _write_inputs(spec: Spec, plan: _ninja.BuildPlan, build_dir: Path, ninja_text: str) -> None:
    # A step killed earlier may have left "<output>.tmp"; it is never read, but tidy up.
    for output in plan.outputs():
        tmp = build_dir / f"{output}.tmp"
        if tmp.exists():
            tmp.unlink()
    if spec.inline_cpp is not None:
        _cache.write_if_changed(build_dir / "main.cpp", spec.inline_cpp.encode())
    if spec.inline_cuda is not None:
        _cache.write_if_changed(build_dir / "cuda.cu", spec.inline_cuda.encode())
    for name, image_file in plan.embeds:
        _cache.write_if_changed(build_dir / image_file, _image_bytes(spec.embeds[name]))
    _cache.write_if_changed(build_dir / "build.ninja", ninja_text.encode())


def build_library(spec: Spec, build_directory: str | os.PathLike | None, verbose: bool) -> Path:
    """Build (or find in the cache) the library of ``spec``; return its path."""
    verbose = verbose_requested(verbose)
    root = _cache.cache_root()
    plan, tools = _plan(spec, root)
    ninja_text = _ninja.render(plan)
    key = _key(spec, ninja_text, tools, root)
    if build_directory is None:
        build_dir = root / f"{spec.stem}_{key}"
        library = build_dir / plan.output
        if library.exists():  # published last and atomically: present means complete
            if verbose:
                sys.stderr.write(f"tvm_ffi.cpp: using cached {library}\n")
            return library
        build_dir.mkdir(mode=0o700, exist_ok=True)
    else:
        build_dir = Path(build_directory).resolve()
        build_dir.mkdir(parents=True, exist_ok=True)
        library = build_dir / plan.output
    with _cache.build_lock(build_dir):
        if build_directory is None:
            if library.exists():  # another process built it while we waited
                return library
            _cache.clean_entry(build_dir)  # leftovers of a killed build
        _write_inputs(spec, plan, build_dir, ninja_text)
        _build.run_ninja(_toolchain.find_ninja(), build_dir, name=spec.name, verbose=verbose)
    return library


def load_library(path: Path):
    """``tvm_ffi.load_module(path)``; it reloads a library rebuilt at the same path."""
    import tvm_ffi

    return tvm_ffi.load_module(path)
