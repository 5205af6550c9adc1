"""CPU smoke test of benchmarks/: every script imports, parses its arguments, turns fake
measurements into its table and JSON, and the subprocess protocol used for apache-tvm-ffi works.
No timing is asserted anywhere: the numbers below are made up.
"""

from __future__ import annotations

import collections
import contextlib
import importlib
import json
import os
import shutil
import subprocess
import sys
import types
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "benchmarks"
SCRIPTS = ("call_overhead", "launch_overhead", "build_time", "load_time", "client_compile")
FAKE_ENV = {"gpu": "Fake GPU (sm_90)", "cuda_arch_list_env": None}


@pytest.fixture(scope="module")
def bench():
    """The benchmark modules, imported the way the scripts import each other."""
    sys.path.insert(0, str(BENCH))
    try:
        names = ("_common", "_ref", "_sources", "_jit_worker", "_interleave", *SCRIPTS)
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


def okl(bench, samples):
    """An ok row as launch_overhead makes them: with p10/p90."""
    return bench["_common"].ok_row("x", samples, **bench["_interleave"].spread(samples))


def _launch_rows(bench, ours_us, ref_floor=None):
    rows = {
        "cpp_rt3": okl(bench, [2.0, 2.1, 1.9]),
        "cpp_rt_static3": okl(bench, [2.05]),
        "cpp_drv3": okl(bench, [1.9]),
        "cpp_drv_ex3": okl(bench, [2.05]),
        "ours_launch3": okl(bench, [ours_us]),
        "ours_launch3_null": okl(bench, [ours_us + 0.1]),
        "ref_launch3": okl(bench, [3.4]),
        "triton3": okl(bench, [13.0]),
        "cupy3": okl(bench, [5.7]),
        "cuda_core3": na(bench, "ImportError: No module named 'cuda.core'"),
        "torch_add": okl(bench, [4.0]),
        "cpp_rt16": okl(bench, [2.3]),
        "ours_launch16": okl(bench, [2.9]),
        "cpp_rt_attrs3": okl(bench, [2.4]),
        "ours_attrs3": okl(bench, [2.6]),
        "ours_nolaunch": okl(bench, [0.2]),
        "ours_getstream": okl(bench, [0.25]),
        "python_def": okl(bench, [0.04]),
    }
    if ref_floor is not None:
        rows["ref_floor_rt3"] = okl(bench, [ref_floor])
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
        "C++ cudaLaunchKernel, cudaKernel_t from cudaLibraryLoadData (floor)",
        "C++ cuLaunchKernel, CUkernel from cuLibraryLoadData",
        "same on the default (NULL) stream",
        "Triton @triton.jit launcher",
        "CuPy RawKernel",
        "cuda.core launch",
        "torch x.add_(1)",
        "LaunchConfig SetCluster + PDL",
        "binding + TVMFFIEnvGetStream",
        "p10-p90 us",
    ):
        assert label in text
    assert "+0.200" in text  # 2.2 - 2.0 vs the section's floor
    assert "+0.600" in text  # 16 args: 2.9 - 2.3
    assert "1.920-2.080" in text  # the floor's p10-p90 (3 samples, interpolated)
    assert "TVMFFIEnvGetStream: +0.050" in text
    assert "CubinKernel::Launch: +1.950 (C++ cuLaunchKernel loop: 1.900)" in text
    assert "n/a (ImportError: No module named 'cuda.core')" in text
    assert "vs this process's floor (its own floor not measured)" in text
    assert "(<= +0.3: MET); fastest Python launcher: MET" in text
    assert text.splitlines()[-1].startswith("note: target:")

    missed = c.render_report(mod.make_report(_launch_rows(bench, 3.5), "quick", FAKE_ENV))
    assert "(<= +0.3: MISSED); fastest Python launcher: MISSED (ref 3.400 us)" in missed


def test_reference_is_compared_on_its_own_floor(bench):
    mod, c = bench["launch_overhead"], bench["_common"]
    # The reference's process measured 3.4 over its own floor of 2.4: +1.0, i.e. 3.0 here.
    text = c.render_report(mod.make_report(_launch_rows(bench, 3.1, 2.4), "quick", FAKE_ENV))
    assert "vs its own in-process floor (2.400 us)" in text
    assert "+1.000" in text
    assert "fastest Python launcher: MISSED (ref 3.000 us, floor-adjusted)" in text


def test_launch_overhead_pycuda_target(bench):
    mod, c = bench["launch_overhead"], bench["_common"]
    raw = _launch_rows(bench, 2.2)
    raw["rows"]["pycuda_launch3"] = okl(bench, [2.4])
    raw["rows"]["pycuda_bound3"] = okl(bench, [2.3])
    text = c.render_report(mod.make_report(raw, "quick", FAKE_ENV))
    assert "tvm_ffi.cuda kernel[grid, block](...), kernel[1, 1] bound once" in text
    assert (
        "note: target tvm_ffi.cuda: kernel.launch 2.400 us = floor +0.400 us (<= +0.5: MET); "
        "fastest Python launcher: MET"
    ) in text
    raw["rows"]["pycuda_launch3"] = okl(bench, [3.5])
    text = c.render_report(mod.make_report(raw, "quick", FAKE_ENV))
    assert "(<= +0.5: MISSED); fastest Python launcher: MISSED (ref 3.400 us)" in text


def test_launch_overhead_report_without_floor(bench):
    mod, c = bench["launch_overhead"], bench["_common"]
    raw = {"params": mod.params(True), "rows": {}, "notes": ["C++ floor failed: nvcc"]}
    text = c.render_report(mod.make_report(raw, "quick", FAKE_ENV))
    assert "n/a (not run)" in text
    assert "not measured" in text
    assert "C++ floor failed: nvcc" in text


def test_launch_overhead_drift_note(bench):
    mod = bench["launch_overhead"]
    rows = {"cpp_rt3": ok(bench, [2.0, 2.2, 2.0, 3.0, 3.2, 3.0])}
    assert mod.drift_notes(rows) == [
        "drift check: C++ cudaLaunchKernel floor median 2.000 us over the first half of "
        "the rounds, 3.000 us over the second"
    ]
    assert mod.drift_notes({}) == []


class _FakeTensor:
    def __init__(self, i):
        self.i = i

    def data_ptr(self):
        return 0x1000 + 16 * self.i

    def add_(self, value):
        pass


def _fake_torch(log):
    """Just what launch_overhead touches of torch, recording the streams made current."""
    tensors = iter(range(10**6))

    @contextlib.contextmanager
    def stream(s):
        log.append(("stream", s))
        yield

    cuda = types.SimpleNamespace(
        is_available=lambda: True,
        init=lambda: None,
        Stream=lambda: types.SimpleNamespace(cuda_stream=0xABC),
        stream=stream,
        default_stream=lambda: "default",
        synchronize=lambda: None,
        get_device_capability=lambda: (9, 0),
        current_device=lambda: 0,
    )
    return types.SimpleNamespace(cuda=cuda, rand=lambda n, device: _FakeTensor(next(tensors)))


class _FakeCpp:
    """tvm_ffi.cpp with modules whose functions count their calls."""

    def __init__(self, floor_loops):
        self.floor_loops = floor_loops
        self.built, self.setup, self.calls = [], None, collections.Counter()

    def build_inline(self, name, **kwargs):
        self.built.append(name)
        return name

    def _fn(self, name):
        return lambda *args: self.calls.update([name])

    def load_inline(self, name, **kwargs):
        if name == "bench_launch_floor":
            fns = {fn: (lambda n, fn=fn: self.calls.update({fn: n})) for fn in self.floor_loops}
            return types.SimpleNamespace(
                floor_setup=lambda *args: setattr(self, "setup", args), **fns
            )
        if name == "bench_launch_attrs":
            raise RuntimeError("ninja exited with status 1")
        names = ("launch3", "launch16", "nolaunch", "getstream")
        return types.SimpleNamespace(**{n: self._fn(n) for n in names})


def test_launch_overhead_collect_on_fakes(bench, monkeypatch, tmp_path):
    """The whole of collect() on a CPU: fake torch and tvm_ffi.cpp, no Triton/CuPy/cuda.core,
    a fake apache-tvm-ffi worker. Checks the wiring (streams, floors, n/a rows), not timing."""
    mod, c, r = bench["launch_overhead"], bench["_common"], bench["_ref"]
    log, cpp = [], _FakeCpp(tuple(bench["_sources"].FLOOR_LOOPS))
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(log))
    for missing in ("triton", "_triton_kernels", "cupy", "cuda"):
        monkeypatch.setitem(sys.modules, missing, None)
    monkeypatch.setattr(c, "cuda_arch", lambda: "sm_90")
    monkeypatch.setattr(mod, "build_cubin", lambda wd, arch: wd / "k.cubin")
    (tmp_path / "k.cubin").write_bytes(b"fake cubin")
    monkeypatch.setattr(r, "import_impl", lambda impl: types.SimpleNamespace(__version__="0.1.0"))
    monkeypatch.setattr(r, "import_cpp", lambda: cpp)
    monkeypatch.setattr(r, "resolve_ref", lambda args: ("/fake/ref", "fake.whl"))
    p = {"launches": 3, "rounds": 5, "warmup_rounds": 2}
    monkeypatch.setattr(mod, "params", lambda quick: p)
    worker_calls = []

    def fake_ref(args, ref_dir, cubin_path, workdir, *, build_only):
        worker_calls.append(build_only)
        if build_only:
            return {"version": "0.1.15", "failures": {}}
        rows = {k: c.ok_row(k, [3.0]) for k in mod.REF_KEYS}
        return {"version": "0.1.15", "rows": rows}

    monkeypatch.setattr(mod, "run_ref", fake_ref)

    raw = mod.collect(mod.parse_args(["--quick"]), tmp_path)
    rows = raw["rows"]
    assert worker_calls == [True, False]  # pre-build beside ours, measured after ours
    assert sorted(cpp.built) == ["bench_launch", "bench_launch_attrs", "bench_launch_floor"]
    assert cpp.setup[:2] == (str(tmp_path / "k.cubin"), 0xABC) and len(cpp.setup) == 17
    for key in (*mod.FLOOR_ROWS, "ours_launch3", "ours_launch3_null", "ours_launch16"):
        assert rows[key]["status"] == "ok" and rows[key]["n"] == p["rounds"], key
    for key in ("ours_nolaunch", "ours_getstream", "torch_add", "python_def"):
        assert rows[key]["status"] == "ok", key
    per_batch = p["launches"] * (p["rounds"] + p["warmup_rounds"])
    assert cpp.calls["launch3"] == 2 * per_batch  # the torch-stream row and the NULL one
    assert cpp.calls["floor_cuda_launch_kernel"] == per_batch  # one call of n launches each
    # The torch stream is current for everything; the NULL row enters the default one.
    assert log[0] == ("stream", types.SimpleNamespace(cuda_stream=0xABC))
    assert log.count(("stream", "default")) == p["rounds"] + p["warmup_rounds"]
    assert rows["ours_attrs3"]["reason"] == "RuntimeError: ninja exited with status 1"
    for key in ("triton3", "cupy16", "cuda_core3"):
        assert rows[key]["status"] == "n/a", key
        assert rows[key]["reason"].startswith("ModuleNotFoundError: "), key
    for key in mod.PYCUDA_KEYS:  # tvm_ffi.cuda refuses the fake CUBIN before any driver call
        assert rows[key]["status"] == "n/a", key
        assert rows[key]["reason"].startswith("ValueError: cannot load module <10-byte image>")
    assert rows["ref_launch3"]["median"] == 3.0 and raw["versions"]["ref"] == "0.1.15"
    assert raw["notes"][-1].startswith("drift check: C++ cudaLaunchKernel floor median")
    text = c.render_report(mod.make_report(raw, "quick", FAKE_ENV))
    assert text.splitlines()[-1].startswith("note: target: this project")


def test_launch_overhead_ref_worker_on_fakes(bench, monkeypatch, tmp_path, capsys):
    """The apache-tvm-ffi worker's two modes, on a fake torch and tvm_ffi.cpp."""
    mod, r = bench["launch_overhead"], bench["_ref"]
    cpp = _FakeCpp(tuple(bench["_sources"].FLOOR_LOOPS))
    monkeypatch.setitem(sys.modules, "torch", _fake_torch([]))
    monkeypatch.setattr(r, "import_impl", lambda impl: types.SimpleNamespace(__version__="0.1.15"))
    monkeypatch.setattr(r, "import_cpp", lambda: cpp)
    monkeypatch.setattr(
        mod, "params", lambda quick: {"launches": 2, "rounds": 3, "warmup_rounds": 1}
    )
    (tmp_path / "k.cubin").write_bytes(b"fake cubin")
    argv = ["--worker", "ref", "--cubin", str(tmp_path / "k.cubin"), "--quick"]

    mod.main([*argv, "--build-only"])
    built = json.loads(capsys.readouterr().out.split(r.RESULT_MARKER)[-1])
    assert built == {"version": "0.1.15", "failures": {}}
    assert sorted(cpp.built) == ["bench_launch", "bench_launch_floor"]  # no attrs module

    mod.main(argv)
    res = json.loads(capsys.readouterr().out.split(r.RESULT_MARKER)[-1])
    assert set(res["rows"]) == set(mod.REF_KEYS)
    assert all(row["status"] == "ok" and row["n"] == 3 for row in res["rows"].values())


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


def test_build_time_speed_report(bench):
    mod, c = bench["build_time"], bench["_common"]
    speed = {
        "nvcc_c": ok(bench, [3.0]),
        "cxx_c": ok(bench, [1.5]),
        "ours_cold": ok(bench, [0.75]),
        "ours_reembed": ok(bench, [0.03]),
        "ours_hit": ok(bench, [0.008]),
        "base_hit": ok(bench, [0.028]),
        "ours_many_par": ok(bench, [4.0]),
        "ours_many_seq": ok(bench, [16.0]),
    }
    for key in ("cold", "reembed", "hit", "many_par", "many_seq"):
        speed[f"ref_{key}"] = na(bench, "skipped (--no-ref)")
    raw = {"params": mod.params(True), "arch": "sm_90", "rows": {}, "speed": speed}
    raw["speed_params"] = {"reps": 1, "fresh": 3}
    text = c.render_report(mod.make_report(raw, "quick", FAKE_ENV))
    assert "0.750 s (0.25x nvcc)" in text
    assert "0.030 s (0.04x cold)" in text
    assert "8.000 ms (0.29x before)" in text and "before: 28.000 ms" in text
    assert "4.000 s" in text and "16.000 s" in text
    assert text.count("n/a (skipped (--no-ref))") == 5


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
            "k0_copied": t0 + (first_k0_at + 0.01) * ms,
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
    assert "0.040" in text  # second k0: from the copy after the first k0 to the second launch
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


def test_interleaved_rounds_rotate_and_drop_failed_rows(bench):
    il = bench["_interleave"]
    log = []
    ticks = iter(range(0, 10**9, 1000))  # every clock read advances 1 us

    class Ctx:
        def __enter__(self):
            log.append("enter")

        def __exit__(self, *exc):
            log.append("exit")

    calls = {"b": 0}

    def b():
        calls["b"] += 1
        log.append("b")
        if calls["b"] == 4:  # warm-up 2 rounds, then fails in the second measured round
            raise RuntimeError("launch failed\ndetails")

    rows = {
        "a": il.Row(lambda: log.append("a")),
        "b": il.Row(b),
        "c": il.Row(lambda: log.append("c"), context=Ctx),
    }
    syncs = []
    samples, failures = il.measure(
        rows,
        launches=4,
        rounds=3,
        warmup_rounds=2,
        sync=lambda: syncs.append(1),
        clock=lambda: next(ticks),
    )
    assert failures == {"b": "RuntimeError: launch failed"}
    assert set(samples) == {"a", "c"} and len(samples["a"]) == len(samples["c"]) == 3
    assert samples["a"] == [0.25, 0.25, 0.25]  # 1 us between the clock reads / 4 launches
    calls_only = [x for x in log if x in "abc"]
    # 2 warm-up rounds in order; then rounds rotated by one each: abc, bca (b fails), ca.
    assert calls_only == ["a", "b", "c", "a", "b", "c", "a", "b", "c", "b", "c", "a", "c", "a"]
    assert log.count("enter") == log.count("exit") == 5  # c's context around each batch
    assert len(syncs) == 2 * 3 + 1 + 3 + 1 + 3  # after each batch that returned, +1 before

    table = il.to_rows(rows, samples, failures)
    assert table["b"]["status"] == "n/a" and table["a"]["median"] == 0.25
    assert table["a"]["p10"] == table["a"]["p90"] == 0.25


def test_spread_and_batches(bench):
    il = bench["_interleave"]
    spread = il.spread([float(x) for x in range(1, 12)])  # 1..11
    assert spread == {"p10": 2.0, "p90": 10.0}
    assert il.spread([3.0]) == {"p10": 3.0, "p90": 3.0}
    calls = []
    il.python_batch(lambda a, b: calls.append((a, b)), (1, 2), 5)()
    assert calls == [(1, 2)] * 5
    il.native_batch(lambda n: calls.append(n), 7)()
    assert calls[-1] == 7


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


# ----------------------------------------------------------------------------- header_cost.py


def test_header_cost_prelude_is_load_inline_s():
    """The script compiles wrappers the way load_inline does: with its prelude."""
    sys.path.insert(0, str(BENCH))
    try:
        header_cost = importlib.import_module("header_cost")
    finally:
        sys.path.remove(str(BENCH))
    from tvm_ffi.cpp import _spec

    assert header_cost.PRELUDE == _spec.PRELUDE_INCLUDES


def test_header_cost_quick_run(tmp_path):
    """--quick compiles every wrapper once per mode with the real compiler (CPU only) and
    prints one table row per cell; a cell without cuda.h says why."""
    cxx = shutil.which("c++") or shutil.which("g++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    out = tmp_path / "hc.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(BENCH / "header_cost.py"),
            "--quick",
            "--cxx",
            cxx,
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    payload = json.loads(out.read_text())
    cells = [(row["wrapper"], row["mode"]) for row in payload["rows"]]
    assert cells == [
        ("guide-style (CUBIN launcher)", "-fsyntax-only"),
        ("guide-style (CUBIN launcher)", "-O2 compile"),
        ("apache-style (prelude only)", "-fsyntax-only"),
        ("apache-style (prelude only)", "-O2 compile"),
    ]
    for row in payload["rows"]:
        assert row["runs"] == 1
        if "skipped" in row:
            assert row["skipped"] == "no cuda.h (set CUDA_HOME)"
        else:
            assert list(row["seconds"]) == ["now"] and row["seconds"]["now"] > 0
    table = proc.stdout.splitlines()[-6:]
    assert table[0] == "| wrapper | mode | now |"
    assert len(table) == 6 and all(line.startswith("| ") for line in table)


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


# ----------------------------------------------------------------------------- client_compile.py


def test_client_compile_report(bench):
    """Ratios are ours / apache of the medians; a TU that failed keeps its reason."""
    mod = bench["client_compile"]
    args = mod.parse_args(["--reps", "3"])
    pair = {"ours": {"wall": 2.0, "cpu": 1.5}, "apache": {"wall": 4.0, "cpu": 2.0}}
    failed = {
        **bench["_common"].na_row("fi.norm: norm.cu", "RuntimeError: x"),
        "label": "fi.norm: norm.cu",
    }
    raw = {"host pass": [{"label": "fi.act: a.cu", "status": "ok", **pair}, failed], "ref": "r"}
    report = mod.make_report(args, raw, "quick", FAKE_ENV)
    (section,) = report["sections"]
    assert section["title"] == "host pass (s)"
    assert section["cells"][0] == [
        "fi.act: a.cu",
        "2.000",
        "4.000",
        "0.500",
        "1.500",
        "2.000",
        "0.750",
        "",
    ]
    assert section["cells"][1][-1] == "n/a (RuntimeError: x)"
    assert section["notes"] == ["medians of 3 interleaved pairs; ratio = ours / apache"]


def test_client_compile_without_wheels_or_reference(tmp_path):
    """No client wheels and no apache-tvm-ffi: every module is an n/a row naming why, exit 0."""
    env = dict(os.environ, TVM_FFI_CLIENTS_DIR=str(tmp_path / "clients"), PIP_NO_INDEX="1")
    out = tmp_path / "cc.json"
    argv = [sys.executable, str(BENCH / "client_compile.py"), "--quick", "--host-only"]
    argv += ["--client-wheels", str(tmp_path / "no-wheels"), "--ref-path", str(tmp_path)]
    argv += ["--modules", "flashinfer.activation", "--json", str(out)]
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(out.read_text())["raw"]["host pass"]
    assert row["status"] == "n/a"
    assert row["reason"].startswith("clients not installed: RuntimeError: installing ")
    assert (
        f"--ref-path {tmp_path} has no tvm_ffi/__init__.py"
        in json.loads(out.read_text())["notes"][0]
    )
