"""Start-up cost of a library that embeds 100 kernels: time to first launch, lazy loading, RSS.

Two libraries are built with this project's ``build_inline``: one embedding 100 small CUBINs
(kernel k<i> in CUBIN c<i>) and one embedding a single CUBIN with the 100 kernels. Each is
loaded in fresh processes::

    import torch; x = torch.rand(...); import tvm_ffi
    m = tvm_ffi.load_module(path); m.launch_k0(x)

and timed from process start (the parent's clock before spawning; the child reads the same
CLOCK_MONOTONIC) to the first launch done, beside a baseline process that only imports torch and
allocates. Inside the process: import, load_module, first call of k0, a second call of k0, the
first call of k99 after k0, then the first calls of the other 98. With lazy loading the first
k99 call (100 CUBINs) costs about what the first k0 call did, and nothing is loaded by
load_module itself. VmRSS comes from /proc/self/status.
Run: python benchmarks/load_time.py [--quick] [--json PATH]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common
import _ref
import _sources

NAME = "load_time"
N_KERNELS = 100
VARIANTS = (
    ("baseline", "baseline: import torch + allocate (no tvm_ffi)"),
    ("many", "100 CUBINs, one kernel each"),
    ("one", "1 CUBIN with 100 kernels"),
)

# The child process. argv: mode (baseline|many|one), library path. One JSON line on stdout.
CHILD = r"""
import json, sys, time
def now():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)
def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None
mode, path = sys.argv[1], sys.argv[2]
marks, rss = {}, {}
import torch
x = torch.rand(1024, device="cuda")
torch.cuda.synchronize()
before = x.clone()
marks["torch_ready"] = now(); rss["torch_ready"] = rss_kib()
checked = None
if mode != "baseline":
    import tvm_ffi
    marks["import"] = now()
    m = tvm_ffi.load_module(path)
    marks["load_module"] = now(); rss["load_module"] = rss_kib()
    m.launch_k0(x); torch.cuda.synchronize()
    marks["first_k0"] = now(); rss["first_k0"] = rss_kib()
    after_k0 = x.clone()  # checked after the timed part: torch's first ops load its own kernels
    torch.cuda.synchronize()
    marks["k0_copied"] = now()
    m.launch_k0(x); torch.cuda.synchronize()
    marks["second_k0"] = now()
    m.launch_k99(x); torch.cuda.synchronize()
    marks["first_k99"] = now(); rss["first_k99"] = rss_kib()
    for i in range(1, 99):
        getattr(m, "launch_k%d" % i)(x)
    torch.cuda.synchronize()
    marks["rest"] = now(); rss["all"] = rss_kib()
    checked = bool(torch.allclose(after_k0, before * 2.0))  # k0 computes x * 2 + 0
print("@@LOAD@@ " + json.dumps({"marks": marks, "rss_kib": rss, "k0_ok": checked}), flush=True)
"""


def parse_args(argv=None):
    parser = _common.base_parser(NAME, __doc__.splitlines()[0])
    return parser.parse_args(argv)


def params(quick: bool) -> dict:
    return {"procs": 3} if quick else {"procs": 10}


def build_libraries(workdir: Path, arch: str) -> dict[str, str]:
    """{variant: path of the built shared library}, both built with this project.

    One after the other: two build_inline calls in threads of one process raced on the JIT's
    toolchain cache file (seen here, Nov 2026), and the benchmark must not depend on that."""
    _ref.import_impl("ours")
    cpp = _ref.import_cpp()
    sources = {f"c{i}": _sources.numbered_kernel(i) for i in range(N_KERNELS)}
    sources["all"] = _sources.many_kernels_cu(N_KERNELS)
    cubins = _common.compile_cubins(sources, arch, workdir / "cubins")
    one = {"all": cubins.pop("all")}
    jobs = {
        "many": (
            "bench_load_many",
            _sources.many_launchers_source(N_KERNELS, one_cubin=False),
            cubins,
        ),
        "one": ("bench_load_one", _sources.many_launchers_source(N_KERNELS, one_cubin=True), one),
    }

    return {
        variant: str(cpp.build_inline(name, cuda_sources=src, embed_cubin=embed))
        for variant, (name, src, embed) in jobs.items()
    }


def run_child(mode: str, lib: str) -> dict:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, mode, lib],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=tempfile.gettempdir(),
    )
    t_exit = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    for line in proc.stdout.splitlines():
        if line.startswith("@@LOAD@@ "):
            res = json.loads(line[len("@@LOAD@@ ") :])
            if res.get("k0_ok") is False:
                raise RuntimeError(f"{mode}: launch_k0 did not compute x * 2 (wrong result)")
            res["start"], res["exit"] = t0, t_exit
            return res
    reason = _ref.failure_reason(proc.stderr + "\n" + proc.stdout)
    raise RuntimeError(f"{mode} process exited {proc.returncode}: {reason}")


def child_metrics(res: dict) -> dict:
    """Milliseconds from the marks of one child process, and RSS in MiB."""
    m = res["marks"]
    out = {
        "to_ready_ms": (m.get("first_k0", m["torch_ready"]) - res["start"]) / 1e6,
        "process_ms": (res["exit"] - res["start"]) / 1e6,
    }
    steps = (
        ("import_ms", "torch_ready", "import"),
        ("load_module_ms", "import", "load_module"),
        ("first_k0_ms", "load_module", "first_k0"),
        ("second_k0_ms", "k0_copied", "second_k0"),
        ("first_k99_ms", "second_k0", "first_k99"),
        ("rest98_ms", "first_k99", "rest"),
    )
    for key, a, b in steps:
        if a in m and b in m:
            out[key] = (m[b] - m[a]) / 1e6
    for key, kib in res["rss_kib"].items():
        if kib is not None:
            out[f"rss_{key}_mib"] = kib / 1024
    return out


def collect(args, workdir: Path) -> dict:
    p = params(args.quick)
    raw: dict = {"params": p, "rows": {}, "notes": []}
    arch = _common.cuda_arch()
    if arch is None:  # every row says why, as a row that cannot run does
        for variant, _ in VARIANTS:
            raw["rows"][variant] = _common.na_row(variant, "no CUDA GPU visible to torch")
        return raw
    os.environ.setdefault("TVM_FFI_CACHE_DIR", str(workdir / "cache"))
    libs: dict[str, str] = {}
    build_error = "library not built"
    try:
        t0 = time.perf_counter()
        libs = build_libraries(workdir, arch)
        raw["build_s"] = time.perf_counter() - t0
        raw["lib_bytes"] = {k: os.path.getsize(v) for k, v in libs.items()}
    except Exception as exc:
        build_error = f"build: {_common.error_reason(exc)}"
    per_variant: dict[str, list] = {v: [] for v, _ in VARIANTS}
    errors: dict[str, str] = {}
    for _ in range(p["procs"]):  # interleaved so that drift hits every variant alike
        for variant, _ in VARIANTS:
            if variant in errors:
                continue
            if variant != "baseline" and variant not in libs:
                errors[variant] = build_error
                continue
            try:
                per_variant[variant].append(
                    child_metrics(run_child(variant, libs.get(variant, "-")))
                )
            except Exception as exc:
                errors[variant] = _common.error_reason(exc)
    for variant, _ in VARIANTS:
        samples = per_variant[variant]
        if variant in errors or not samples:
            raw["rows"][variant] = _common.na_row(variant, errors.get(variant, "no samples"))
            continue
        metrics = {
            key: _common.summarize([s[key] for s in samples if key in s]) for key in samples[0]
        }
        raw["rows"][variant] = {
            "path": variant,
            "status": "ok",
            "metrics": metrics,
            "samples": samples,
        }
    return raw


def _metric(row: dict | None, key: str, stat: str = "median") -> float | None:
    if not row or row.get("status") != "ok" or key not in row["metrics"]:
        return None
    return row["metrics"][key][stat]


def make_report(raw: dict, mode: str, env: dict) -> dict:
    rows = raw["rows"]
    base = rows.get("baseline")
    base_ready = _metric(base, "to_ready_ms")
    base_rss = _metric(base, "rss_torch_ready_mib")
    fmt = _common.fmt_num

    start_cells, step_cells, rss_cells = [], [], []
    for variant, label in VARIANTS:
        row = rows.get(variant)
        ready = _metric(row, "to_ready_ms")
        delta = (
            ready - base_ready
            if (ready is not None and base_ready is not None and variant != "baseline")
            else None
        )
        start_cells.append(
            [
                label,
                fmt(ready, 1),
                fmt(_metric(row, "to_ready_ms", "min"), 1),
                "-" if delta is None else f"{delta:+.1f}",
                fmt(_metric(row, "process_ms"), 1),
                _common.note_cell(row),
            ]
        )
        if variant == "baseline":
            rss_cells.append(
                [
                    label,
                    fmt(_metric(row, "rss_torch_ready_mib"), 1),
                    "-",
                    "-",
                    "-",
                    _common.note_cell(row),
                ]
            )
            continue
        step_cells.append(
            [label]
            + [
                fmt(_metric(row, k), 3)
                for k in (
                    "import_ms",
                    "load_module_ms",
                    "first_k0_ms",
                    "second_k0_ms",
                    "first_k99_ms",
                    "rest98_ms",
                )
            ]
            + [_common.note_cell(row)]
        )
        own_base = _metric(row, "rss_torch_ready_mib")
        rss_cells.append(
            [label]
            + [
                "-"
                if _metric(row, k) is None or own_base is None
                else f"{_metric(row, k) - own_base:+.1f}"
                for k in ("rss_load_module_mib", "rss_first_k0_mib", "rss_first_k99_mib")
            ]
            + [fmt(_metric(row, "rss_all_mib"), 1), _common.note_cell(row)]
        )
    procs = raw["params"]["procs"]
    sections = [
        {
            "title": "Process start to first launch done (ms, fresh processes)",
            "headers": [
                "process",
                "median ms",
                "min ms",
                "vs baseline",
                "whole process ms",
                "note",
            ],
            "cells": start_cells,
            "notes": [
                f"median/min over {procs} processes per variant, interleaved; each child "
                "imports torch and allocates before importing tvm_ffi"
            ],
        },
        {
            "title": "Inside the process (ms, median): lazy loading shows as first k99 ~ first k0 "
            "(100 CUBINs) and first k99 << first k0 (1 CUBIN)",
            "headers": [
                "library",
                "import tvm_ffi",
                "load_module",
                "first k0",
                "second k0",
                "first k99",
                "other 98 first",
                "note",
            ],
            "cells": step_cells,
        },
        {
            "title": "Resident size: VmRSS growth over the same process after torch is ready (MiB)",
            "headers": [
                "process",
                "after load_module",
                "after first k0",
                "after first k99",
                "all 100 loaded (abs)",
                "note",
            ],
            "cells": rss_cells,
            "notes": [
                f"baseline row: absolute VmRSS after torch import + allocation "
                f"({fmt(base_rss, 1)} MiB)"
            ],
        },
    ]
    notes = list(raw.get("notes", []))
    if raw.get("lib_bytes"):
        sizes = ", ".join(f"{k}: {v / 1024:.0f} KiB" for k, v in raw["lib_bytes"].items())
        notes.append(f"library sizes: {sizes}; built in {raw.get('build_s', 0):.1f} s")
    return _common.report(NAME, mode, env, raw, sections, notes)


def main(argv=None) -> None:
    _common.main(argv, parse_args, collect, make_report)


if __name__ == "__main__":
    main()
