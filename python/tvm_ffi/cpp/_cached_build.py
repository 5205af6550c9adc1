"""The build cache's full path: a checked :class:`Spec` planned, keyed, looked up and, when
missing, built under its entry's lock (see docs/dev/jit_cache.md).

Reached when the hit index (:mod:`._hit_index`, the fast front of the same cache) has no
record. A full lookup costs a hash of the inputs, a few stats and nothing else once a
process knows its tools: their paths, identities and the header fingerprint are
remembered per process (and the identities on disk), so no process is spawned.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

import tvm_ffi

from .. import _cuda_toolkit, _log, config
from .._private_dir import open_private_dir
from ..utils import _embed_layout
from . import (
    _arch,
    _build,
    _cache,
    _dir_links,
    _embed_asm,
    _env,
    _hit_index,
    _host_cuda,
    _keys,
    _launcher,
    _ninja,
    _prebuilt,
    _remote,
    _toolchain,
)
from ._spec import PRELUDE_FLAGS, Spec

__all__ = ["build_and_load", "build_library", "load_library", "verbose_requested"]

# Ninja's -j for builds of this thread, where builds run side by side and share the job
# count (load_inline_many, _alongside); None: each build takes the whole (see _jobs).
_ninja_jobs: contextvars.ContextVar[int | None] = contextvars.ContextVar("jobs", default=None)
# Who asked for a build that runs in a helper thread (see _alongside), for the log.
_caller: contextvars.ContextVar[str | None] = contextvars.ContextVar("caller", default=None)
# Set by ``python -m tvm_ffi.cache pull``: a full lookup that records the hit index, where a
# missing entry is an error (LookupError) instead of a build.
lookup_only: contextvars.ContextVar[bool] = contextvars.ContextVar("lookup_only", default=False)


verbose_requested = _hit_index.verbose_requested
# The build directory's link to the folder of the package's libtvm_ffi.so (see _plan).
_RUNTIME_LINK = "lib/tvm_ffi"


@dataclasses.dataclass(frozen=True)
class CacheEntry:
    """One entry of the build cache: what builds it, and where its library is published."""

    spec: Spec
    plan: _ninja.BuildPlan
    ninja_text: str  # build.ninja: every flag, tool path and target arch of the build
    name: str  # the entry's directory under the cache root: <stem><kind>_<key>
    library: str  # the published file in it: <stem>.so, or <stem>.o for output="x.o"
    linker: _toolchain.Linker | None  # the faster linker of its link, if any

    def path(self, root: Path) -> Path:
        return root / self.name / self.library


_CUDA_HEADERS = _keys.CUDA_HEADERS  # the CUDA headers among a build's tools


def _host_only(spec: Spec) -> bool:
    """Every CUDA source of ``spec`` goes to the host compiler (no device code in it)."""
    return (
        spec.inline_cuda is not None
        and "cuda" not in spec.file_kinds
        and _host_cuda.host_flags(spec.inline_cuda, spec.cuda_cflags) is not None
    )


def _cuda_install(spec: Spec, root: Path | None) -> _cuda_toolkit.CudaInstall | None:
    """The CUDA a build uses, asked for only what its sources need: nvcc and cudart for
    CUDA sources (cudart alone for the link of objects made from them); the headers alone
    for C++ that launches embedded images (the launcher opens the driver itself) or
    includes a CUDA header, and for CUDA sources without device code where there is no
    nvcc; nothing, not even a search, for plain C++."""
    if spec.has_cuda_sources:
        try:
            return _cuda_toolkit.find_cuda(nvcc=True, cudart=True, cache_root=root)
        except RuntimeError:
            if not _host_only(spec):
                raise
        # The host compiler takes it all: no nvcc to fall back on (the step says so if the
        # guess was wrong), and no cudart unless the code calls it (the link names it).
        return _cuda_toolkit.find_cuda(nvcc=False, cudart=False, cache_root=root)
    if spec.link_cudart:
        return _cuda_toolkit.find_cuda(nvcc=False, cudart=True, cache_root=root)
    if spec.embeds or spec.cuda_runtime:
        return _headers_and_cudart(root)
    if _cuda_toolkit.includes_cuda_header(spec.inline_cpp, spec.files, spec.file_kinds):
        try:
            return _headers_and_cudart(root)
        except RuntimeError:
            return None  # a CUDA header it truly needs fails the compile, naming the file
    return None


def _headers_and_cudart(root: Path | None) -> _cuda_toolkit.CudaInstall:
    """The CUDA headers for C++ that uses CUDA, with cudart where there is one: such code
    may call the runtime (a host shim's cudaGetDevice), as apache-tvm-ffi's builds allow.
    It is linked as needed, so a wrapper that does not call it does not load it."""
    try:
        return _cuda_toolkit.find_cuda(nvcc=False, cudart=True, cache_root=root)
    except RuntimeError:
        return _cuda_toolkit.find_cuda(nvcc=False, cudart=False, cache_root=root)


def _links_cudart(spec: Spec, root: Path | None) -> bool:
    """Whether the library of ``spec``'s objects links cudart (the search is cached)."""
    if not spec.has_cuda_sources:
        return False
    install = _cuda_install(spec, root)
    return install is not None and install.cudart is not None


def _plan(
    spec: Spec, root: Path, *, default_linker: bool = False
) -> tuple[_ninja.BuildPlan, list[tuple[str, str]], _toolchain.Linker | None]:
    """The ninja plan, the toolchain (label, path) pairs whose identity keys the build,
    and the faster linker the link uses (None: the compiler's default, or no link).

    ``root`` (the cache root) lets the detected GPU architectures be remembered there.
    ``default_linker``: the compiler's default linker whatever the automatic choice (a
    retry after that choice failed, see _linking)."""
    include_dir = _hit_index.include_dir()
    cxx = str(_toolchain.find_cxx())
    tools = [("cxx", cxx)]
    launcher = _toolchain.find_launcher()
    if launcher:  # a different ccache version may cache differently: it keys the build
        tools.append(("launcher", launcher[0]))
    cuda_includes = list(spec.cuda_include_dirs)
    ldflags = list(spec.ldflags)
    nvcc = None
    gencode: list[str] = []
    targets = ""
    install = _cuda_install(spec, root)
    if install is not None:
        cuda_includes = [str(path) for path in install.include_dirs]
        if install.cudart is not None:
            # As needed: a wrapper that only launches images through the driver then does
            # not load libcudart (milliseconds at every load); code that calls it keeps it.
            ldflags += ["-Wl,--as-needed", *install.link_flags(), "-Wl,--no-as-needed"]
    if install is not None and install.nvcc is None and install.include_dirs:
        # No nvcc identity stands for the toolkit here: its headers' stamp does, so that a
        # CUDA_HOME link switched to another toolkit (same path text) changes the key.
        tools.append((_CUDA_HEADERS, str(install.include_dirs[0] / "cuda_runtime.h")))
    if install is not None and install.nvcc is not None:
        nvcc = str(install.nvcc)
        tools.append(("nvcc", nvcc))
        # Part of the key through build.ninja, which holds the -gencode flags.
        gencode, targets = _arch.choose(spec.archs, spec.cuda_cflags, root)
    # Every directory the compiles read, through links in the build directory: the
    # commands are then the same for every install, cache and checkout (compiler caches hit).
    links = _dir_links.include_links(str(include_dir), cuda_includes, spec.include_paths)
    include_flags = [f"-I{link.name}" for link in links]
    # -z defs: a symbol nobody defines fails the link (a BuildError naming it) instead of
    # every later load. First, so that extra_ldflags=["-Wl,-z,undefs"] can take it back.
    # -ldl and -pthread: before glibc 2.34, dlopen (the CUDA driver shim) and pthread_*
    # (std::call_once) live in libraries the link must then name.
    # --exclude-libs,ALL: whatever static archive the link pulls in stays private to the
    # module. A compiler without a shared libstdc++ links libstdc++.a; exported, its unique
    # template members bind to the process's libstdc++.so.6 (torch loads it) and the module's
    # iostreams crash on the other runtime's locale tables (docs/dev/cxx_runtime.md).
    # -ltvm_ffi: the module's TVMFFI* calls bind to the runtime, named by its soname
    # (DT_NEEDED libtvm_ffi.so) and no rpath: the process that loads a module already holds
    # a libtvm_ffi.so (this package's, loaded by tvm_ffi._core, or apache-tvm-ffi's), and the
    # dynamic linker takes the loaded one by that name; a path would also differ per install.
    # Through a link in the build directory, as the headers are (see _dir_links).
    # --no-as-needed: a module written in C on the C ABI alone calls no TVMFFI* function, and
    # a compiler that links --as-needed by default (Debian's, Ubuntu's) would then drop
    # DT_NEEDED libtvm_ffi.so; tvm_ffi.load_module takes such a library for one of the
    # previous ABI (_old_abi.py) and refuses it.
    links.append(_dir_links.DirLink(_RUNTIME_LINK, os.path.dirname(config.get_libtvm_ffi_path())))
    ldflags = ["-Wl,-z,defs", "-Wl,--exclude-libs,ALL", *ldflags, f"-L{_RUNTIME_LINK}",
               "-Wl,--no-as-needed", "-ltvm_ffi", "-ldl", "-pthread"]  # fmt: skip
    # The faster linker only where no linker option of the user's is passed on: those are
    # written for the compiler's default (gold has no -z undefs, for one). An object
    # output is merged by the compiler's own `-r` (or not at all): no linker to choose.
    mine = not any(flag.startswith(("-Wl,", "-Xlinker", "-fuse-ld")) for flag in spec.ldflags)
    linker = None
    if mine and not spec.object_output and not default_linker:
        linker = _toolchain.find_linker(cxx, root)
    if linker is not None:
        ldflags.insert(0, f"-fuse-ld={linker.name}")
        tools.append(("linker", linker.path))
    compiles = []
    if spec.inline_cpp is not None:
        compiles.append(_ninja.Compile("main.cpp", "obj/main.o", cuda=False))
    host_cflags = None
    if spec.inline_cuda is not None:
        host_cflags = _host_cuda.host_flags(spec.inline_cuda, spec.cuda_cflags)
        host = host_cflags is not None
        compiles.append(_ninja.Compile("cuda.cu", "obj/cuda.o", cuda=True, host=host))
    objects = [str(path) for path, kind in zip(spec.files, spec.file_kinds) if kind == "obj"]
    sources = [(i, path, kind) for i, (path, kind) in enumerate(zip(spec.files, spec.file_kinds))
               if kind != "obj"]  # fmt: skip
    folders, names = _dir_links.source_links([path for _, path, _ in sources])
    links += folders
    for (index, path, kind), name in zip(sources, names):
        obj = f"obj/{index}_{path.stem}.o"
        compiles.append(_ninja.Compile(name, obj, cuda=kind == "cuda", c=kind == "c"))
    # The precompiled prelude, where the package has one for this compiler (a compiler
    # cache would refuse or only store it) and the flags are known to leave it as it was
    # compiled: GCC reads prelude.h itself if the .gch does not fit the options it checks,
    # so the result is the same either way.
    pch = None if launcher else _prebuilt.pch_header(cxx)
    cflags = list(spec.cflags)
    if pch is not None:
        cflags = _with_pch(cflags, pch)
    std, *base = _prebuilt.BASE_FLAGS
    base_cflags = [*base, *include_flags, *cflags]
    plan = _ninja.BuildPlan(
        output=f"obj/{spec.stem}.o" if spec.object_output else f"obj/{spec.stem}.so",
        cxx=cxx,
        python=_env.python_executable(),
        compiles=compiles,
        cflags=[std, *base_cflags],
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
        launcher=launcher,
        cuda_launcher=launcher if _toolchain.launcher_handles_nvcc(launcher) else [],
        targets=targets,
        links=links,
    )
    if plan.embeds and not spec.object_output:
        plan.embed_asm = _embed_asm.ASM_FILE
    if spec.object_output and not plan.embeds and not objects and len(compiles) == 1:
        # One object is the relocatable output as it is: no merge step (a compiler start).
        plan.compiles = [dataclasses.replace(compiles[0], obj=plan.output)]
    if host_cflags is not None:
        # What nvcc gives host code: cuda_runtime.h first (in HOST_HEADER), the same
        # include directories; no target arch, which only device code needs.
        first: list[str] = []  # the precompiled prelude goes before cuda_host.h
        if pch is not None:
            replaced = _with_pch(host_cflags, pch)
            if replaced is not host_cflags:
                first, host_cflags = replaced[:2], replaced[2:]
        plan.cuda_host_cflags = [
            std, *base, *include_flags, *first,
            "-include", _host_cuda.HOST_HEADER_NAME, *host_cflags,
        ]  # fmt: skip
    return plan, tools, linker


def _with_pch(flags: list[str], pch: Path) -> list[str]:
    """``flags`` with the load_inline prelude's ``-include`` pairs replaced by ``pch``,
    first (a precompiled header must be the first thing included); ``flags`` as they are
    when they do not hold the whole prelude, or hold a flag not known to leave the
    prelude as it was precompiled (see _prebuilt.pch_flags_fit)."""
    prelude = list(PRELUDE_FLAGS)
    for index in range(len(flags) - len(prelude) + 1):
        if flags[index : index + len(prelude)] == prelude:
            rest = flags[:index] + flags[index + len(prelude) :]
            return ["-include", str(pch), *rest] if _prebuilt.pch_flags_fit(rest) else flags
    return flags


def _image_bytes(image: bytes | dict[str, bytes]) -> bytes:
    if isinstance(image, dict):
        from tvm_ffi.utils.embed_cubin import make_fatbin

        return make_fatbin(image)
    return image


def _write_inputs(
    spec: Spec, plan: _ninja.BuildPlan, dir_fd: int, build_dir: Path, ninja_text: str
) -> None:
    def write(relpath: str, data: bytes) -> None:
        _cache.write_if_changed(dir_fd, build_dir, relpath, data)

    if spec.inline_cpp is not None:
        write("main.cpp", spec.inline_cpp.encode())
    if spec.inline_cuda is not None:
        write("cuda.cu", spec.inline_cuda.encode())
    for name, text in plan.sources:
        write(name, text.encode())
    if any(unit.host for unit in plan.compiles):
        write(_host_cuda.HOST_HEADER_NAME, _host_cuda.HOST_HEADER.encode())
    images = {name: _image_bytes(spec.embeds[name]) for name, _ in plan.embeds}
    if plan.embed_asm is not None:
        _embed_asm.check_images(images, build_dir)
        write(plan.embed_asm, _embed_layout.assembler_source(plan.embeds).encode())
    for name, image_file in plan.embeds:
        write(image_file, images[name])
    _dir_links.make_links(dir_fd, build_dir, plan.links)
    write("build.ninja", ninja_text.encode())


def _remove_tmp_outputs(plan: _ninja.BuildPlan, dir_fd: int) -> None:
    # A step killed earlier may have left "<output>.tmp"; it is never read, but tidy up.
    for output in plan.outputs():
        try:
            with _cache.parent_of(dir_fd, f"{output}.tmp", create=False) as (fd, name):
                os.unlink(name, dir_fd=fd)
        except (FileNotFoundError, NotADirectoryError):
            pass


def _run(
    spec, plan, ninja_text, dir_fd: int, build_dir: Path, verbose: bool, why: str, cold: bool = True
) -> None:
    import time

    from . import _jobs, _progress

    jobs = _ninja_jobs.get()
    if jobs is None:  # a bad MAX_JOBS fails before anything is written
        jobs = _jobs.job_count(device=plan.device_code)
    _write_inputs(spec, plan, dir_fd, build_dir, ninja_text)
    log = _log.get_logger("tvm_ffi.cpp")  # a build is slow anyway: importing logging is not
    if plan.targets:
        log.info("%s %r: CUDA architectures %s", spec.api, spec.name, plan.targets)
    log.info(
        "%s %r: building %s in %s (%s), called from %s",
        spec.api, spec.name, _what(spec), build_dir, why, _caller.get() or _log.caller(),
    )  # fmt: skip
    start = time.perf_counter()
    try:
        _build.run_ninja(
            _toolchain.find_ninja(),
            build_dir,
            dir_fd=dir_fd,
            name=spec.name,
            verbose=verbose,
            embeds=sorted(spec.embeds),
            links=plan.links,
            jobs=jobs,
            progress=_progress.NinjaProgress(
                spec.name, plan, build_dir, verbose=verbose, cold=cold
            ),
        )
    except BaseException as err:
        log.info(
            "%s %r: build failed after %.2f s (%s)",
            spec.api, spec.name, time.perf_counter() - start, type(err).__name__,
        )  # fmt: skip
        raise
    log.info("%s %r: built in %.2f s", spec.api, spec.name, time.perf_counter() - start)


def _what(spec: Spec) -> str:
    """The sources of ``spec``, for the log."""
    kinds = (("C++", spec.inline_cpp), ("CUDA", spec.inline_cuda))
    inline = [label for label, text in kinds if text is not None]
    parts = [" and ".join(inline) + " source strings"] if inline else []
    parts += [str(path) for path in spec.files]
    if spec.embeds:
        parts.append("embedded " + ", ".join(sorted(spec.embeds)))
    return ", ".join(parts) or "generated sources"  # the launcher runtime (see _launcher)


@contextlib.contextmanager
def _built(spec: Spec, build_directory, verbose: bool) -> Iterator[Path]:
    """Build (or find in the cache) the library of ``spec``; the block gets its path.

    With ``build_directory`` the directory's lock is held for the whole block, so that no
    other process relinks the library between this build and the caller's load.
    """
    verbose = verbose_requested(verbose)
    timeout = _cache.lock_timeout()  # a bad value is an error on every call, hit or not
    root, root_fd = _cache.open_cache_root()
    try:
        if verbose:
            install = _cuda_install(spec, root)  # cached: no new search
            if install is not None:
                sys.stderr.write(f"tvm_ffi.cpp: using {install.describe()}\n")
        if build_directory is None:
            tools: list[str] = []
            flags = _launcher.runtime_flags(spec)
            if flags is not None:  # every source with the define, linked with the runtime
                separate = spec.replace(
                    cflags=[*spec.cflags, _launcher.DEFINE],
                    cuda_cflags=[*spec.cuda_cflags, _launcher.DEFINE],
                )
                prebuilt = _launcher.prebuilt_object(flags, spec.include_paths)
                if prebuilt is not None:  # the package's own: nothing to compile
                    path = _two_level(separate, root, root_fd, timeout, verbose, tools,
                                      prebuilt=prebuilt)  # fmt: skip
                else:
                    install = _cuda_install(spec, root)  # cached: the module's own search
                    includes = None if install is None else [str(p) for p in install.include_dirs]
                    runtime_spec = _launcher.runtime_spec(spec, flags, includes)
                    runtime = _runtime_entry(runtime_spec, root, tools)
                    path = _two_level(separate, root, root_fd, timeout, verbose, tools, runtime)
            elif spec.embeds:
                path = _two_level(spec, root, root_fd, timeout, verbose, tools)
            else:
                entry = _entry(spec, root, "", tools)
                path = _remote_or_built(
                    entry, root, root_fd, timeout, verbose,
                    lambda: _cached(entry, root, root_fd, timeout, verbose),
                )  # fmt: skip
            request = spec.request
            if request == "":  # not through the hit index (build_library's own callers)
                request = _hit_index.request_key(spec)
            # The next fresh process finds it (not one built privately, see _cached_privately).
            if request is not None and path.parent.parent == root:
                _hit_index.record(root_fd, root, request, path, sorted(set(tools)))
            if "TVM_FFI_RECORD" in os.environ:
                from . import _record

                _record.note(spec, path)
            yield path
            return
        plan, _, linker = _plan(spec, root)
        library = plan.output.rsplit("/", 1)[-1]
    finally:
        os.close(root_fd)
    resolved, dir_fd = open_private_dir(
        build_directory,
        label="build_directory",
        mode=0o755,
        hint="choose a build_directory that you own",
        shared_hint="choose a build_directory that only you can write",
    )
    build_dir = Path(resolved)
    try:
        with _cache.build_lock(dir_fd, build_dir, timeout, what=repr(spec.name), verbose=verbose):

            def attempt(default_linker: bool) -> None:
                nonlocal plan
                if default_linker:
                    plan = _plan(spec, root, default_linker=True)[0]
                _remove_tmp_outputs(plan, dir_fd)
                why = "build_directory given: ninja rebuilds what changed"
                _run(spec, plan, _ninja.render(plan), dir_fd, build_dir, verbose, why, cold=False)

            _linking(spec, linker, attempt)
            _cache.publish(dir_fd, plan.output, library, replace=True)
            yield build_dir / library
    finally:
        os.close(dir_fd)


def _entry(
    spec: Spec,
    root: Path,
    kind: str,
    tools_out: list[str],
    sources: Sequence[tuple[str, str]] = (),
    *,
    default_linker: bool = False,
) -> CacheEntry:
    """The cache entry of ``spec``, named ``<stem><kind>_<key>``; adds the tools of its key
    to ``tools_out``.
    ``sources``: generated ``(file, text)`` C++ translation units the entry compiles
    instead of the spec's (the launcher runtime's, see _launcher). ``default_linker``:
    see _plan."""
    plan, tools, linker = _plan(spec, root, default_linker=default_linker)
    if sources:
        plan.sources = list(sources)
        plan.compiles = [
            _ninja.Compile(name, f"obj/{name.rsplit('.', 1)[0]}.o", cuda=False)
            for name, _ in sources
        ]
    tools_out += [tool for _, tool in tools]
    ninja_text = _ninja.render(plan)
    install = _cuda_install(spec, root)  # cached: the plan's own search
    cuda_root = None if install is None else install.root
    key = _keys.module_key(spec, ninja_text, tools, root, plan.sources, cuda_root)
    library = plan.output.rsplit("/", 1)[-1]
    return CacheEntry(spec, plan, ninja_text, f"{spec.stem}{kind}_{key}", library, linker)


def _runtime_entry(spec: Spec, root: Path, tools_out: list[str]) -> CacheEntry:
    """The cache entry of the launcher's runtime parts (see _launcher)."""
    parts = [(f"launcher_part{part}.cc", _launcher.part_source(part)) for part in _launcher.PARTS]
    return _entry(spec, root, "", tools_out, parts)


def _two_level(
    spec: Spec,
    root: Path,
    root_fd: int,
    timeout: float,
    verbose: bool,
    tools: list[str],
    runtime: CacheEntry | None = None,
    prebuilt: Path | None = None,
) -> Path:
    """A build with embedded images, in two cache entries: the compiled sources as one
    relocatable object, keyed without the images, and the embed and link step, keyed by
    that object's entry and the image bytes. A new image into unchanged sources (a new
    autotune config, an edited NVRTC kernel) then re-runs only the embed and the link.
    ``runtime`` (a _runtime_entry) is a third entry the link takes in, built alongside the
    objects when missing; ``prebuilt``, the package's launcher object, is linked instead
    (named in the link's flags, so that its stamp is part of the link's key)."""
    # The object does not depend on the module name either: kernel variants built as
    # modules of their own around one wrapper share it (entry objects_<key>/objects.o).
    objects = spec.replace(
        embeds={}, ldflags=[], object_output=True, cuda_runtime=True, entry_stem="objects"
    )
    obj_entry = _entry(objects, root, "", tools)
    linked = [obj_entry.path(root)]
    if runtime is not None:
        linked.append(runtime.path(root))
    link = spec.replace(
        inline_cpp=None,
        inline_cuda=None,
        files=linked,
        file_kinds=["obj"] * len(linked),
        cflags=[],
        cuda_cflags=[],
        include_paths=[],
        keyed_files=True,  # the path holds the key of everything that made the object
        link_cudart=_links_cudart(objects, root),
        ldflags=[*spec.ldflags, str(prebuilt)] if prebuilt is not None else spec.ldflags,
    )
    link_entry = _entry(link, root, "", tools)
    return _remote_or_built(
        link_entry, root, root_fd, timeout, verbose,
        lambda: _objects_and_link(link, link_entry, obj_entry, linked, runtime, root, root_fd,
                                  timeout, verbose, tools),
    )  # fmt: skip


def _objects_and_link(
    link: Spec,
    link_entry: CacheEntry,
    obj_entry: CacheEntry,
    linked: list[Path],
    runtime: CacheEntry | None,
    root: Path,
    root_fd: int,
    timeout: float,
    verbose: bool,
    tools: list[str],
) -> Path:
    """The second half of _two_level: the objects (and runtime) built, then linked."""
    with _alongside(runtime, root, root_fd, timeout, verbose):
        built = [_cached(obj_entry, root, root_fd, timeout, verbose)]
    if runtime is not None:  # built alongside: found now
        built.append(_cached(runtime, root, root_fd, timeout, verbose))
    if built != linked:  # built in the private root (a read-only cache): link those
        link = link.replace(files=built)
        link_entry = _entry(link, root, "", tools)
    return _cached(link_entry, root, root_fd, timeout, verbose)


def _remote_or_built(
    entry: CacheEntry,
    root: Path,
    root_fd: int,
    timeout: float,
    verbose: bool,
    build: Callable[[], Path],
) -> Path:
    """The library of ``entry``: found here, else fetched from the remote cache when one
    is configured (see _remote), else ``build()`` (published to the remote by a builder).
    A builder holds the remote build lock around ``build()`` where the remote has one; a
    host that finds it held waits for that build and fetches its result."""
    found = _lookup(root_fd, root, entry, verbose)
    if found is not None:
        if not lookup_only.get():  # a pull's look-up is no use of the module
            _hit_index.count(str(root), _hit_index.LOCAL)
        return found
    if lookup_only.get():
        raise LookupError(f"{entry.name} is not in the cache {root}")
    tier = _remote.configured()
    if tier is None or entry.library.endswith(".o"):
        _hit_index.count(str(root), _hit_index.BUILT)
        return build()
    if _fetched(tier, entry, root, root_fd, timeout):
        return entry.path(root)
    with tier.claim(entry.name, timeout) as waited:
        if waited and _fetched(tier, entry, root, root_fd, timeout):
            return entry.path(root)
        _hit_index.count(str(root), _hit_index.BUILT)
        path = build()
    if tier.write:
        tier.publish(path.parent.name, path.name, path.read_bytes())
    return path


def _fetched(tier, entry: CacheEntry, root: Path, root_fd: int, timeout: float) -> bool:
    found = tier.fetch(entry.name, entry.library)
    if found is None:
        return False
    url, payload = found
    if not _remote.install(url, payload, root, root_fd, entry.name, entry.library, timeout):
        return False
    _log_hit(entry.path(root), f"fetched from {url}")
    _hit_index.count(str(root), _hit_index.REMOTE)
    return True


@contextlib.contextmanager
def _alongside(
    entry: CacheEntry | None, root: Path, root_fd: int, timeout: float, verbose: bool
) -> Iterator[None]:
    """Build the cache entry ``entry`` (if given and missing) in a thread while the block
    runs; on leaving, wait for it and raise its error. A cold build then takes about the
    longer of the two, not their sum. The two share the job count (see _jobs); with one
    job, ``entry`` is built first."""
    if entry is None or _lookup(root_fd, root, entry, verbose) is not None:
        yield
        return
    jobs = _ninja_jobs.get()
    if jobs is None:
        from . import _jobs

        jobs = _jobs.job_count(device=True)  # the block may compile device code
    if jobs < 2:
        _cached(entry, root, root_fd, timeout, verbose)
        yield
        return
    import threading

    failure: list[BaseException] = []

    def build() -> None:
        try:
            _cached(entry, root, root_fd, timeout, verbose)
        except BaseException as err:  # raised in the caller's thread below
            failure.append(err)

    context = contextvars.copy_context()
    context.run(_caller.set, _log.caller())
    context.run(_ninja_jobs.set, jobs - jobs // 2)
    # A daemon: an interrupted caller does not wait for it (its ninja is stopped at exit).
    thread = threading.Thread(target=context.run, args=(build,), daemon=True)
    thread.start()
    share = _ninja_jobs.set(jobs // 2)
    try:
        yield
    except Exception:
        # An ordinary error leaves nothing running behind it. The module's own error is
        # the one reported; a runtime failure as well shows again on the next build.
        thread.join()
        raise
    finally:
        _ninja_jobs.reset(share)
    thread.join()
    if failure:
        raise failure[0]


def _lookup(root_fd: int, root: Path, entry: CacheEntry, verbose: bool) -> Path | None:
    """The entry's library if it is there and sound (no lock: a published entry never
    changes), else None. The entry directory is checked first (an entry another user
    could write is refused, with PrivateDirError); the library then takes the check the
    hit index's answers take (:func:`._hit_index.published_library`)."""
    dir_fd = _cache.open_entry(root_fd, entry.name, root / entry.name, create=False)
    if dir_fd is None:
        return None
    os.close(dir_fd)
    found = _hit_index.published_library(
        root_fd, str(root), f"{entry.name}/{entry.library}", verbose
    )
    if found is None:
        return None
    _log_hit(found, "found in its cache entry")
    return Path(found)


def _log_hit(path: str | Path, how: str) -> None:
    """A DEBUG record of a cache hit (a fast path: only when a handler could show it)."""
    if _log.logging_enabled("tvm_ffi.cpp", 10):  # logging.DEBUG, without importing it
        _log.get_logger("tvm_ffi.cpp").debug("cached %s (%s)", path, how)


def _cached(entry: CacheEntry, root: Path, root_fd: int, timeout: float, verbose: bool) -> Path:
    """The library of ``entry``: found, or built and published under the entry's lock;
    when the link with the automatic faster linker fails, that of the entry built with the
    compiler's default linker (see _linking)."""

    def attempt(default_linker: bool) -> Path:
        if default_linker:  # the same build, keyed as what it now is: linked by default
            spec, sources = entry.spec, entry.plan.sources
            retry = _entry(spec, root, "", [], sources, default_linker=True)
            return _found_or_built(retry, root, root_fd, timeout, verbose)
        return _found_or_built(entry, root, root_fd, timeout, verbose)

    return _linking(entry.spec, entry.linker, attempt)


_T = TypeVar("_T")


def _linking(spec: Spec, linker: _toolchain.Linker | None, attempt: Callable[[bool], _T]) -> _T:
    """``attempt(False)``, a build whose link uses ``linker``. A faster linker must never
    turn a working build into a failing one: when the link with the automatic choice
    fails, ``attempt(True)`` builds with the compiler's default linker, and once that
    works the process keeps to the default (one warning). Its failure is the build's own
    error (the user's code, not the linker), raised as it is."""
    try:
        return attempt(False)
    except _build.BuildError as err:
        if not _toolchain.may_fall_back(linker, err.command):
            raise
        headline = str(err).split("\n", 1)[0]
        result = attempt(True)
        _toolchain.fall_back(linker, f"linking {spec.name!r}: {headline}")
        return result


def _found_or_built(
    entry: CacheEntry, root: Path, root_fd: int, timeout: float, verbose: bool
) -> Path:
    """The library of ``entry``: found, or built and published under the entry's lock."""
    found = _lookup(root_fd, root, entry, verbose)
    if found is not None:
        return found
    spec, plan, library = entry.spec, entry.plan, entry.library
    entry_dir = root / entry.name
    path = entry_dir / library
    try:
        dir_fd = _cache.open_entry(root_fd, entry.name, entry_dir, create=True)
    except OSError as err:
        if err.errno not in _cache.READ_ONLY or root_fd == _cache.private_root()[1]:
            raise
        return _cached_privately(entry, root, err, timeout, verbose)
    try:
        with _cache.build_lock(dir_fd, entry_dir, timeout, what=repr(spec.name), verbose=verbose):
            problem = _hit_index.library_problem(dir_fd, library)
            if problem is None:  # another process built it while we waited
                _log_hit(path, "built by another process while this one waited")
                return path
            what = "object file" if library.endswith(".o") else "library"
            if problem:
                _log.warn(
                    f"tvm_ffi.cpp: the cached {what} {path} is damaged ({problem}); rebuilding it"
                )
            _cache.clean_entry(dir_fd)  # a damaged library, leftovers of a killed build
            why = f"the cached {what} is damaged" if problem else "not in the cache"
            _run(spec, plan, entry.ninja_text, dir_fd, entry_dir, verbose, why)
            problem = _hit_index.library_problem(dir_fd, plan.output)
            if problem:
                raise RuntimeError(
                    f"the link produced an unusable {entry_dir / plan.output}: {problem}"
                )
            _cache.publish(dir_fd, plan.output, library, replace=False)
    finally:
        os.close(dir_fd)
    return path


def _cached_privately(
    entry: CacheEntry, root: Path, err: OSError, timeout: float, verbose: bool
) -> Path:
    """``entry`` built in this process's private root: the cache cannot take it (read-only)."""
    private, private_fd = _cache.private_root()
    _log.get_logger("tvm_ffi.cpp").info(
        "%s %r: the cache %s cannot take %s (%s): building it in %s, removed at exit",
        entry.spec.api, entry.spec.name, root, entry.name, err.strerror, private,
    )  # fmt: skip
    return _cached(entry, private, private_fd, timeout, verbose)


def build_library(spec: Spec, build_directory: str | os.PathLike | None, verbose: bool) -> Path:
    """Build (or find in the cache) the library of ``spec``; return its path."""
    with _built(spec, build_directory, verbose) as path:
        return path


def build_and_load(spec: Spec, build_directory: str | os.PathLike | None, verbose: bool):
    """Build (or find) the library of ``spec`` and load it; a build directory stays
    locked until the library is loaded."""
    with _built(spec, build_directory, verbose) as path:
        return load_library(path)


def load_library(path: Path):
    """``tvm_ffi.load_module(path)``; it reloads a library rebuilt at the same path."""
    return tvm_ffi.load_module(path)
