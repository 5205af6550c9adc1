"""Module imports: a library that embeds __tvm_ffi__library_bin (an import tree placing a
module of kind "test_path" under the library itself) is loaded with the import built by the
kind's global loader; ffi.ModuleGetFunction finds the import's functions only when asked to
search imports, and the library's own code finds them through __tvm_ffi__library_ctx and
TVMFFIEnvModLookupFromImports. Same output in our runtime and in apache's."""

from __future__ import annotations

import os
import struct
import subprocess
from pathlib import Path

import pytest

from helpers import apache_wheel, next_runtime

HERE = Path(__file__).resolve().parent / "runtime"


def library_bin(import_path: str) -> bytes:
    """Module 0 is the library ("_lib"), module 1 a "test_path" module, imported by 0."""

    def u64(x: int) -> bytes:
        return struct.pack("<Q", x)

    def vec(xs: list[int]) -> bytes:
        return u64(len(xs)) + b"".join(map(u64, xs))

    def blob(b: bytes) -> bytes:
        return u64(len(b)) + b

    body = vec([0, 1, 1]) + vec([1]) + blob(b"_lib") + blob(b"test_path")
    body += blob(import_path.encode())
    return u64(len(body)) + body


def importer_with(wheel, folder: Path, name: str, data: bytes) -> Path:
    """client_lib.cc with `data` as its __tvm_ffi__library_bin."""
    bin_source = folder / f"{name}_bin.cc"
    array = ", ".join(str(b) for b in data)
    bin_source.write_text(
        f'extern "C" __attribute__((visibility("default"))) const unsigned char '
        f"__tvm_ffi__library_bin[] = {{{array}}};\n"
    )
    return apache_wheel.build_library(
        wheel, HERE / "client_lib.cc", folder / f"lib{name}.so", str(bin_source)
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory, wheel):
    folder = tmp_path_factory.mktemp("imports")
    imported = apache_wheel.build_library(
        wheel, HERE / "shared_type_lib.cc", folder / "libimported.so", "-DSHARED_PAD=1"
    )
    importer = importer_with(wheel, folder, "importer", library_bin(str(imported)))
    driver = folder / "imports_driver"
    cmd = ["cc", "-std=c11", "-Wall", "-Werror", "-I", str(next_runtime.INCLUDE)]
    cmd += [str(HERE / "imports_driver.c"), "-L", str(apache_wheel.runtime_path(wheel).parent)]
    subprocess.run([*cmd, "-ltvm_ffi", "-o", str(driver)], check=True)
    return importer, driver


def run(driver, runtime: Path, lib: Path, status: int = 0) -> str:
    env = dict(os.environ, LD_LIBRARY_PATH=str(runtime.parent))
    proc = subprocess.run(
        [str(driver), str(lib)], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == status, proc.stdout + proc.stderr
    return proc.stdout


EXPECTED = """\
load the importer: rc=0 ffi.Module
imported function, own only: rc=0 None
imported function, imports searched: rc=0 ffi.Function
  called: rc=0 int 40
from_imports(size): rc=-1 TypeError: Mismatched number of arguments when calling: \
`size() -> int`. Expected 0 but got 1 arguments
get mod_query: rc=0 ffi.Function
mod_query(size, 0): rc=0 function=0 implements=0 doc=0 metadata=0
mod_query(size, 1): rc=0 function=1 implements=1 doc=0 metadata=0
"""


def test_imports_in_both_runtimes(built, wheel):
    importer, driver = built
    assert run(driver, next_runtime.build(), importer) == EXPECTED
    assert run(driver, apache_wheel.runtime_path(wheel), importer) == EXPECTED


def test_bad_import_trees_are_refused(tmp_path, built, wheel):
    _, driver = built
    truncated = library_bin("/nowhere")
    truncated = struct.pack("<Q", 12) + truncated[8:]
    lib = importer_with(wheel, tmp_path, "truncated", truncated)
    assert run(driver, next_runtime.build(), lib, status=1) == (
        f"load the importer: rc=-1 ValueError: library '{lib}': __tvm_ffi__library_bin is "
        "truncated\n"
    )
    unknown = library_bin("/nowhere").replace(b"test_path", b"test_zzzz")
    lib = importer_with(wheel, tmp_path, "unknown", unknown)
    assert run(driver, next_runtime.build(), lib, status=1) == (
        f"load the importer: rc=-1 RuntimeError: library '{lib}' embeds a module of kind "
        "'test_zzzz', and no loader 'ffi.Module.load_from_bytes.test_zzzz' is registered\n"
    )
