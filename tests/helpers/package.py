"""The release path as the package tests take it: a copy of the source tree, its sdist, and
the wheel built from that sdist (as tools/build_wheels.sh builds it), offline where the test
extra allows."""

from __future__ import annotations

import importlib.util
import shutil
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# The files at the top of the tree that the sdist ships (CMakeLists.txt: CMake's
# add_subdirectory() of an unpacked sdist).
TOP_FILES = ("CMakeLists.txt", "LICENSE", "MANIFEST.in", "README.md", "pyproject.toml", "setup.py")


@dataclass(frozen=True)
class Release:
    src: Path  # the source copy the sdist was made from
    sdist: Path
    wheel: Path  # built from the sdist


def can_build_offline() -> bool:
    """Whether this Python has the build requirements (the test extra brings them)."""
    if importlib.util.find_spec("pybind11") is None:
        return False
    import setuptools

    return int(setuptools.__version__.split(".")[0]) >= 77


def source_copy(tmp_path: Path) -> Path:
    """The tree's sources without its build outputs, plus a header and a CMake file added
    after setup.py was written (they must ship too)."""
    src = tmp_path / "src"
    src.mkdir()
    for name in TOP_FILES:
        shutil.copy2(REPO / name, src / name)
    # Build outputs: python/tvm_ffi/{include,share,lib} of an editable install, objects.
    outputs = ("__pycache__", "*.so", "*.egg-info", "include", "share", "lib")
    shutil.copytree(REPO / "python", src / "python", ignore=shutil.ignore_patterns(*outputs))
    shutil.copytree(REPO / "src", src / "src", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "include", src / "include")
    shutil.copytree(REPO / "cmake", src / "cmake")
    (src / "include" / "tvm" / "ffi" / "zz_added_later.h").write_text("// new\n")
    (src / "cmake" / "zz_added_later.cmake").write_text("# new\n")
    return src


def build_release(tmp_path: Path) -> Release:
    """The sdist of a source copy and the wheel `pip wheel` builds from it."""
    src = source_copy(tmp_path)
    dist = tmp_path / "dist"
    code = "import sys; from setuptools import build_meta as b; print(b.build_sdist(sys.argv[1]))"
    proc = subprocess.run(
        [sys.executable, "-c", code, str(dist)], cwd=src, capture_output=True, text=True
    )
    if proc.returncode != 0 and not can_build_offline():
        pytest.skip("needs setuptools>=77 and pybind11 (the test extra) to build offline")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    sdist = dist / proc.stdout.splitlines()[-1]
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist)]
    if can_build_offline():
        cmd.append("--no-build-isolation")
    proc = subprocess.run([*cmd, str(sdist)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (wheel,) = dist.glob("tvm_ffi_cubin-*.whl")
    return Release(src, sdist, wheel)


def elf_type_and_sections(data: bytes) -> tuple[int, set[str]]:
    """(e_type, section names) of a 64-bit little-endian ELF file: 1 relocatable, 2
    executable, 3 shared object or position-independent executable."""
    (e_type,) = struct.unpack_from("<H", data, 16)
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)

    def header(i: int) -> tuple[int, int]:  # (name offset, file offset) of section i
        base = shoff + i * shentsize
        name = struct.unpack_from("<I", data, base)[0]
        return name, struct.unpack_from("<Q", data, base + 0x18)[0]

    strtab = header(shstrndx)[1]
    names = set()
    for i in range(shnum):
        start = strtab + header(i)[0]
        names.add(data[start : data.index(b"\0", start)].decode())
    return e_type, names


def second_install(top: Path, package: Path | None = None) -> Path:
    """A copy of ``package`` (default: the imported one's folder) under ``top`` (headers
    inside it, as a wheel has them), at another path and with other file times: another
    host's install. Put ``top`` first on ``sys.path`` to import it."""
    if package is None:
        import tvm_ffi

        package = Path(tvm_ffi.__file__).parent
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(package, top / "tvm_ffi", copy_function=shutil.copy, ignore=ignore)
    if not (package / "include").is_dir():  # a source tree's: laid out as a wheel's
        tree = package.parents[1]
        shutil.copytree(tree / "include", top / "tvm_ffi" / "include", copy_function=shutil.copy)
        shutil.copytree(tree / "cmake", top / "tvm_ffi" / "share" / "cmake" / "tvm_ffi",
                        copy_function=shutil.copy)  # fmt: skip
    return top
