"""A library built as apache-tvm-ffi's clients build theirs (tests/abi/runtime/client_lib.cc:
apache's headers, -ltvm_ffi against apache's runtime) runs in our runtime exactly as in
apache's: a C driver (client_driver.c, c_api.h only) loads it through "ffi.ModuleLoadFromFile"
and exchanges every boundary type with it; its output with our libtvm_ffi.so first on the
library path equals its output with apache's, except for the two messages our runtime words
itself (listed below). Maps and dicts built by the library's inline code (small and dense) are
read and changed through the runtime's ffi.Map*/ffi.Dict* globals, and the runtime's through the
library."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from helpers import apache_wheel, next_runtime

HERE = Path(__file__).resolve().parent / "runtime"

#: apache's line -> ours, where the message comes from the runtime and ours names more.
OUR_WORDING = {
    "dtype_wider -> rc=-1 ValueError: unknown dtype `not_a_dtype`": (
        "dtype_wider -> rc=-1 ValueError: unknown dtype 'not_a_dtype': expected int<bits>, "
        "uint<bits>, float<bits>, bfloat16, bool, handle, void or a float8/6/4 name such as "
        "float8_e4m3fn, optionally followed by x<lanes>"
    ),
    "from_imports -> rc=-1 RuntimeError: Cannot find function client.nothing in the imported "
    "modules or global registry.": (
        "from_imports -> rc=-1 RuntimeError: function 'client.nothing' is neither in the modules "
        "this library imports nor a global function"
    ),
    "ffi.Map odd -> rc=-1 InternalError: Check failed: args.size() % 2 == 0 (1 vs. 0) : ": (
        "ffi.Map odd -> rc=-1 ValueError: ffi.Map: takes alternating keys and values (got 1 "
        "arguments)"
    ),
    "ffi.MapSize int -> rc=-1 TypeError: Mismatched type on argument #0 when calling: "
    "`ffi.MapSize(0: ffi.Map) -> int`. Expected `ffi.Map` but got `int`": (
        "ffi.MapSize int -> rc=-1 TypeError: ffi.MapSize: argument 0 must be ffi.Map (got int)"
    ),
}
# An absent key: apache says "key is not in Map"; ours names the function, the key and the type.
for _fn, _key, _type in [("Map", "k2", "Map"), ("Map", "zz", "Map"), ("Dict", "zz", "Dict")]:
    OUR_WORDING[f"ffi.{_fn}GetItem {_key} -> rc=-1 KeyError: key is not in Map"] = (
        f"ffi.{_fn}GetItem {_key} -> rc=-1 KeyError: ffi.{_fn}GetItem: key '{_key}' is not in "
        f"the {_type}"
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory, wheel) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("client")
    lib = apache_wheel.build_library(wheel, HERE / "client_lib.cc", folder / "libclient.so")
    driver = folder / "client_driver"
    apache_lib = apache_wheel.runtime_path(wheel).parent
    cmd = ["cc", "-std=c11", "-Wall", "-Werror", "-I", str(next_runtime.INCLUDE)]
    cmd += [str(HERE / "client_driver.c"), "-L", str(apache_lib), "-ltvm_ffi", "-ldl"]
    subprocess.run([*cmd, "-o", str(driver)], check=True)
    return lib, driver


def run(driver: Path, lib: Path, runtime: Path, *extra: str) -> tuple[str, str]:
    env = dict(os.environ, LD_LIBRARY_PATH=str(runtime.parent))
    args = [str(driver), str(lib), *extra]
    proc = subprocess.run(args, capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout, proc.stderr


def test_library_imports_what_our_runtime_exports(built):
    lib, _ = built
    undefined = subprocess.run(["nm", "-u", str(lib)], capture_output=True, text=True).stdout
    imported = {line.split()[-1] for line in undefined.splitlines()}
    exported = subprocess.run(
        ["nm", "-D", "--defined-only", str(next_runtime.build())], capture_output=True, text=True
    ).stdout
    ours = {line.split()[-1] for line in exported.splitlines()}
    wanted = {s for s in imported if s.startswith(("TVMFFI", "_ZN3tvm3ffi"))}
    assert "_ZN3tvm3ffi9ModuleObj11GetFunctionERKNS0_6StringEb" in wanted
    assert wanted <= ours


def test_same_output_in_both_runtimes(built, wheel):
    lib, driver = built
    ours, ours_err = run(driver, lib, next_runtime.build())
    apache, apache_err = run(driver, lib, apache_wheel.runtime_path(wheel))
    # The process held one runtime each time, and the library bound to it.
    assert ours_err == f"runtime: {next_runtime.build()}\nmapped: {next_runtime.build()}\n"
    apache_path = apache_wheel.runtime_path(wheel)
    assert apache_err == f"runtime: {apache_path}\nmapped: {apache_path}\n"
    expected = "\n".join(OUR_WORDING.get(line, line) for line in apache.split("\n"))
    assert ours == expected
    for line in [
        "ctx_value -> int 119",
        "echo_int -> int -9223372036854775808",
        "str_len -> int 10",
        "array[int 2, int 3, int 4] (unchanged after the callee's push_back)",
        "list[int 2, int 3, int 4, int 9] (the callee appended)",
        "call_cb -> rc=-1 ValueError: 13 is unlucky",
        "allocated tensor released: deleted=2",
        "icheck_positive -> rc=-1 InternalError: Check failed: (x > 0) is false: "
        "x must be positive, got -1",
        "call_mod -> str[10] 'library:41'",
        "point_y -> int 20",
        "map_walk -> str[38] 'k0:0,k1:10,k2:20,k3:30|sum=60|has_zz=0'",
        "ffi.MapGetItemOrMissing zz -> object ffi.Object",
        "ffi.Map -> map{str[2] 'k0': int 0, str[2] 'k1': int 10}",
        "ffi.DictCount 3 -> int 0",
        "dict{str[2] 'k0': int 0, int 1: int -1, str[2] 'k2': int -2, str[2] 'k4': int -4, "
        "int 5: int -5, str[5] 'added': int 99}",
        "dict_change -> int 33",
        "ffi.DictSize after clear -> int 0",
        "done",
    ]:
        assert line + "\n" in ours


def test_library_code_outlives_its_module(tmp_path):
    # Ours never unloads a library: a function object it made still runs after the last module
    # of the library is released (closing it would leave the object's code unmapped).
    runtime = next_runtime.build()
    lib, driver = tmp_path / "libclosure.so", tmp_path / "outlive_driver"
    inc = ["-I", str(next_runtime.INCLUDE)]
    link = ["-L", str(runtime.parent), "-ltvm_ffi"]
    subprocess.run(
        ["cc", "-shared", "-fPIC", *inc, str(HERE / "closure_lib.c"), *link, "-o", str(lib)],
        check=True,
    )
    subprocess.run(
        ["cc", *inc, str(HERE / "outlive_driver.c"), *link, "-o", str(driver)], check=True
    )
    env = dict(os.environ, LD_LIBRARY_PATH=str(runtime.parent))
    proc = subprocess.run([str(driver), str(lib)], capture_output=True, text=True, env=env)
    assert (proc.returncode, proc.stdout) == (0, "module released\nclosure(21): rc=0 value=42\n")
