"""Host cost of launching one empty kernel, through every launcher at hand (issue 5).

The kernel: ``extern "C" __global__ void empty(float* a, float* b, float* c, int n) {}``
(and ``empty16`` with 15 pointers and an int), grid 1, block 1, on the current (default) stream.

Paths: the C++ floor (a program built here with nvcc that loops on cudaLaunchKernel, on
cudaLaunchKernel with a cudaKernel_t from cudaLibraryLoadData, and on cuLaunchKernel /
cuLaunchKernelEx with a CUkernel from cuLibraryLoadData); this project (the CUBIN embedded with
``load_inline(embed_cubin=...)``, called with torch tensors and an int); apache-tvm-ffi (same
wrapper source, own process: same import name); Triton's launcher; CuPy RawKernel; cuda.core
launch; torch ``x.add_(1)`` for reference. Also 16 arguments, cluster 2x1x1 + PDL, and the call
that launches nothing (the binding alone).

Host us per launch = wall time of a loop of N launches / N, the GPU drained before and after each
sample (outside the timed region); median and min over samples after warm-up.
Target: this project <= C++ cudaLaunchKernel + 0.3 us, and the fastest Python launcher.
Run: python benchmarks/launch_overhead.py [--quick] [--json PATH] [--ref-wheel W | --ref-path D]
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common
import _launchers
import _ref
import _sources

NAME = "launch_overhead"
TARGET_DELTA_US = 0.3
PY_LAUNCHERS = ("ours", "ref", "triton", "cupy", "cuda_core")
# What the C++ floor program prints (see _sources.floor_program_source).
FLOOR_KEYS = (
    "rt_launch_3",
    "rt_library_launch_3",
    "drv_launch_3",
    "drv_launch_ex_3",
    "rt_launch_16",
    "drv_launch_ex_16",
    "rt_launch_ex_attrs_3",
    "drv_launch_ex_attrs_3",
)


def parse_args(argv=None):
    parser = _common.base_parser(NAME, __doc__.splitlines()[0])
    parser.add_argument("--cubin", default=None, help=argparse.SUPPRESS)  # worker input
    return parser.parse_args(argv)


def params(quick: bool) -> dict:
    if quick:
        return {"iters": 2000, "samples": 10, "warmup": 200}
    return {"iters": 5000, "samples": 30, "warmup": 1000}


# ----------------------------------------------------------------------------- C++ floor


def build_cubin(workdir: Path, arch: str) -> Path:
    """The CUBIN of the empty kernels that every launcher row launches."""
    (workdir / "kernels.cu").write_text(_sources.EMPTY_KERNELS_CU)
    cubin = workdir / "kernels.cubin"
    _common.nvcc_compile(["-cubin", f"-arch={arch}", "-o", str(cubin), str(workdir / "kernels.cu")])
    return cubin


def build_floor(workdir: Path, arch: str) -> Path:
    """The C++ floor program (the same kernels compiled in, plus the CUBIN at run time)."""
    (workdir / "floor.cu").write_text(_sources.floor_program_source())
    exe = workdir / "floor"
    _common.nvcc_compile(
        ["-O2", "-std=c++17", f"-arch={arch}", "-o", str(exe), str(workdir / "floor.cu")]
    )
    return exe


def project_modules(cubin: bytes) -> dict[str, tuple[str, dict]]:
    """load_inline (name, kwargs) of the wrapper modules, shared by the pre-build and the rows."""
    embed = {"bench_empty": cubin}
    return {
        "main": (
            "bench_launch",
            {"cuda_sources": _sources.launch_wrapper_source(), "embed_cubin": embed},
        ),
        "attrs": (
            "bench_launch_attrs",
            {"cuda_sources": _sources.launch_attrs_wrapper_source(), "embed_cubin": embed},
        ),
    }


def prebuild_ours(cubin: bytes) -> None:
    """Build this project's modules into the cache, in a thread beside the floor's nvcc.
    One after the other (concurrent builds in one process are not what is measured here).
    Errors are ignored: the load_inline of the row itself raises them again."""
    try:
        _ref.import_impl("ours")
        cpp = _ref.import_cpp()
    except Exception:
        return

    for name, kwargs in project_modules(cubin).values():
        with contextlib.suppress(Exception):
            cpp.build_inline(name, **kwargs)


def run_floor(exe: Path, cubin: Path, p: dict, prefix: str = "cpp") -> dict:
    proc = subprocess.run(
        [str(exe), str(cubin), str(p["iters"]), str(p["samples"]), str(p["warmup"])],
        capture_output=True,
        text=True,
        timeout=300,
    )
    parsed = _sources.parse_floor_output(proc.stdout)
    if not parsed:
        tail = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        raise RuntimeError(f"floor program failed: {tail}")
    rows = {}
    for key, value in parsed.items():
        rows[f"{prefix}_{key}"] = (
            _common.ok_row(key, value) if isinstance(value, list) else _common.na_row(key, value)
        )
    return rows


# ----------------------------------------------------------------------------- Python launchers


def measure_project(tvm_ffi, cubin: bytes, p: dict, *, attrs: bool) -> dict:
    """Rows launch3 / launch16 / nolaunch (and attrs3 when asked) through one implementation."""
    torch, t = _launchers.torch_setup()
    cpp = _ref.import_cpp()
    sync = torch.cuda.synchronize
    kw = {"iters": p["iters"], "samples": p["samples"], "warmup": p["warmup"], "sync": sync}
    keys = ("launch3", "launch16", "nolaunch")
    modules = project_modules(cubin)
    try:
        mod = cpp.load_inline(modules["main"][0], **modules["main"][1])
    except Exception as exc:
        rows = {k: _common.na_row(k, "build: " + _common.error_reason(exc)) for k in keys}
    else:
        rows = {
            "launch3": _common.measure_row(
                "launch3",
                lambda: _common.time_calls(
                    mod.launch3, (t[0], t[1], t[2], _launchers.N_VALUE), **kw
                ),
            ),
            "launch16": _common.measure_row(
                "launch16", lambda: _common.time_calls(mod.launch16, (*t, _launchers.N_VALUE), **kw)
            ),
            "nolaunch": _common.measure_row(
                "nolaunch",
                lambda: _common.time_calls(
                    mod.nolaunch, (t[0], t[1], t[2], _launchers.N_VALUE), **kw
                ),
            ),
        }
    if attrs:

        def attrs_samples():
            major, _ = torch.cuda.get_device_capability()
            if major < 9:
                raise RuntimeError(f"clusters need sm_90+ (device is sm_{major}x)")
            mod2 = cpp.load_inline(modules["attrs"][0], **modules["attrs"][1])
            return _common.time_calls(
                mod2.launch3_attrs, (t[0], t[1], t[2], _launchers.N_VALUE), **kw
            )

        rows["attrs3"] = _common.measure_row("attrs3", attrs_samples)
    return rows


# ----------------------------------------------------------------------------- driver


def worker_main(args) -> None:
    tvm_ffi = _ref.import_impl(args.worker)
    cubin = Path(args.cubin).read_bytes()
    rows = measure_project(tvm_ffi, cubin, params(args.quick), attrs=False)
    _ref.emit_result({"version": _ref.impl_version(tvm_ffi), "rows": rows})


def collect(args, workdir: Path) -> dict:
    p = params(args.quick)
    raw: dict = {"params": p, "rows": {}, "versions": {}, "notes": []}
    rows = raw["rows"]
    arch = _common.cuda_arch()
    if arch is None:
        raise SystemExit("launch_overhead needs a CUDA GPU visible to torch")
    raw["arch"] = arch
    try:
        cubin_path = build_cubin(workdir, arch)
    except Exception as exc:  # without the CUBIN no launcher row can run
        raw["notes"].append(f"compiling the empty kernels failed: {_common.error_reason(exc)}")
        return raw
    # The floor program and this project's modules build side by side (nvcc is single-threaded).
    floor_exe = None
    with ThreadPoolExecutor(max_workers=2) as pool:
        floor_job = pool.submit(build_floor, workdir, arch)
        pool.submit(prebuild_ours, cubin_path.read_bytes())
        try:
            floor_exe = floor_job.result()
        except Exception as exc:
            reason = f"building the C++ floor: {_common.error_reason(exc)}"
            rows.update({f"cpp_{k}": _common.na_row(k, reason) for k in FLOOR_KEYS})
    if floor_exe is not None:
        try:
            rows.update(run_floor(floor_exe, cubin_path, p))
        except Exception as exc:
            reason = _common.error_reason(exc)
            rows.update({f"cpp_{k}": _common.na_row(k, reason) for k in FLOOR_KEYS})

    project_keys = ("launch3", "launch16", "nolaunch", "attrs3")
    try:
        tvm_ffi = _ref.import_impl("ours")
        raw["versions"]["ours"] = _ref.impl_version(tvm_ffi)
        ours = measure_project(tvm_ffi, cubin_path.read_bytes(), p, attrs=True)
        rows.update({f"ours_{k}": v for k, v in ours.items()})
    except Exception as exc:
        reason = _common.error_reason(exc)
        rows.update({f"ours_{k}": _common.na_row(k, reason) for k in project_keys})

    try:
        rows.update(_launchers.measure_others(cubin_path, p))
    except Exception as exc:  # each launcher is guarded inside; this is torch itself failing
        raw["notes"].append(f"other launchers not measured: {_common.error_reason(exc)}")

    ref_dir, ref_desc = _ref.resolve_ref(args)
    raw["ref"] = ref_desc
    if ref_dir is None:
        rows.update({f"ref_{k}": _common.na_row(k, ref_desc) for k in project_keys[:3]})
    else:
        try:
            worker_args = ["--cubin", str(cubin_path)] + (["--quick"] if args.quick else [])
            res = _ref.run_worker(
                f"{NAME}.py",
                worker_args,
                impl="ref",
                ref_dir=ref_dir,
                extra_env={"TVM_FFI_CACHE_DIR": str(workdir / "refcache")},
            )
            raw["versions"]["ref"] = res["version"]
            rows.update({f"ref_{k}": v for k, v in res["rows"].items()})
        except Exception as exc:
            reason = _common.error_reason(exc)
            rows.update({f"ref_{k}": _common.na_row(k, reason) for k in project_keys[:3]})

    # The floor once more at the end: its drift is the noise level of this run.
    if floor_exe is not None:
        try:
            rows.update(run_floor(floor_exe, cubin_path, p, prefix="cpp_end"))
        except Exception as exc:
            raw["notes"].append(f"C++ floor re-run failed: {_common.error_reason(exc)}")
    return raw


def _median(rows: dict, key: str) -> float | None:
    row = rows.get(key)
    return row["median"] if row and row.get("status") == "ok" else None


def make_report(raw: dict, mode: str, env: dict) -> dict:
    rows = raw["rows"]
    p = raw["params"]
    ref_name = f"apache-tvm-ffi {raw.get('versions', {}).get('ref', '')}".strip()
    labels = {
        "cpp_rt_launch_3": "C++ cudaLaunchKernel (floor)",
        "cpp_rt_library_launch_3": "C++ cudaLaunchKernel, cudaKernel_t from cudaLibraryLoadData",
        "cpp_drv_launch_3": "C++ cuLaunchKernel, CUkernel from cuLibraryLoadData",
        "cpp_drv_launch_ex_3": "C++ cuLaunchKernelEx, CUkernel from cuLibraryLoadData",
        "ours_launch3": "tvm_ffi (this project), embedded CUBIN, 3 torch tensors + int",
        "ref_launch3": f"{ref_name} load_inline + embed_cubin (own process)",
        "triton3": "Triton @triton.jit launcher",
        "cupy3": "CuPy RawKernel",
        "cuda_core3": "cuda.core launch",
        "torch_add": "torch x.add_(1), 1 element (reference op)",
        "cpp_rt_launch_16": "C++ cudaLaunchKernel (floor)",
        "cpp_drv_launch_ex_16": "C++ cuLaunchKernelEx, CUkernel",
        "ours_launch16": "tvm_ffi (this project), 15 torch tensors + int",
        "ref_launch16": f"{ref_name} (own process)",
        "triton16": "Triton @triton.jit launcher",
        "cupy16": "CuPy RawKernel",
        "cuda_core16": "cuda.core launch",
        "cpp_rt_launch_ex_attrs_3": "C++ cudaLaunchKernelExC + attributes (floor)",
        "cpp_drv_launch_ex_attrs_3": "C++ cuLaunchKernelEx + attributes",
        "ours_attrs3": "tvm_ffi (this project), LaunchConfig SetCluster + PDL",
        "ours_nolaunch": "tvm_ffi (this project), 3 torch tensors + int",
        "ref_nolaunch": f"{ref_name} (own process)",
        "python_def": "Python def f(a, b, c, n): pass",
    }
    groups = [
        (
            "3 pointers + int (grid 1, block 1)",
            "cpp_rt_launch_3",
            [
                "cpp_rt_launch_3",
                "cpp_rt_library_launch_3",
                "cpp_drv_launch_3",
                "cpp_drv_launch_ex_3",
                "ours_launch3",
                "ref_launch3",
                "triton3",
                "cupy3",
                "cuda_core3",
                "torch_add",
            ],
        ),
        (
            "16 arguments: 15 pointers + int",
            "cpp_rt_launch_16",
            [
                "cpp_rt_launch_16",
                "cpp_drv_launch_ex_16",
                "ours_launch16",
                "ref_launch16",
                "triton16",
                "cupy16",
                "cuda_core16",
            ],
        ),
        (
            "cluster 2x1x1 + programmatic stream serialization (PDL), grid 2",
            "cpp_rt_launch_ex_attrs_3",
            ["cpp_rt_launch_ex_attrs_3", "cpp_drv_launch_ex_attrs_3", "ours_attrs3"],
        ),
        (
            "the binding alone: same arguments, nothing launched",
            None,
            ["ours_nolaunch", "ref_nolaunch", "python_def"],
        ),
    ]
    sections = []
    for title, floor_key, keys in groups:
        floor = _median(rows, floor_key) if floor_key else None
        cells = []
        for key in keys:
            row = rows.get(key)
            med = _median(rows, key)
            delta = med - floor if (med is not None and floor is not None) else None
            cells.append(
                [
                    labels[key],
                    *_common.stat_cells(row),
                    _common.fmt_delta(delta) if floor_key else "-",
                    _common.note_cell(row),
                ]
            )
        sections.append(
            {
                "title": title,
                "headers": ["path", "median us", "min us", "vs floor", "note"],
                "cells": cells,
            }
        )

    notes = [
        f"host us per launch: {p['samples']} samples x {p['iters']} launches after "
        f"{p['warmup']} warm-up, GPU drained between samples (not timed); "
        f"'vs floor' = median minus the section's first row",
        f"{ref_name} ran in its own process (same import name tvm_ffi), from "
        f"{raw.get('ref', '?')}; Triton is called as a pre-bound kernel[(1,)]",
        "rows with no equivalent in a launcher (attributes in Triton/CuPy/cuda.core) are omitted",
    ]
    end = _median(rows, "cpp_end_rt_launch_3")
    if end is not None:
        notes.append(f"C++ cudaLaunchKernel floor re-run at the end: {end:.3f} us (noise check)")
    notes += raw.get("notes", [])
    notes.append(target_line(rows))
    return {
        "benchmark": NAME,
        "mode": mode,
        "env": env,
        "raw": raw,
        "sections": sections,
        "notes": notes,
    }


def target_line(rows: dict) -> str:
    ours, floor = _median(rows, "ours_launch3"), _median(rows, "cpp_rt_launch_3")
    if ours is None or floor is None:
        return "target (<= floor + 0.3 us, fastest Python launcher): not measured"
    others = {
        k: _median(rows, f"{k}3" if k not in ("ours", "ref") else f"{k}_launch3")
        for k in PY_LAUNCHERS
        if k != "ours"
    }
    others = {k: v for k, v in others.items() if v is not None}
    fastest = min(others.items(), key=lambda kv: kv[1]) if others else None
    delta = ours - floor
    verdict = _common.verdict(delta, TARGET_DELTA_US)
    if fastest is None:
        rank = "no other Python launcher measured"
    else:
        rank = (
            "fastest Python launcher: MET"
            if ours < fastest[1]
            else f"fastest Python launcher: MISSED ({fastest[0]} {fastest[1]:.3f} us)"
        )
    return (
        f"target: this project {ours:.3f} us = floor {delta:+.3f} us "
        f"(<= +{TARGET_DELTA_US}: {verdict}); {rank}"
    )


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.worker:
        worker_main(args)
        return
    workdir = Path(tempfile.mkdtemp(prefix="tvm_ffi_bench_launch_"))
    try:
        raw = collect(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    env = _common.environment(_common.gpu_description())
    _common.finish(make_report(raw, "quick" if args.quick else "full", env), args.json)


if __name__ == "__main__":
    main()
