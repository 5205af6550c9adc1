"""Builds the compiled parts, ``tvm_ffi._core`` (and any shared library in ``LIBRARIES``), and
ships the C++ headers and CMake files inside the package (``tvm_ffi/include``,
``tvm_ffi/share/cmake/tvm_ffi``).

The build is the same on every machine: the core declares the few CUDA driver names it uses
itself (``src/python/cuda_decls``, the driver is dlopen'ed at run time), so no CUDA toolkit is
looked for and every wheel has ``tvm_ffi.cuda``. Objects are kept per build settings (see
``BuildExt``), and the sources of one target compile in parallel (``TVM_FFI_BUILD_JOBS``
threads, default: one per CPU).

Everything else is declared in pyproject.toml.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from glob import glob

import pybind11
from pybind11.setup_helpers import ParallelCompile, Pybind11Extension
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = os.path.dirname(os.path.abspath(__file__))

# Source trees copied into the package at build time: (folder in the repo, folder in the
# package). Walked at build time, so files added later are picked up without editing this.
DATA_TREES = [
    ("include", os.path.join("tvm_ffi", "include")),
    ("cmake", os.path.join("tvm_ffi", "share", "cmake", "tvm_ffi")),
]

# Compile flags every compiled target shares. -s (at link, also for the ninja_launch
# executable): the wheel ships stripped; the dynamic symbols a loader needs stay.
# --exclude-libs,ALL: a static libstdc++ (a compiler without the shared one) stays private,
# as in JIT modules (docs/dev/cxx_runtime.md). zig's driver refuses that flag; the libc++ it
# links in is built with hidden visibility, so nothing of it is exported there anyway
# (tools/build_wheels.sh checks that the wheel's libraries export no C++ runtime symbol).
COMPILE_ARGS = ["-O3", "-fvisibility=hidden"]
EXCLUDE_LIBS = "-Wl,--exclude-libs,ALL"
LINK_ARGS = ["-s", EXCLUDE_LIBS]


# Wheels for older Linux (tools/build_wheels.sh sets TVM_FFI_ZIG to the zig of the ziglang
# package): the package's own binaries (the core, libtvm_ffi.so, ninja_launch) are built by zig
# for glibc ZIG_GLIBC, with LLVM's libc++ linked in statically, so they need no glibc or
# libstdc++ newer than manylinux_2_28 allows; only C crosses between them and other libraries.
# The JIT's launcher object is still built by CXX against libstdc++, since users' compilers
# link it into their modules; COMPAT_INCLUDE keeps glibc 2.32's __libc_single_threaded out of it.
ZIG_GLIBC = "2.28"
COMPAT_INCLUDE = os.path.join(ROOT, "src", "jit", "compat")


def _zig(driver: str) -> list[str] | None:
    """``[zig, driver, -target, <arch>-linux-gnu.<ZIG_GLIBC>]`` under TVM_FFI_ZIG, else None."""
    zig = os.environ.get("TVM_FFI_ZIG")
    if not zig:
        return None
    return [zig, driver, "-target", f"{platform.machine()}-linux-gnu.{ZIG_GLIBC}"]


def _link_args(args: list[str]) -> list[str]:
    """args without EXCLUDE_LIBS under zig (see LINK_ARGS)."""
    return [a for a in args if a != EXCLUDE_LIBS] if _zig("cc") else args


def _tree_files(folder: str) -> list[str]:
    """Files under ``folder`` (relative to the repo root), sorted, no symlinks followed."""
    out = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, folder)):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
        for name in sorted(filenames):
            if not name.startswith("."):
                out.append(os.path.relpath(os.path.join(dirpath, name), ROOT))
    return out


class SharedLibrary(Extension):
    """A plain shared library (no Python module init), installed as
    ``<package folder>/lib<name>.so``: e.g. ``SharedLibrary("tvm_ffi.lib.tvm_ffi", ...)``
    gives ``tvm_ffi/lib/libtvm_ffi.so``."""


class JitPrebuilt(Extension):
    """The files the JIT takes instead of compiling them in a user's cold build (see
    ``python/tvm_ffi/cpp/_prebuilt.py``): the CUDA launcher's run-once code as one object
    and the load_inline prelude precompiled, in ``tvm_ffi/lib/jit/``. Compiled with the
    compiler the JIT will use (``CXX``, else ``c++``), which is what lets GCC take the
    precompiled header."""

    def __init__(self) -> None:
        super().__init__("tvm_ffi.lib.jit", sources=[])


def _load_jit_module(name: str):
    return _load_package_module(f"cpp/{name}")


def _load_package_module(name: str):
    # By path: the package is not importable while it is being built.
    path = os.path.join(ROOT, "python", "tvm_ffi", f"{name}.py")
    name = name.replace("/", "_")
    spec = importlib.util.spec_from_file_location(f"_tvm_ffi_{name}_for_setup", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _jit_compiler() -> tuple[list[str], str]:
    """(launcher words, compiler) from CXX, as the JIT reads it: ``ccache g++``."""
    words = shlex.split(os.environ.get("CXX") or "c++")
    found = shutil.which(words[-1])
    if found is None:
        raise RuntimeError(f"C++ compiler {words[-1]!r} (CXX) not found")
    return words[:-1], found


def _is_gcc(compiler: str) -> bool:
    macros = subprocess.run(
        [compiler, "-x", "c++", "-E", "-dM", "-"], input="", capture_output=True, text=True
    ).stdout
    return "#define __GNUC__ " in macros and "__clang__" not in macros


def build_jit_prebuilt(out_dir: str, work_dir: str, runtime_dir: str | None = None) -> list[str]:
    """Compile the JIT's prebuilt files into ``out_dir`` (objects in ``work_dir``); returns
    the files written. The precompiled header is left out with a compiler other than GCC,
    and when TVM_FFI_PREBUILT_PCH=0 (a wheel for other machines, whose GCC would differ).
    ``runtime_dir``: the folder of the libtvm_ffi.so the JIT's modules link (the linker
    probe links the launcher object as they do)."""
    prebuilt = _load_jit_module("_prebuilt")
    prelude = _load_jit_module("_spec").PRELUDE_INCLUDES
    launcher, compiler = _jit_compiler()
    include = os.path.join(ROOT, "include")
    decls = os.path.join(ROOT, "src", "python", "cuda_decls")
    base = [*launcher, compiler, *prebuilt.BASE_FLAGS]
    os.makedirs(work_dir, exist_ok=True)
    os.makedirs(out_dir, exist_ok=True)
    jobs = []
    compat = [f"-I{COMPAT_INCLUDE}"] if _zig("cc") else []
    for part, header in sorted(prebuilt.LAUNCHER_PARTS.items()):
        jobs.append([
            *base, *compat, f"-I{decls}", f"-I{include}", prebuilt.LAUNCHER_DEFINE,
            "-x", "c++", os.path.join(include, header),
            "-c", "-o", os.path.join(work_dir, f"launcher_part{part}.o"),
        ])  # fmt: skip
    pch = os.environ.get("TVM_FFI_PREBUILT_PCH", "1") != "0" and _is_gcc(compiler)
    header = os.path.join(out_dir, prebuilt.PCH_HEADER)
    prelude_text = prebuilt.prelude_text(prelude)
    with open(header, "w", encoding="utf-8") as f:
        f.write(prelude_text)
    if pch:  # no launcher: a compiler cache would only store it
        jobs.append([
            compiler, *prebuilt.BASE_FLAGS, f"-I{include}", "-x", "c++-header", header,
            "-o", f"{header}.gch.tmp",
        ])  # fmt: skip
    launch = os.path.join(out_dir, prebuilt.NINJA_LAUNCH)
    jobs.append([
        *(_zig("cc") or [compiler]), "-x", "c", "-O2", *_link_args(LINK_ARGS),
        os.path.join(ROOT, "src", "jit", "ninja_launch.c"), "-o", f"{launch}.tmp",
    ])  # fmt: skip
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        for cmd, proc in zip(jobs, pool.map(_run_quiet, jobs)):
            if proc.returncode != 0:
                raise RuntimeError(f"{shlex.join(cmd)} failed:\n{proc.stdout}{proc.stderr}")
    os.replace(f"{launch}.tmp", launch)
    obj = os.path.join(out_dir, prebuilt.LAUNCHER_OBJECT)
    parts = [os.path.join(work_dir, f"launcher_part{p}.o") for p in sorted(prebuilt.LAUNCHER_PARTS)]
    merge = [compiler, "-r", "-nostdlib", "-o", obj, *parts]
    proc = _run_quiet(merge)
    if proc.returncode != 0:
        raise RuntimeError(f"{shlex.join(merge)} failed:\n{proc.stdout}{proc.stderr}")
    written = [obj, header, launch]
    if pch:
        os.replace(f"{header}.gch.tmp", f"{header}.gch")
        written.append(f"{header}.gch")
    elif os.path.exists(f"{header}.gch"):
        os.unlink(f"{header}.gch")  # another build's: never beside a header it was not made for
    st = os.stat(compiler)
    stamp = {
        "linker": _working_linker(prebuilt.LINKERS, compiler, obj, work_dir, runtime_dir),
        "headers": prebuilt.headers_digest(include),
        "compiler": os.path.realpath(compiler),
        "compiler_stamp": [st.st_size, st.st_mtime_ns],
        "flags": list(prebuilt.BASE_FLAGS),
        "pch": pch,
    }
    if pch:  # which text the .gch holds: GCC would take it for any prelude.h
        stamp.update(prebuilt.pch_identity(prelude_text, os.path.getsize(f"{header}.gch")))
    path = os.path.join(out_dir, prebuilt.STAMP)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(stamp, f, indent=1, sort_keys=True)
    return [*written, path]


def _working_linker(
    linkers, compiler: str, obj: str, work_dir: str, runtime_dir: str | None = None
) -> str | None:
    """The first of ``linkers`` on PATH that links ``obj`` (C++ with libstdc++, calling the
    runtime in ``runtime_dir``) into a shared library with ``compiler``: the JIT's links
    then use it."""
    runtime = [f"-L{runtime_dir}", "-ltvm_ffi"] if runtime_dir else []
    for name, binary in linkers:
        if shutil.which(binary) is None:
            continue
        probe = [
            compiler, "-shared", f"-fuse-ld={name}", "-Wl,-z,defs", obj, *runtime, "-ldl",
            "-pthread", "-o", os.path.join(work_dir, f"probe_{name}.so"),
        ]  # fmt: skip
        if _run_quiet(probe).returncode == 0:
            return name
    return None


def _run_quiet(cmd: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


class BuildPyWithData(build_py):
    """build_py that also copies the header and CMake trees into the built package, and
    writes the interpreter-start hook that refuses a tvm_ffi folder shared with
    apache-tvm-ffi (python/tvm_ffi/_mixed_install.py) beside it."""

    def _pth(self) -> tuple[str, str]:
        mixed = _load_package_module("_mixed_install")
        return os.path.join(self.build_lib, mixed.PTH_NAME), mixed.pth_line()

    def run(self) -> None:
        super().run()
        path, line = self._pth()
        with open(path, "w", encoding="utf-8") as f:
            f.write(line)
        for src_folder, dst_folder in DATA_TREES:
            for rel in _tree_files(src_folder):
                target = os.path.join(self.build_lib, dst_folder, os.path.relpath(rel, src_folder))
                self.mkpath(os.path.dirname(target))
                # copyfile: real copies (no symlinks, no permission surprises).
                shutil.copyfile(os.path.join(ROOT, rel), target)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        outputs = list(super().get_outputs(include_bytecode))
        outputs.append(self._pth()[0])
        for src_folder, dst_folder in DATA_TREES:
            for rel in _tree_files(src_folder):
                outputs.append(
                    os.path.join(self.build_lib, dst_folder, os.path.relpath(rel, src_folder))
                )
        return outputs


def settings_key(compiler: object, ext: Extension) -> str:
    """A digest of everything that decides what a target's objects contain, other than the
    source files' contents (the up-to-date check compares those by time)."""
    settings = {
        "compiler": [
            getattr(compiler, a, None) for a in ("compiler_so", "compiler_cxx", "linker_so")
        ],
        "env": {
            k: os.environ.get(k) for k in ("CC", "CXX", "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS")
        },
        "python": [sys.implementation.cache_tag, sys.abiflags, sys.platform],
        "pybind11": pybind11.__version__,
        "ext": [
            ext.name,
            sorted(ext.sources),
            ext.include_dirs,
            ext.define_macros,
            ext.undef_macros,
            ext.extra_compile_args,
            ext.extra_link_args,
            ext.libraries,
        ],
    }
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]


# The shared C++ runtimes a C++ library of the package must name in DT_NEEDED. One copied in
# statically (a compiler without libstdc++.so, e.g. a GCC on its own prefix, or
# -static-libstdc++) was seen to make a later `import torch` end the process once the runtime
# was loaded RTLD_GLOBAL (docs/dev/cxx_runtime.md). zig's libc++ is static by design, built with
# hidden visibility (ZIG_GLIBC), and not checked here.
SHARED_CXX_RUNTIMES = ("libstdc++.so.", "libc++.so.")
# Exported names that belong to a C++ runtime, never to the package's own code.
CXX_RUNTIME_PREFIXES = ("_ZNSt", "_ZNKSt", "_ZSt", "_ZTISt", "_ZTSSt", "_ZTVSt", "_ZTVN10__cxxabiv",
                        "_ZTIN10__cxxabiv", "__cxa_", "__gxx_", "_Unwind_")  # fmt: skip
_STB_GNU_UNIQUE = 10


def cxx_runtime_problem(path: str, language: str | None) -> str | None:
    """Why the library at ``path`` carries its own C++ runtime (see SHARED_CXX_RUNTIMES), or
    None: a C++ library that needs no shared libstdc++/libc++ but has C++ runtime code in it
    (or no .symtab to tell), or one that exports a C++ runtime symbol or a unique
    (STB_GNU_UNIQUE) symbol, which the dynamic linker binds process-wide. A C++ library that
    uses nothing of the runtime needs none (the linker's --as-needed drops libstdc++.so)."""
    elf = _load_package_module("_elf")
    name = os.path.basename(path)
    needed = elf.needed_libraries(path) or []
    symtab = elf.symbols(path, dynamic=False)
    has_runtime_code = not symtab or any(
        s.defined and s.name.startswith(CXX_RUNTIME_PREFIXES) for s in symtab
    )
    if (
        language == "c++"
        and has_runtime_code
        and not any(n.startswith(SHARED_CXX_RUNTIMES) for n in needed)
    ):
        return (
            f"{name} links the C++ runtime statically (no libstdc++.so or libc++.so among its "
            f"DT_NEEDED: {', '.join(needed) or 'none'}): the compiler has no shared libstdc++"
        )
    exported = [s for s in elf.symbols(path, dynamic=True) or [] if s.defined]
    unique = sorted(s.name for s in exported if s.bind == _STB_GNU_UNIQUE)
    runtime = sorted(s.name for s in exported if s.name.startswith(CXX_RUNTIME_PREFIXES))
    if unique or runtime:
        return f"{name} exports C++ runtime or unique symbols: {', '.join((unique + runtime)[:5])}"
    return None


class BuildExt(build_ext):
    """build_ext that never reuses objects built with other settings: each target is compiled
    and linked under ``<build_temp>/<settings_key>`` and copied to its place from there, so a
    later build with other flags, another compiler or another Python starts from nothing
    (setuptools alone would find the old output newer than the sources and keep it)."""

    _keyed_output: str | None = None

    def get_ext_filename(self, fullname: str) -> str:
        ext = self.ext_map.get(fullname)
        if isinstance(ext, JitPrebuilt):  # a folder; its stamp stands for it
            return os.path.join(*fullname.split("."), "prebuilt.json")
        if isinstance(ext, SharedLibrary):
            *package, name = fullname.split(".")
            return os.path.join(*package, f"lib{name}.so")
        return super().get_ext_filename(fullname)

    def get_ext_fullpath(self, ext_name: str) -> str:
        # Inside build_extension: where this settings key's copy lives (the up-to-date check
        # and the link both use it).
        return self._keyed_output or super().get_ext_fullpath(ext_name)

    def _build_jit_prebuilt(self, ext: Extension) -> None:
        # Rebuilt every time: three compiles in parallel, about a second; what decides the
        # output (headers, compiler, flags) is what the JIT checks in the stamp anyway.
        out_dir = os.path.dirname(self.get_ext_fullpath(ext.name))
        runtime = getattr(self, "_runtime_output", None)  # built before it (setup's order)
        self._jit_outputs = build_jit_prebuilt(
            out_dir, os.path.join(self.build_temp, "jit"), runtime and os.path.dirname(runtime)
        )

    def get_outputs(self) -> list[str]:
        return sorted(set(super().get_outputs()) | set(getattr(self, "_jit_outputs", [])))

    def copy_extensions_to_source(self) -> None:
        # Editable installs copy each target into the source tree; tvm_ffi/lib/ is not a
        # package folder there, so make it first.
        build_py = self.get_finalized_command("build_py")
        for ext in self.extensions:
            package = ext.name.rpartition(".")[0]
            self.mkpath(build_py.get_package_dir(package))
        regular = [ext for ext in self.extensions if not isinstance(ext, JitPrebuilt)]
        self.extensions, every = regular, self.extensions
        try:
            super().copy_extensions_to_source()
        finally:
            self.extensions = every
        for ext in every:
            if isinstance(ext, JitPrebuilt):  # a folder of files, not one extension file
                target = build_py.get_package_dir(ext.name)
                self.mkpath(target)
                for path in getattr(self, "_jit_outputs", []):
                    self.copy_file(path, os.path.join(target, os.path.basename(path)))

    def build_extensions(self) -> None:
        zig = _zig("c++")
        if zig is not None:  # see ZIG_GLIBC
            # Every driver setuptools may pick (its *_cxx ones, since 72, for C++ sources).
            compile_, link = [*zig, "-fPIC"], [*zig, "-shared"]
            executables = dict(compiler_so=compile_, compiler_so_cxx=compile_, compiler_cxx=zig)
            executables.update(linker_so=link, linker_so_cxx=link)
            executables.update(linker_exe=zig, linker_exe_cxx=zig)
            known = self.compiler.executables
            self.compiler.set_executables(**{k: v for k, v in executables.items() if k in known})
            for ext in self.extensions:
                ext.extra_link_args = _link_args(list(ext.extra_link_args or []))
        super().build_extensions()

    def _check_cxx_runtime(self, ext: Extension, output: str) -> None:
        language = ext.language or self.compiler.detect_language(ext.sources)
        problem = None if _zig("cc") else cxx_runtime_problem(output, language)
        if problem is not None:
            os.unlink(output)  # else the next build would find it up to date
            # The driver that linked it (setuptools' *_cxx ones since 72).
            linker = getattr(self.compiler, "linker_so_cxx", None) or self.compiler.compiler_cxx
            compiler = linker[0]
            raise RuntimeError(
                f"{problem}. Loaded into a process that also has libstdc++.so.6 (torch does), "
                f"such a library can crash it (docs/dev/cxx_runtime.md). Build with a compiler "
                f"that links the shared libstdc++ (CXX=/usr/bin/g++, or one whose "
                f"`$CXX -print-file-name=libstdc++.so` is a file; {compiler} was used)"
            )

    def build_extension(self, ext: Extension) -> None:
        if isinstance(ext, JitPrebuilt):
            self._build_jit_prebuilt(ext)
            return
        if ext is CORE:  # links to the runtime built just before (setup's order)
            ext.library_dirs = [os.path.dirname(self._runtime_output)]
        dest = self.get_ext_fullpath(ext.name)
        base_temp = self.build_temp
        self.build_temp = os.path.join(base_temp, settings_key(self.compiler, ext))
        self._keyed_output = os.path.join(self.build_temp, "out", os.path.basename(dest))
        try:
            super().build_extension(ext)
            output = self._keyed_output
            self._check_cxx_runtime(ext, output)
            if ext is RUNTIME:
                self._runtime_output = output
        finally:
            self.build_temp = base_temp
            self._keyed_output = None
        self.mkpath(os.path.dirname(dest))
        self.copy_file(output, dest)


# libtvm_ffi.so: the tvm-ffi runtime (src/lib), at tvm_ffi/lib/libtvm_ffi.so so that
# `-L<dir> -ltvm_ffi` links against it; its soname lets a library that lists it as DT_NEEDED
# (ours and apache-tvm-ffi's alike) bind to the copy tvm_ffi._core already loaded; the version
# script exports the C ABI and the few C++ members apache-built code calls, unversioned.
RUNTIME = SharedLibrary(
    "tvm_ffi.lib.tvm_ffi",
    sorted(glob("src/lib/*.cc")),
    include_dirs=["include"],
    depends=sorted(glob("src/lib/*.h"))
    + _tree_files("include")
    + [os.path.join("src", "lib", "libtvm_ffi.map")],
    language="c++",  # linked by the C++ driver: it needs libstdc++
    libraries=["dl"],  # dladdr, dlopen: in libdl before glibc 2.34
    extra_compile_args=["-std=c++17", *COMPILE_ARGS],
    extra_link_args=[
        *LINK_ARGS,
        "-Wl,-soname,libtvm_ffi.so",
        f"-Wl,--version-script={os.path.join(ROOT, 'src', 'lib', 'libtvm_ffi.map')}",
    ],
)

CORE_MAP = os.path.join(ROOT, "src", "python", "core", "_core.map")
CORE = Pybind11Extension(
    "tvm_ffi._core",
    # Two products in one module: core/ (functions, modules, objects, tensors across the
    # C ABI) and cuda/ (tvm_ffi.cuda's kernel launches), which builds on core/.
    sorted(glob("src/python/core/*.cc")) + sorted(glob("src/python/cuda/*.cc")),
    # cuda_decls first: its cuda.h stands in for the toolkit's, which is never looked for.
    include_dirs=["src/python/cuda_decls", "src/python", "include"],
    depends=sorted(glob("src/python/*/*.h")) + _tree_files("include") + [CORE_MAP],
    cxx_std=17,
    extra_compile_args=COMPILE_ARGS,
    # The runtime sits in lib/ beside the module (BuildExt.build_extension adds -L).
    extra_link_args=[*LINK_ARGS, f"-Wl,--version-script={CORE_MAP}", "-Wl,-rpath,$ORIGIN/lib"],
    libraries=["dl", "tvm_ffi"],
)

# Plain shared libraries shipped in the package (each file listed in tests/python/wheel_files.txt).
LIBRARIES: list[Extension] = [RUNTIME]

if __name__ == "__main__":
    ParallelCompile("TVM_FFI_BUILD_JOBS").install()
    setup(
        # The runtime first: the core links to it.
        ext_modules=[*LIBRARIES, CORE, JitPrebuilt()],
        cmdclass={"build_py": BuildPyWithData, "build_ext": BuildExt},
    )
