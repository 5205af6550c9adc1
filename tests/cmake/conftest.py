"""Fixtures for the CMake tests: real consumer projects, configured and built with cmake.

Tests are gated on the tools a build needs (cmake 3.20+, and for builds nvcc, a C++
compiler and binutils); a configure or build that fails is a test failure, never a skip.
Kernels are built for an explicit architecture (TEST_ARCH): nvcc's ``native`` needs a GPU.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "cubin_launcher"
PROJECTS = Path(__file__).resolve().parent / "projects"
TEST_ARCH = "sm_90"
MIN_CMAKE = (3, 20)


# ---- tools ----------------------------------------------------------------------------------


def _find_nvcc() -> str | None:
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home and (Path(home) / "bin" / "nvcc").is_file():
            return str(Path(home) / "bin" / "nvcc")
    return shutil.which("nvcc")


@dataclass
class Result:
    """A finished cmake run: its command, exit status and output."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str

    def describe(self) -> str:
        return (
            f"$ {' '.join(self.args)}\n(exit {self.returncode})\n"
            f"--- stdout ---\n{self.stdout[-6000:]}\n--- stderr ---\n{self.stderr[-6000:]}"
        )

    @property
    def error_text(self) -> str:
        """stderr with CMake's line wrapping and indentation folded into single spaces."""
        return " ".join(self.stderr.split())


class CMake:
    """Runs cmake on consumer projects; ``nvcc`` is None when no CUDA toolkit is present."""

    def __init__(self, exe: str, nvcc: str | None) -> None:
        self.exe = exe
        self.nvcc = nvcc
        self.generator = "Ninja" if shutil.which("ninja") else "Unix Makefiles"

    def run(self, *args: str, cwd: Path | None = None, timeout: int = 600) -> Result:
        cmd = [self.exe, *args]
        env = dict(os.environ)
        if self.nvcc is not None:
            # Projects that enable CMake's CUDA language use the same nvcc as the rest.
            env.setdefault("CUDACXX", self.nvcc)
        proc = subprocess.run(
            cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env
        )
        return Result(cmd, proc.returncode, proc.stdout, proc.stderr)

    def configure(
        self,
        source: Path,
        build: Path,
        *args: str,
        generator: str | None = None,
        check: bool = True,
    ) -> Result:
        result = self.run(
            "-S", str(source), "-B", str(build), "-G", generator or self.generator, *args
        )
        if check:
            assert result.returncode == 0, f"configure failed\n{result.describe()}"
        return result

    def build(self, build: Path, *args: str, check: bool = True) -> Result:
        result = self.run("--build", str(build), *args)
        if check:
            assert result.returncode == 0, f"build failed\n{result.describe()}"
        return result


@pytest.fixture(scope="session")
def cmake() -> CMake:
    """cmake alone: enough for configure-only tests (argument checks, versions)."""
    exe = shutil.which("cmake")
    if exe is None:
        pytest.skip("cmake is not on PATH")
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, check=True).stdout
    version = tuple(int(v) for v in re.search(r"(\d+)\.(\d+)", out).groups())
    if version < MIN_CMAKE:
        pytest.skip(f"cmake {out.split()[2]} is older than the 3.20 the package needs")
    return CMake(exe, _find_nvcc())


@pytest.fixture(scope="session")
def cuda_cmake(cmake: CMake) -> CMake:
    """cmake plus everything a build of a consumer project needs."""
    if cmake.nvcc is None:
        pytest.skip("nvcc not found (set CUDA_HOME)")
    cuda_h = Path(cmake.nvcc).resolve().parents[1] / "include" / "cuda.h"
    if not cuda_h.is_file() and not Path("/usr/local/cuda/include/cuda.h").is_file():
        pytest.skip("CUDA headers (cuda.h) not found next to nvcc")
    for tool in ("ld", "objcopy"):
        if shutil.which(tool) is None:
            pytest.skip(f"binutils' {tool} is not on PATH")
    if shutil.which(os.environ.get("CXX", "c++")) is None:
        pytest.skip("no C++ compiler (c++) on PATH")
    return cmake


# ---- where the package comes from -----------------------------------------------------------

MODES = ("source", "installed", "pip")


@pytest.fixture(scope="session")
def installed_prefix(cmake: CMake, tmp_path_factory) -> Path:
    """The top-level project built (the runtime, src/lib) and installed with ``cmake --install``
    into a fresh prefix."""
    root = tmp_path_factory.mktemp("install")
    cmake.configure(REPO, root / "build")
    cmake.build(root / "build")
    result = cmake.run("--install", str(root / "build"), "--prefix", str(root / "prefix"))
    assert result.returncode == 0, f"install failed\n{result.describe()}"
    return root / "prefix"


@pytest.fixture(scope="session")
def wheel_layout(tmp_path_factory) -> Path:
    """The package as the wheel lays it out (setup.py copies include/ and cmake/ into it and
    builds the runtime into tvm_ffi/lib).

    Returns the site directory that holds ``tvm_ffi/``; the CMake folder is
    ``tvm_ffi/share/cmake/tvm_ffi``.
    """
    site = tmp_path_factory.mktemp("wheel-site")
    package = site / "tvm_ffi"
    shutil.copytree(REPO / "include", package / "include")
    shutil.copytree(REPO / "cmake", package / "share" / "cmake" / "tvm_ffi")
    shutil.copy(REPO / "python" / "tvm_ffi" / "_version.py", package / "_version.py")
    (package / "lib").mkdir()
    import tvm_ffi.libinfo  # the installed package's runtime (a checkout may not be built)

    shutil.copy(tvm_ffi.libinfo.find_libtvm_ffi(), package / "lib")
    return site


def _tvm_ffi_config(flag: str, cwd: Path) -> Path:
    """What ``python -m tvm_ffi.config <flag>`` prints. A package that does not import there
    (not installed, or its core not built) fails the test: it is our build."""
    proc = subprocess.run(
        [sys.executable, "-m", "tvm_ffi.config", flag],
        capture_output=True,
        text=True,
        cwd=cwd,  # not the repo: only an installed package counts
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return Path(proc.stdout.strip())


@pytest.fixture(scope="session")
def pip_cmakedir(tmp_path_factory) -> Path:
    """What ``python -m tvm_ffi.config --cmakedir`` prints, when tvm_ffi is installed."""
    cmakedir = _tvm_ffi_config("--cmakedir", tmp_path_factory.mktemp("pip-probe"))
    assert (cmakedir / "tvm_ffiConfig.cmake").is_file(), f"--cmakedir printed {cmakedir}"
    return cmakedir


@pytest.fixture(scope="session")
def pip_includedir(tmp_path_factory) -> Path:
    """What ``python -m tvm_ffi.config --includedir`` prints, when tvm_ffi is installed."""
    return _tvm_ffi_config("--includedir", tmp_path_factory.mktemp("pip-probe"))


def _checkout_runtime() -> list[str]:
    """A checkout whose package was installed elsewhere (``pip install .``) has no runtime
    built in the tree: name the installed package's, as such a consumer would."""
    if (REPO / "python" / "tvm_ffi" / "lib" / "libtvm_ffi.so").exists():
        return []
    import tvm_ffi.libinfo

    return [f"-Dtvm_ffi_LIBRARY={tvm_ffi.libinfo.find_libtvm_ffi()}"]


@pytest.fixture(scope="session")
def package_args(request):
    """``package_args(mode)``: the cmake arguments that make find_package(tvm_ffi) use
    the package from ``mode`` (see MODES; also "source-dir" and "wheel")."""

    def args_for(mode: str) -> list[str]:
        if mode == "source":
            return [f"-Dtvm_ffi_ROOT={REPO}", *_checkout_runtime()]
        if mode == "source-dir":
            return [f"-Dtvm_ffi_DIR={REPO / 'cmake'}", *_checkout_runtime()]
        if mode == "installed":
            return [f"-DCMAKE_PREFIX_PATH={request.getfixturevalue('installed_prefix')}"]
        if mode == "wheel":
            site = request.getfixturevalue("wheel_layout")
            return [f"-Dtvm_ffi_ROOT={site / 'tvm_ffi' / 'share' / 'cmake' / 'tvm_ffi'}"]
        if mode == "pip":
            return [f"-Dtvm_ffi_ROOT={request.getfixturevalue('pip_cmakedir')}"]
        raise ValueError(mode)

    return args_for


@pytest.fixture(scope="session")
def test_arch() -> str:
    """The architecture CPU-side builds target (explicit: ``native`` needs a GPU)."""
    return TEST_ARCH


@pytest.fixture(scope="session")
def built(cuda_cmake: CMake, package_args, tmp_path_factory):
    """``built(project_dir, mode, generator=None, arch=TEST_ARCH)``: a build directory of
    the project, configured and built once per session for each combination."""
    cache: dict[tuple, Path] = {}

    def build(
        project: Path, mode: str = "source", generator: str | None = None, arch: str = TEST_ARCH
    ) -> Path:
        key = (str(project), mode, generator, arch)
        if key not in cache:
            build_dir = tmp_path_factory.mktemp(f"{project.name}-{mode}")
            cuda_cmake.configure(
                project,
                build_dir,
                f"-DCUBIN_ARCH={arch}",
                *package_args(mode),
                generator=generator,
            )
            cuda_cmake.build(build_dir)
            cache[key] = build_dir
        return cache[key]

    return build


# ---- reading ELF files ----------------------------------------------------------------------

SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR = 0x1, 0x2, 0x4
PT_GNU_STACK, PF_X = 0x6474E551, 0x1
STB_LOCAL = 0
STV_HIDDEN = 2


@dataclass(frozen=True)
class Section:
    name: str
    type: int
    flags: int
    addr: int
    offset: int
    size: int
    align: int


@dataclass(frozen=True)
class Symbol:
    name: str
    value: int
    size: int
    bind: int
    type: int
    visibility: int
    shndx: int


class Elf:
    """Just enough of a 64-bit little-endian ELF file for these tests, read with struct
    so the assertions do not depend on the output format of readelf or nm."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.data = self.path.read_bytes()
        assert self.data[:6] == b"\x7fELF\x02\x01", f"{path} is not a 64-bit little-endian ELF"
        # e_type, e_machine, e_version, e_entry, e_phoff, e_shoff, e_flags, e_ehsize, ...
        header = struct.unpack_from("<HHIQQQIHHHHHH", self.data, 16)
        self.e_type, self.machine, self.flags = header[0], header[1], header[6]
        phoff, shoff = header[4], header[5]
        phentsize, phnum, shentsize, shnum, shstrndx = header[8:13]
        raw = [
            struct.unpack_from("<IIQQQQIIQQ", self.data, shoff + i * shentsize)
            for i in range(shnum)
        ]
        names = raw[shstrndx][4] if raw else 0
        self.sections = [
            Section(self._str(names, r[0]), r[1], r[2], r[3], r[4], r[5], r[8]) for r in raw
        ]
        self.segments = [
            struct.unpack_from("<IIQQQQQQ", self.data, phoff + i * phentsize) for i in range(phnum)
        ]
        self.symbols = self._symbols(".symtab")
        self.dynamic_symbols = self._symbols(".dynsym")

    def _str(self, table_offset: int, index: int) -> str:
        end = self.data.index(b"\0", table_offset + index)
        return self.data[table_offset + index : end].decode()

    def _symbols(self, name: str) -> dict[str, Symbol]:
        table = next((s for s in self.sections if s.name == name), None)
        if table is None:
            return {}
        strtab = next(
            s for s in self.sections if s.name == (".strtab" if name == ".symtab" else ".dynstr")
        )
        out = {}
        for off in range(table.offset, table.offset + table.size, 24):
            st_name, info, other, shndx, value, size = struct.unpack_from("<IBBHQQ", self.data, off)
            sym = Symbol(
                self._str(strtab.offset, st_name),
                value,
                size,
                info >> 4,
                info & 0xF,
                other & 0x3,
                shndx,
            )
            out[sym.name] = sym
        return out

    def section(self, name: str) -> Section:
        return next(s for s in self.sections if s.name == name)

    def read(self, symbol: Symbol, size: int) -> bytes:
        """``size`` bytes of the file at where ``symbol`` points."""
        section = self.sections[symbol.shndx]
        # In an object file a symbol's value is an offset into its section; in a linked
        # file it is an address.
        start = section.offset + symbol.value - (0 if self.e_type == 1 else section.addr)
        return self.data[start : start + size]

    def needed(self) -> list[str]:
        """DT_NEEDED entries: the shared libraries this file links against."""
        dynamic = next((s for s in self.sections if s.name == ".dynamic"), None)
        if dynamic is None:
            return []
        dynstr = self.section(".dynstr")
        out = []
        for off in range(dynamic.offset, dynamic.offset + dynamic.size, 16):
            tag, value = struct.unpack_from("<qQ", self.data, off)
            if tag == 1:
                out.append(self._str(dynstr.offset, value))
        return out

    def embedded_image(self, name: str) -> bytes:
        """The bytes between __tvm_ffi__cubin_<name> and __tvm_ffi__cubin_<name>_end."""
        start = self.symbols[f"__tvm_ffi__cubin_{name}"]
        end = self.symbols[f"__tvm_ffi__cubin_{name}_end"]
        assert start.shndx == end.shndx
        return self.read(start, end.value - start.value)

    def assert_embedded(self, name: str, image: bytes) -> None:
        """``image`` is embedded under ``name`` the way TVM_FFI_EMBED_CUBIN expects it:
        exact bytes, a NUL after them, read-only, 64-byte aligned, and not exported."""
        for symbol in (f"__tvm_ffi__cubin_{name}", f"__tvm_ffi__cubin_{name}_end"):
            sym = self.symbols[symbol]
            assert sym.shndx != 0, f"{symbol} is undefined in {self.path}"
            assert sym.bind == STB_LOCAL or sym.visibility == STV_HIDDEN, (symbol, sym)
            assert symbol not in self.dynamic_symbols, f"{symbol} is exported by {self.path}"
        assert self.embedded_image(name) == image
        start = self.symbols[f"__tvm_ffi__cubin_{name}"]
        assert self.read(start, len(image) + 1)[-1:] == b"\0", "no NUL byte after the image"
        section = self.sections[start.shndx]
        assert section.flags & SHF_ALLOC
        assert not section.flags & (SHF_WRITE | SHF_EXECINSTR), f"{section.name} is writable"
        assert section.align >= 64 and start.value % 64 == 0, "the image is not 64-byte aligned"
        assert not [s for s in self.symbols if s.startswith("_binary_")], "ld -b binary symbols"

    def stack_is_executable(self) -> bool:
        stack = [seg for seg in self.segments if seg[0] == PT_GNU_STACK]
        # Without a PT_GNU_STACK header the loader assumes an executable stack.
        return not stack or bool(stack[0][1] & PF_X)


@pytest.fixture(scope="session")
def elf():
    """The Elf reader class: ``elf(path)``."""
    return Elf
