"""CPU smoke test of benchmarks/: every script imports, parses its arguments, turns fake
measurements into its table and JSON, and the subprocess protocol used for apache-tvm-ffi works.
No timing is asserted anywhere: the numbers below are made up.
"""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "benchmarks"
SCRIPTS = ("call_overhead", "launch_overhead", "build_time", "load_time")
FAKE_ENV = {"gpu": "Fake GPU (sm_90)", "cuda_arch_list_env": None}


@pytest.fixture(scope="module")
def bench():
    """The benchmark modules, imported the way the scripts import each other."""
    sys.path.insert(0, str(BENCH))
    try:
        names = ("_common", "_ref", "_sources", "_jit_worker", *SCRIPTS)
        yield {name: importlib.import_module(name) for name in names}
    finally:
        sys.path.remove(str(BENCH))


def ok(bench, samples):
    return bench["_common"].ok_row("x", samples)


def na(bench, reason):
    return bench["_common"].na_row("x", reason)


# ----------------------------------------------------------------------------- arguments


@pytest.mark.parametrize("name", SCRIPTS)
def test_parse_args_defaults_and_quick(bench, name):
    mod = bench[name]
    args = mod.parse_args([])
    assert args.quick is False
    assert Path(args.json) == BENCH / "results" / f"{name}.json"
    assert args.worker is None
    args = mod.parse_args(["--quick", "--json", "/tmp/x.json", "--ref-path", "/nowhere"])
    assert (args.quick, args.json, args.ref_path) == (True, "/tmp/x.json", "/nowhere")
    quick, full = mod.params(True), mod.params(False)
    assert set(quick) == set(full)


@pytest.mark.parametrize("name", SCRIPTS)
def test_ref_options_are_exclusive(bench, name):
    with pytest.raises(SystemExit):
        bench[name].parse_args(["--ref-wheel", "a.whl", "--ref-path", "dir"])


def test_scripts_do_nothing_at_import():
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); "
        + "; ".join(f"import {n}" for n in SCRIPTS)
        + "; print(sorted(m for m in ('torch', 'tvm_ffi', "
    )
    code += "'triton', 'cupy') if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code, str(BENCH)], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "[]"


# ----------------------------------------------------------------------------- tables


def test_call_overhead_report(bench):
    mod, c = bench["call_overhead"], bench["_common"]
    raw = {
        "params": mod.params(True),
        "device": "cuda",
        "ref": "fake.whl",
        "versions": {"ours": "0.1.0", "ref": "0.1.15"},
        "rows": {
            "ours_tensors3": ok(bench, [0.40, 0.41, 0.39]),
            "ref_tensors3": ok(bench, [0.9, 0.95]),
            "ours_noargs": na(bench, "RuntimeError: boom"),
            "ref_noargs": ok(bench, [0.3]),
            "python_def": ok(bench, [0.03]),
            **mod.jit_rows(
                "ours_jit",
                {"cold_s": [2.5, 2.7], "warm_same_s": [0.001], "warm_fresh_s": [0.004]},
                None,
            ),
            **mod.jit_rows("ref_jit", None, "no wheel"),
        },
    }
    report = mod.make_report(raw, "quick", FAKE_ENV)
    text = c.render_report(report)
    assert "tvm_ffi (this project), 3 torch CUDA tensors" in text
    assert "apache-tvm-ffi 0.1.15 (own process)" in text
    assert "target <= 0.45 us: MET" in text
    assert "target <= 3.0 s: MET" in text  # cold 2.6 s
    assert "target <= 3.0 ms: MET" in text  # warm same 1 ms
    assert "target <= 3.0 ms: MISSED" in text  # warm fresh 4 ms
    assert "n/a (RuntimeError: boom)" in text
    assert "n/a (no wheel)" in text
    assert "0.400" in text and "0.390" in text  # median and min
    json.loads(json.dumps(report, default=str))


def _launch_rows(bench, ours_us):
    rows = {
        "cpp_rt_launch_3": ok(bench, [2.0, 2.1, 1.9]),
        "cpp_rt_library_launch_3": ok(bench, [2.1]),
        "cpp_drv_launch_3": ok(bench, [2.0]),
        "cpp_drv_launch_ex_3": ok(bench, [2.05]),
        "ours_launch3": ok(bench, [ours_us]),
        "ref_launch3": ok(bench, [3.4]),
        "triton3": ok(bench, [13.0]),
        "cupy3": ok(bench, [5.7]),
        "cuda_core3": na(bench, "ImportError: No module named 'cuda.core'"),
        "torch_add": ok(bench, [4.0]),
        "cpp_rt_launch_16": ok(bench, [2.3]),
        "ours_launch16": ok(bench, [2.9]),
        "cpp_rt_launch_ex_attrs_3": ok(bench, [2.4]),
        "ours_attrs3": ok(bench, [2.6]),
        "ours_nolaunch": ok(bench, [0.2]),
        "python_def": ok(bench, [0.04]),
        "cpp_end_rt_launch_3": ok(bench, [2.02]),
    }
    return {
        "params": bench["launch_overhead"].params(True),
        "rows": rows,
        "ref": "fake.whl",
        "versions": {"ref": "0.1.15"},
        "notes": [],
    }


def test_launch_overhead_report(bench):
    mod, c = bench["launch_overhead"], bench["_common"]
    report = mod.make_report(_launch_rows(bench, 2.2), "quick", FAKE_ENV)
    text = c.render_report(report)
    for label in (
        "C++ cudaLaunchKernel (floor)",
        "Triton @triton.jit launcher",
        "CuPy RawKernel",
        "cuda.core launch",
        "torch x.add_(1)",
        "LaunchConfig SetCluster + PDL",
    ):
        assert label in text
    assert "+0.200" in text  # 2.2 - 2.0 vs the section's floor
    assert "+0.600" in text  # 16 args: 2.9 - 2.3
    assert "n/a (ImportError: No module named 'cuda.core')" in text
    assert "(<= +0.3: MET); fastest Python launcher: MET" in text
    assert "re-run at the end: 2.020 us" in text
    assert text.splitlines()[-1].startswith("note: target:")

    missed = c.render_report(mod.make_report(_launch_rows(bench, 3.5), "quick", FAKE_ENV))
    assert "(<= +0.3: MISSED); fastest Python launcher: MISSED (ref 3.400 us)" in missed


def test_launch_overhead_report_without_floor(bench):
    mod, c = bench["launch_overhead"], bench["_common"]
    raw = {"params": mod.params(True), "rows": {}, "notes": ["C++ floor failed: nvcc"]}
    text = c.render_report(mod.make_report(raw, "quick", FAKE_ENV))
    assert "n/a (not run)" in text
    assert "not measured" in text
    assert "C++ floor failed: nvcc" in text


def test_build_time_report(bench):
    mod, c = bench["build_time"], bench["_common"]
    rows = {}
    for case, _ in mod.CASES:
        rows.update(
            mod.series_rows(
                f"ours_{case}",
                {"cold_s": [1.5, 1.4], "warm_same_s": [2e-4], "warm_fresh_s": [2e-3]},
                None,
            )
        )
        rows.update(mod.series_rows(f"ref_{case}", None, "skipped (--no-ref)"))
    rows["ours_nvrtc_cold"] = ok(bench, [0.08])
    rows["ours_nvrtc_warm_same"] = ok(bench, [0.02])
    rows["ref_nvrtc_cold"] = na(bench, "skipped (--no-ref)")
    raw = {
        "params": mod.params(True),
        "arch": "sm_90",
        "rows": rows,
        "versions": {},
        "ref": "skipped",
    }
    text = c.render_report(mod.make_report(raw, "quick", FAKE_ENV))
    assert "tvm_ffi (this project): 10 embedded CUBINs" in text
    assert "1.450" in text and "0.200" in text and "2.000" in text
    assert "tvm_ffi (this project): NVRTC compile" in text and "20.000" in text
    assert text.count("n/a (skipped (--no-ref))") == 4


def test_load_time_report(bench):
    mod, c = bench["load_time"], bench["_common"]
    t0 = 10**12
    ms = 10**6

    def child(first_k0_at):
        marks = {
            "torch_ready": t0 + 900 * ms,
            "import": t0 + 905 * ms,
            "load_module": t0 + 906 * ms,
            "first_k0": t0 + first_k0_at * ms,
            "second_k0": t0 + (first_k0_at + 0.05) * ms,
            "first_k99": t0 + (first_k0_at + 0.5) * ms,
            "rest": t0 + (first_k0_at + 40) * ms,
        }
        rss = {
            "torch_ready": 500 * 1024,
            "load_module": 502 * 1024,
            "first_k0": 510 * 1024,
            "first_k99": 511 * 1024,
            "all": 530 * 1024,
        }
        return mod.child_metrics(
            {"marks": marks, "rss_kib": rss, "start": t0, "exit": t0 + 1200 * ms}
        )

    base = mod.child_metrics(
        {
            "marks": {"torch_ready": t0 + 900 * ms},
            "rss_kib": {"torch_ready": 500 * 1024},
            "start": t0,
            "exit": t0 + 1000 * ms,
        }
    )
    rows = {
        "baseline": {
            "status": "ok",
            "metrics": {k: mod._common.summarize([v]) for k, v in base.items()},
        },
        "many": {
            "status": "ok",
            "metrics": {k: mod._common.summarize([v]) for k, v in child(910).items()},
        },
        "one": na(bench, "library not built"),
    }
    raw = {
        "params": mod.params(True),
        "rows": rows,
        "notes": [],
        "lib_bytes": {"many": 2048 * 1024},
        "build_s": 12.0,
    }
    text = c.render_report(mod.make_report(raw, "quick", FAKE_ENV))
    assert "100 CUBINs, one kernel each" in text
    assert "910.0" in text and "+10.0" in text  # start -> first k0, vs baseline 900
    assert "+2.0" in text and "+10.0" in text  # RSS growth after load_module / first k0
    assert "n/a (library not built)" in text
    assert "many: 2048 KiB" in text


def test_saved_json_renders_from_the_command_line(bench, tmp_path):
    mod = bench["launch_overhead"]
    report = mod.make_report(_launch_rows(bench, 2.2), "quick", FAKE_ENV)
    path = bench["_common"].write_json(tmp_path / "sub" / "launch.json", report)
    out = subprocess.run(
        [sys.executable, str(BENCH / "_common.py"), str(path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "C++ cudaLaunchKernel (floor)" in out


def test_run_all_script_is_valid_bash():
    subprocess.run(["bash", "-n", str(BENCH / "run_all.sh")], check=True)


# ----------------------------------------------------------------------------- helpers


def test_time_calls_structure(bench):
    c = bench["_common"]
    calls = []
    syncs = []
    samples = c.time_calls(
        lambda a, b: calls.append((a, b)),
        (1, 2),
        iters=7,
        samples=3,
        warmup=5,
        sync=lambda: syncs.append(1),
    )
    assert len(samples) == 3 and all(s >= 0 for s in samples)
    assert len(calls) == 5 + 7 * 3 and calls[0] == (1, 2)
    assert len(syncs) == 1 + 2 * 3
    stats = c.summarize([3.0, 1.0, 2.0])
    assert stats == {"median": 2.0, "min": 1.0, "max": 3.0, "n": 3}


def test_measure_row_turns_errors_into_na(bench):
    c = bench["_common"]

    def broken():
        raise ImportError("No module named 'cupy'\nmore text")

    row = c.measure_row("cupy3", broken)
    assert row == {
        "path": "cupy3",
        "status": "n/a",
        "reason": "ImportError: No module named 'cupy'",
    }
    assert c.note_cell(row) == "n/a (ImportError: No module named 'cupy')"
    assert len(c.na_row("x", "y" * 500)["reason"]) == 200


def test_failure_reason_names_the_build_error(bench):
    r = bench["_ref"]
    log = """Traceback (most recent call last):
  File "x.py", line 1, in <module>
RuntimeError: ninja exited with status 1
FAILED: lib.so
/usr/bin/ld: cannot find -lcudart: No such file or directory
collect2: error: ld returned 1 exit status
ninja: build stopped: subcommand failed.
"""
    assert r.failure_reason(log) == (
        "RuntimeError: ninja exited with status 1 | "
        "/usr/bin/ld: cannot find -lcudart: No such file or directory"
    )
    assert r.failure_reason("ModuleNotFoundError: No module named 'cupy'\n") == (
        "ModuleNotFoundError: No module named 'cupy'"
    )
    assert r.failure_reason("") == "no output"


def test_floor_output_parsing(bench):
    parsed = bench["_sources"].parse_floor_output(
        "rt_launch_3 2.1 2.0 2.2\ndrv_launch_ex_3 n/a cuLibraryLoadData: CUresult 200\n\ngarbage\n"
    )
    assert parsed == {
        "rt_launch_3": [2.1, 2.0, 2.2],
        "drv_launch_ex_3": "cuLibraryLoadData: CUresult 200",
    }


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


# ----------------------------------------------------------------------------- C++ sources


@pytest.fixture(scope="module")
def nvcc(bench):
    path = bench["_common"].nvcc_path()
    if path is None:
        pytest.skip("needs nvcc")
    return path


def test_generated_sources_compile(bench, nvcc, tmp_path):
    """The floor program links; every wrapper compiles against this repository's headers.

    Wrappers without device code get a fast host-only syntax check (c++ -fsyntax-only); the
    sources with kernels go through nvcc."""
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
    device = {"add_one.cu": s.ADD_ONE_CUDA, "kernels.cu": s.EMPTY_KERNELS_CU + s.many_kernels_cu(3)}

    def run(name, text, cmd):
        (tmp_path / name).write_text(text)
        return name, subprocess.run([*cmd, str(tmp_path / name)], capture_output=True, text=True)

    cxx = shutil.which("c++") or shutil.which("g++")
    with ThreadPoolExecutor(max_workers=4) as pool:
        jobs = [
            pool.submit(
                run,
                "floor.cu",
                s.floor_program_source(),
                [nvcc, "-O2", "-std=c++17", "-arch=sm_90", "-o", str(tmp_path / "floor")],
            )
        ]
        jobs += [
            pool.submit(
                run,
                name,
                text,
                [
                    nvcc,
                    "-std=c++17",
                    "-c",
                    f"-I{REPO / 'include'}",
                    "-o",
                    str(tmp_path / f"{name}.o"),
                ],
            )
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
    assert (tmp_path / "floor").is_file()
