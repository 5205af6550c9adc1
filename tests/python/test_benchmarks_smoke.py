"""CPU smoke test of benchmarks/: every script runs in its short mode, exits 0 and prints its
tables (rows that need a GPU, a client wheel or apache-tvm-ffi read ``n/a (reason)``); the C++
and CUDA sources they build compile; the apache-tvm-ffi worker protocol works on a fake wheel.
No timing is asserted anywhere.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from helpers import apache_wheel

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "benchmarks"

# Each script's cheapest run: --quick, no apache-tvm-ffi rows; build_time the build-speed table
# alone; client_compile one module without wheels (every row n/a, saying why).
SHORT = {
    "call_overhead": ["--quick", "--no-ref"],
    "launch_overhead": ["--quick", "--no-ref"],
    "build_time": ["--quick", "--no-ref", "--only-speed", "--many", "2"],
    "load_time": ["--quick", "--no-ref"],
    "header_cost": ["--quick"],
    "kwargs_overhead": ["--quick"],
    "client_compile": ["--quick", "--no-ref", "--host-only", "--modules", "flashinfer.activation"],
    "remote_cache": ["--quick"],
    "compiler_cache": ["--quick"],
}


@pytest.fixture(scope="module")
def bench():
    """The benchmark modules, imported the way the scripts import each other."""
    sys.path.insert(0, str(BENCH))
    try:
        names = ("_common", "_ref", "_sources", "_jit_worker", "launch_overhead", "call_overhead")
        yield {name: importlib.import_module(name) for name in (*names, "build_time")}
    finally:
        sys.path.remove(str(BENCH))


def test_scripts_do_nothing_at_import():
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); "
        + "; ".join(f"import {n}" for n in SHORT)
        + "; print(sorted(m for m in ('torch', 'tvm_ffi', 'triton', 'cupy') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(BENCH)], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "[]"


@pytest.mark.parametrize("name", SHORT)
def test_script_runs_in_short_mode(name, tmp_path):
    """Exit 0, the JSON written, and the tables printed last are the JSON's (what
    ``python benchmarks/_common.py FILE.json`` prints again)."""
    out = tmp_path / f"{name}.json"
    env = dict(os.environ, TVM_FFI_CACHE_DIR=str(tmp_path / "cache"), PYTHONUNBUFFERED="1")
    env["TVM_FFI_CLIENTS_DIR"] = str(tmp_path / "clients")  # client_compile installs nothing
    env["PIP_NO_INDEX"] = "1"
    argv = [sys.executable, str(BENCH / f"{name}.py"), *SHORT[name], "--json", str(out)]
    if name == "client_compile":
        argv += ["--client-wheels", str(tmp_path / "no-wheels")]
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["benchmark"] == name and report["mode"] == "quick"
    assert report["sections"], f"{name} printed no table"
    again = subprocess.run(
        [sys.executable, str(BENCH / "_common.py"), str(out)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert proc.stdout.endswith(again.rstrip("\n") + "\n")
    for section in report["sections"]:
        assert section["title"] in proc.stdout
        assert all(len(row) == len(section["headers"]) for row in section["cells"])
    if name == "header_cost":  # CPU only: its cells are measured (without cuda.h: why not)
        rows = report["raw"]["rows"]
        guide_skipped = rows[0].get("skipped") == "no cuda.h (set CUDA_HOME)"
        # A wrapper whose headers are found is preprocessed once ("-E lines") before it is timed.
        guide_modes = (
            ["-fsyntax-only", "-O2 compile"]
            if guide_skipped
            else ["-E lines", "-fsyntax-only", "-O2 compile"]
        )
        expected = [("guide-style (CUBIN launcher)", m) for m in guide_modes]
        expected += [
            ("apache-style (prelude only)", m) for m in ("-E lines", "-fsyntax-only", "-O2 compile")
        ]
        assert [(r["wrapper"], r["mode"]) for r in rows] == expected
        for row in rows:
            if row["mode"] == "-E lines":
                assert row["lines"]["now"] > 0
            else:
                assert (
                    row.get("skipped") == "no cuda.h (set CUDA_HOME)" or row["seconds"]["now"] > 0
                )
    if name == "client_compile":
        (row,) = report["raw"]["host pass"]
        assert row["reason"].startswith("clients not installed: RuntimeError: installing ")


def test_header_cost_prelude_is_load_inline_s():
    """The script compiles wrappers the way load_inline does: with its prelude."""
    sys.path.insert(0, str(BENCH))
    try:
        header_cost = importlib.import_module("header_cost")
    finally:
        sys.path.remove(str(BENCH))
    from tvm_ffi.cpp import _spec

    assert header_cost.PRELUDE == _spec.PRELUDE_INCLUDES


def test_header_cost_refuses_a_bad_baseline(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(BENCH / "header_cost.py"), "--quick", "--baseline", "no-such-rev"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert proc.stderr.startswith("--baseline no-such-rev: git archive failed: ")


def test_header_cost_refuses_an_include_dir_without_the_headers(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(BENCH / "header_cost.py"), "--quick", "--include", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert proc.stderr == f"--include {tmp_path}: no tvm/ffi/function.h there\n"


# ----------------------------------------------------------------------------- the reference


FAKE_INIT = '__version__ = "0.0.0-fake"\n'
FAKE_CPP = """
import types

def load_inline(name, **kwargs):
    names = list(kwargs.get("functions") or []) or ["launch_k0", "launch_k9"]
    return types.SimpleNamespace(**{n: (lambda *a: None) for n in names})
"""


def _fake_wheel(tmp_path: Path, with_core_so: bool = False) -> Path:
    wheel = tmp_path / "apache_tvm_ffi-0.0.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("tvm_ffi/__init__.py", FAKE_INIT)
        zf.writestr("tvm_ffi/cpp/__init__.py", FAKE_CPP)
        if with_core_so:
            zf.writestr("tvm_ffi/core.cpython-312-x86_64-linux-gnu.so", "")
    return wheel


def test_reference_runs_in_its_own_process(bench, tmp_path):
    r, jit = bench["_ref"], bench["_jit_worker"]
    args = bench["call_overhead"].parse_args(["--ref-wheel", str(_fake_wheel(tmp_path))])
    ref_dir, desc = r.resolve_ref(args)
    assert ref_dir is not None and (Path(ref_dir) / "tvm_ffi" / "__init__.py").is_file()
    assert desc.startswith("apache_tvm_ffi-0.0.0")
    series = jit.jit_series(
        "ref", "noop_cpp", cold_reps=1, fresh_reps=1, warm_repeats=2, ref_dir=ref_dir
    )
    assert series["version"] == "0.0.0-fake"
    assert len(series["cold_s"]) == 1 and len(series["warm_same_s"]) == 2
    assert len(series["warm_fresh_s"]) == 1


def test_worker_refuses_the_wrong_tvm_ffi(bench, tmp_path):
    r = bench["_ref"]
    ref_dir = r.unpack_wheel(_fake_wheel(tmp_path, with_core_so=True))
    with pytest.raises(RuntimeError, match="asked for this project's tvm_ffi but imported"):
        r.run_worker(
            "_jit_worker.py",
            ["--mode", "cold", "--case", "noop_cpp"],
            impl="ours",
            extra_env={"PYTHONPATH": ref_dir},
        )


def test_missing_reference_is_a_reason(bench, tmp_path):
    r = bench["_ref"]
    args = bench["build_time"].parse_args(["--ref-path", str(tmp_path)])
    assert r.resolve_ref(args) == (None, f"--ref-path {tmp_path} has no tvm_ffi/__init__.py")
    assert r.resolve_ref(bench["build_time"].parse_args(["--no-ref"]))[0] is None


def test_wheel_for_another_python_is_a_reason(bench, tmp_path):
    r = bench["_ref"]
    here = f"cp{sys.version_info.major}{sys.version_info.minor}"
    other = "cp39" if here != "cp39" else "cp310"
    wheel = tmp_path / f"apache_tvm_ffi-0.1.15-{other}-{other}-manylinux_2_28_x86_64.whl"
    wheel.write_bytes(b"")
    args = bench["call_overhead"].parse_args(["--ref-wheel", str(wheel)])
    assert r.resolve_ref(args) == (
        None,
        f"built for {other}, this interpreter is {here}: wheel {wheel.name}",
    )
    fits = (f"x-1-{here}-{here}-linux_x86_64.whl", "x-1-py3-none-any.whl", "x-1-cp38-abi3-any.whl")
    for name in fits:
        assert r.wheel_python_mismatch(name) is None, name
    assert r.wheel_python_mismatch("x-1-cp399-abi3-any.whl") is not None


# ----------------------------------------------------------------------------- C++ sources


@pytest.fixture(scope="module")
def nvcc(bench):
    path = bench["_common"].nvcc_path()
    if path is None:
        pytest.skip("needs nvcc")
    return path


def test_generated_sources_compile(bench, nvcc, tmp_path):
    """Every C++/CUDA source compiles against this repository's headers, for sm_90.

    The sources with kernels (the C++ floor module among them) go through nvcc; the wrappers
    without device code get a fast host-only syntax check (c++ -fsyntax-only)."""
    s = bench["_sources"]
    # nvcc on PATH may be a wrapper script: look for the toolkit's headers in the usual places.
    candidates = [Path(nvcc).resolve().parent.parent / "include", Path("/usr/local/cuda/include")]
    cuda_include = next((p for p in candidates if (p / "cuda.h").is_file()), candidates[0])
    host_only = {
        "launch.cc": s.launch_wrapper_source(),
        "launch_attrs.cc": s.launch_attrs_wrapper_source(),
        "many.cc": s.many_launchers_source(3, one_cubin=False),
        "one.cc": s.many_launchers_source(3, one_cubin=True),
        "noop.cc": s.NOOP_CPP,
    }
    device = {
        "floor.cu": s.floor_module_source(),
        "add_one.cu": s.ADD_ONE_CUDA,
        "kernels.cu": s.EMPTY_KERNELS_CU + s.many_kernels_cu(3),
    }

    def run(name, text, cmd):
        (tmp_path / name).write_text(text)
        return name, subprocess.run([*cmd, str(tmp_path / name)], capture_output=True, text=True)

    nvcc_cmd = [nvcc, "-std=c++17", "-arch=sm_90", "-c", f"-I{REPO / 'include'}", "-o"]
    cxx = shutil.which("c++") or shutil.which("g++")
    with ThreadPoolExecutor(max_workers=4) as pool:
        jobs = [
            pool.submit(run, name, text, [*nvcc_cmd, str(tmp_path / f"{name}.o")])
            for name, text in device.items()
        ]
        if cxx is not None:
            jobs += [
                pool.submit(
                    run,
                    name,
                    text,
                    [
                        cxx,
                        "-std=c++17",
                        "-fsyntax-only",
                        f"-I{REPO / 'include'}",
                        f"-I{cuda_include}",
                    ],
                )
                for name, text in host_only.items()
            ]
        results = [job.result() for job in jobs]
    failed = {name: proc.stderr[-2000:] for name, proc in results if proc.returncode != 0}
    assert not failed, failed
    assert (tmp_path / "floor.cu.o").is_file()


def test_floor_module_exports_every_loop(bench):
    """The rows ask the floor module for these names: each must be exported by the source."""
    s, mod = bench["_sources"], bench["launch_overhead"]
    src = s.floor_module_source()
    assert "TVM_FFI_DLL_EXPORT_TYPED_FUNC(floor_setup, FloorSetup);" in src
    for name in {*mod.FLOOR_ROWS.values(), *mod.REF_FLOORS.values()}:
        assert name in s.FLOOR_LOOPS
        assert f"TVM_FFI_DLL_EXPORT_TYPED_FUNC({name}, Loop_{name});" in src


def test_call_overhead_alternates_samples_with_apache(tmp_path):
    """With apache-tvm-ffi's wheel, both implementations serve samples in turn: every call row
    has as many samples on each side, and the ratio is taken per pair of samples."""
    wheel = apache_wheel.require_wheel()
    out = tmp_path / "call.json"
    env = dict(os.environ, TVM_FFI_CACHE_DIR=str(tmp_path / "cache"))
    argv = [sys.executable, str(BENCH / "call_overhead.py"), "--quick", "--skip-jit"]
    argv += ["--device", "cpu", "--rounds", "1", "--ref-wheel", str(wheel), "--json", str(out)]
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    raw = json.loads(out.read_text())["raw"]
    rows = raw["rows"]
    samples = raw["params"]["samples"]
    for key in ("tensors3", "noargs", "alloc3", "python_def"):
        assert rows[f"ours_{key}"]["status"] == "ok", rows[f"ours_{key}"]
        assert rows[f"ref_{key}"]["status"] == "ok", rows[f"ref_{key}"]
        assert len(rows[f"ours_{key}"]["samples"]) == len(rows[f"ref_{key}"]["samples"]) == samples
    assert raw["versions"]["ref"] == apache_wheel.VERSION
    assert len(raw["ratios"]) == samples
    pairs = zip(rows["ours_tensors3"]["samples"], rows["ref_tensors3"]["samples"])
    assert raw["ratios"] == [o / r for o, r in pairs]
    assert f"median of {samples} sample pairs" in proc.stdout
