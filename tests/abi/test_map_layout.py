"""staging/include/tvm/ffi/detail/map_layout.h against apache-tvm-ffi 0.1.15.post2's compiled
map code: tests/abi/map/apache_maps.cc is built with apache's headers and linked to its
libtvm_ffi.so; tests/abi/map/map_driver.cc is built with our header and runs the checks (maps of
1 to 1,000 entries built by either side and read, iterated and changed by the other, key hashes,
a 2,000-step randomized differential test), plain and under ASan/UBSan.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import apache_wheel

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
STAGING = ROOT / "include"
SOURCES = HERE / "map"
CXX = os.environ.get("CXX", "c++")
WARNINGS = ["-Wall", "-Wextra", "-Werror"]
SANITIZE = ["-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"]


def run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    # a map whose layout is wrong can send the other side's lookup round a chain forever
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kwargs)


@pytest.fixture(scope="module")
def apache_maps(tmp_path_factory) -> Path:
    wheel = apache_wheel.fetch_wheel()
    if wheel is None:
        pytest.skip(f"no apache-tvm-ffi wheel and no network (set {apache_wheel.WHEEL_ENV})")
    out = tmp_path_factory.mktemp("apache_maps") / "libapache_maps.so"
    return apache_wheel.build_library(wheel, SOURCES / "apache_maps.cc", out)


def build_driver(apache_maps: Path, output: Path, *flags: str) -> Path:
    runtime = apache_wheel.runtime_path(apache_wheel.fetch_wheel()).parent
    cmd = [CXX, "-std=c++17", *WARNINGS, *flags, "-I", str(STAGING), str(SOURCES / "map_driver.cc")]
    cmd += [str(apache_maps), "-L", str(runtime), "-ltvm_ffi", "-o", str(output)]
    cmd += [f"-Wl,-rpath,{apache_maps.parent}:{runtime}"]
    proc = run(cmd)
    if proc.returncode != 0:
        pytest.fail(f"build failed: {' '.join(cmd)}\n{proc.stderr}")
    return output


def run_driver(exe: Path, *args: str, env: dict[str, str] | None = None) -> str:
    proc = run([str(exe), *args], env=env)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert output.strip().splitlines()[-1] == "11 passed, 0 failed", output
    return output


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_map_layout_matches_apache(apache_maps: Path, tmp_path: Path, opt: str) -> None:
    exe = build_driver(apache_maps, tmp_path / "map_driver", opt)
    output = run_driver(exe)
    for case in [
        "maps_built_by_either_side_agree",
        "jump_distances_and_table_sizes",
        "reverse_iteration",
        "key_hash_and_equality_match_apache",
        "keys_with_type_hooks",
        "key_type_hooks_and_their_errors",
        "deleter_flags",
        "dict_grows_in_place_and_shared_map_is_copied",
        "assignment_order",
        "maps_changed_by_both_sides_in_turn",
        "randomized_differential",
    ]:
        assert f"ok   {case}\n" in output


@pytest.mark.parametrize("seed", ["1", "2", "3"])
def test_randomized_differential_other_seeds(apache_maps: Path, tmp_path: Path, seed: str) -> None:
    exe = build_driver(apache_maps, tmp_path / "map_driver", "-O2")
    run_driver(exe, seed)


@pytest.mark.slow_compile
def test_map_layout_under_sanitizers(apache_maps: Path, tmp_path: Path) -> None:
    probe = tmp_path / "probe.cc"
    probe.write_text("int main() { return 0; }\n")
    if run([CXX, *SANITIZE, str(probe), "-o", str(tmp_path / "probe")]).returncode != 0:
        pytest.skip("the compiler has no address/undefined sanitizer runtime")
    exe = build_driver(apache_maps, tmp_path / "map_driver", *SANITIZE)
    # apache's library is not instrumented; leaks of keys, values and tables are still found
    env = {**os.environ, "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0"}
    run_driver(exe, env=env)


def test_inline_code_is_not_exported(tmp_path: Path) -> None:
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("no nm (binutils)")
    lib = tmp_path / "libvisibility.so"
    cmd = [CXX, "-std=c++17", *WARNINGS, "-O0", "-fPIC", "-shared", "-I", str(STAGING)]
    cmd += [str(SOURCES / "visibility_lib.cc"), "-o", str(lib)]
    proc = run(cmd)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr}"
    symbols = run([nm, "-D", "--defined-only", str(lib)]).stdout.split()
    assert [s for s in symbols if "visibility_lib" in s or "Map" in s] == ["visibility_lib_entry"]
