"""Host cost of calling an exported function, and of load_inline (issue 2's performance targets).

Rows, side by side:
  * this project's tvm_ffi, in this process: a no-op exported with ``load_inline(...,
    cpp_sources=..., functions=[...])`` called with 3 torch CUDA tensors, and with no arguments;
  * apache-tvm-ffi (same import name, so it runs in its own process with PYTHONPATH pointing at
    its unpacked wheel): the same source, the same calls;
  * a Python ``def`` with the same arguments: what the interpreter alone costs;
  * cold ``load_inline`` of a one-function ``cuda_sources`` module (fresh process, fresh
    TVM_FFI_CACHE_DIR), warm ``load_inline`` in the same process, and warm in a fresh process
    that hits the cache, for both implementations.

Targets (H100/H200): call <= 0.45 us, cold <= 3 s, warm <= 3 ms.
Run: python benchmarks/call_overhead.py [--quick] [--json PATH] [--ref-wheel W | --ref-path D]
"""

from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common
import _jit_worker
import _ref
import _sources

NAME = "call_overhead"
TARGET_CALL_US = 0.45
TARGET_COLD_S = 3.0
TARGET_WARM_MS = 3.0
TARGET_TENSOR_RESULT_US = 1.0  # returning a new tensor, over the no-op call


def parse_args(argv=None):
    parser = _common.base_parser(NAME, __doc__.splitlines()[0])
    parser.add_argument("--skip-jit", action="store_true", help="only the call rows")
    parser.add_argument(
        "--rounds",
        type=int,
        default=0,
        help="worker processes per implementation, alternating (default: 3 quick, 5 full)",
    )
    parser.add_argument(
        "--cpu",
        default="auto",
        help="CPU the workers time on, the same for every process: a number, 'auto' (the last "
        "CPU this process may use) or 'none' (left to the scheduler)",
    )
    parser.add_argument(
        "--device",
        default="cuda",
        choices=("cuda", "cpu"),
        help="where the 3 torch tensors live (default: %(default)s)",
    )
    return parser.parse_args(argv)


def params(quick: bool) -> dict:
    if quick:
        return {
            "iters": 20000,
            "samples": 10,
            "warmup": 2000,
            "cold_reps": 1,
            "fresh_reps": 3,
            "warm_repeats": 10,
        }
    return {
        "iters": 100000,
        "samples": 30,
        "warmup": 10000,
        "cold_reps": 3,
        "fresh_reps": 5,
        "warm_repeats": 20,
    }


def measure_calls(tvm_ffi, p: dict, device: str = "cuda") -> dict:
    """{row key: row} for the no-op calls through one implementation (in the current process)."""
    import torch

    mod = _ref.import_cpp().load_inline(
        "bench_call_noop", cpp_sources=_sources.NOOP_CPP, functions=_sources.NOOP_FUNCTIONS
    )
    tensors = tuple(torch.rand(4, device=device) for _ in range(3))
    timing = {k: p[k] for k in ("iters", "samples", "warmup")}
    cpu = os.environ.get("TVM_FFI_BENCH_CPU")
    if cpu:  # this thread only: the build above used every CPU
        os.sched_setaffinity(0, {int(cpu)})
    rows = {}
    if device == "cuda":
        # What a CUDA tensor costs over a host one (device and stream handling), and per tensor.
        host = tuple(t.cpu() for t in tensors)
        rows["tensors3_host"] = _common.measure_row(
            "tensors3_host", lambda: _common.time_calls(mod.noop, host, **timing)
        )
        rows["tensor1"] = _common.measure_row(
            "tensor1", lambda: _common.time_calls(mod.noop1, tensors[:1], **timing)
        )
    return rows | {
        "tensors3": _common.measure_row(
            "tensors3", lambda: _common.time_calls(mod.noop, tensors, **timing)
        ),
        "noargs": _common.measure_row(
            "noargs", lambda: _common.time_calls(mod.noop0, (), **timing)
        ),
        "alloc3": _common.measure_row(
            "alloc3", lambda: _common.time_calls(mod.alloc_like, tensors, **timing)
        ),
        # The framework's own allocation from Python, for scale.
        # The interpreter's own call, for scale: the same in both processes if the host is steady.
        "python_def": _common.measure_row(
            "python_def", lambda: _common.time_calls(_python_noop, (1, 2, 3), **timing)
        ),
        "torch_empty_like": _common.measure_row(
            "torch_empty_like",
            lambda: _common.time_calls(torch.empty_like, tensors[:1], **timing),
        ),
    }


def _python_noop(a, b, c):
    pass


def worker_main(args) -> None:
    """One round of one implementation (``--worker ours|ref``), in a process of its own."""
    tvm_ffi = _ref.import_impl(args.worker)
    rows = measure_calls(tvm_ffi, params(args.quick), args.device)
    _ref.emit_result({"version": _ref.impl_version(tvm_ffi), "rows": rows})


def jit_rows(prefix: str, series: dict | None, error: str | None) -> dict:
    keys = ("cold", "warm_same", "warm_fresh")
    if series is None:
        return {f"{prefix}_{k}": _common.na_row(k, error or "not run") for k in keys}
    return {
        f"{prefix}_{k}": _common.ok_row(k, series[f"{k}_s"])
        if series[f"{k}_s"]
        else _common.na_row(k, "no samples")
        for k in keys
    }


def merge_rounds(prefix: str, per_round: list[dict]) -> dict:
    """{prefix_key: row}: each row's samples are the per-process medians, one per round."""
    merged: dict = {}
    for key in per_round[0]:
        rounds = [r[key] for r in per_round]
        failed = next((r for r in rounds if r.get("status") != "ok"), None)
        merged[f"{prefix}_{key}"] = (
            failed if failed is not None else _common.ok_row(key, [r["median"] for r in rounds])
        )
    return merged


def _worker_cpu(choice: str) -> int | None:
    if choice == "none":
        return None
    allowed = sorted(os.sched_getaffinity(0))
    if choice == "auto":
        return allowed[-1]
    if not choice.isdigit() or int(choice) not in allowed:
        raise SystemExit(f"--cpu {choice}: not one of this process's CPUs {allowed}")
    return int(choice)


def collect(args, workdir: Path) -> dict:
    """Both implementations in worker processes, alternating (ours, ref, ref, ours, ...).

    Why: on a shared host one process can run at half the speed of the next for its whole
    life (seen on the GPU machines: a plain Python call 0.030 us in one run, 0.053 in the next).
    Alternating processes and taking the median over rounds keeps that out of the comparison.
    """
    p = params(args.quick)
    rounds = args.rounds or (3 if args.quick else 5)
    raw: dict = {"params": p, "device": args.device, "rounds": rounds, "rows": {}, "versions": {}}
    rows = raw["rows"]
    ref_dir, ref_desc = _ref.resolve_ref(args)
    raw["ref"] = ref_desc
    worker_args = ["--device", args.device] + (["--quick"] if args.quick else [])
    # Every worker times on one CPU: processes placed on different (virtual) CPUs of a shared
    # host differ by up to 3x for their whole life, which no number of rounds averages away.
    cpu = _worker_cpu(args.cpu)
    raw["cpu"] = cpu
    results: dict = {"ours": [], "ref": []}
    errors: dict = {"ref": ref_desc} if ref_dir is None else {}
    for i in range(rounds):
        for impl in ("ours", "ref") if i % 2 == 0 else ("ref", "ours"):
            if impl in errors:
                continue
            cache = workdir / f"{impl}cache"
            cache.mkdir(exist_ok=True)
            try:
                res = _ref.run_worker(
                    f"{NAME}.py",
                    worker_args,
                    impl=impl,
                    ref_dir=ref_dir if impl == "ref" else None,
                    extra_env={"TVM_FFI_CACHE_DIR": str(cache)}
                    | ({"TVM_FFI_BENCH_CPU": str(cpu)} if cpu is not None else {}),
                )
            except Exception as exc:
                errors[impl] = _common.error_reason(exc)
                continue
            raw["versions"][impl] = res["version"]
            results[impl].append(res["rows"])
    for impl in ("ours", "ref"):
        if impl in errors or not results[impl]:
            reason = errors.get(impl, "no round finished")
            keys = ("tensors3", "noargs", "alloc3", "python_def")
            rows.update({f"{impl}_{k}": _common.na_row(k, reason) for k in keys})
        else:
            rows.update(merge_rounds(impl, results[impl]))
    if results["ours"] and results["ref"] and "ref" not in errors and "ours" not in errors:
        pairs = zip(results["ours"], results["ref"])
        raw["ratios"] = [
            o["tensors3"]["median"] / r["tensors3"]["median"]
            for o, r in pairs
            if o["tensors3"].get("status") == "ok" and r["tensors3"].get("status") == "ok"
        ]
    rows["python_def"] = rows.get("ours_python_def", _common.na_row("python_def", "not run"))

    if args.skip_jit:
        return raw
    jit_kw = {k: p[k] for k in ("cold_reps", "fresh_reps", "warm_repeats")}
    for impl, prefix in (("ours", "ours_jit"), ("ref", "ref_jit")):
        if impl == "ref" and ref_dir is None:
            rows.update(jit_rows(prefix, None, ref_desc))
            continue
        try:
            series = _jit_worker.jit_series(impl, "add_one_cuda", ref_dir=ref_dir, **jit_kw)
            rows.update(jit_rows(prefix, series, None))
        except Exception as exc:
            rows.update(jit_rows(prefix, None, _common.error_reason(exc)))
    return raw


def make_report(raw: dict, mode: str, env: dict) -> dict:
    rows = raw["rows"]
    ref_name = f"apache-tvm-ffi {raw.get('versions', {}).get('ref', '')}".strip()
    p = raw["params"]
    dev = raw.get("device", "cuda").upper()

    def call_line(label: str, key: str, target: float | None = None) -> list[str]:
        row = rows.get(key)
        text = ""
        if target is not None and dev == "CUDA" and row is not None and row.get("status") == "ok":
            text = f"target <= {target} us: {_common.verdict(row['median'], target)}"
        return [label, *_common.stat_cells(row), _common.note_cell(row, text)]

    call_cells = [
        call_line(
            f"tvm_ffi (this project), 3 torch {dev} tensors", "ours_tensors3", TARGET_CALL_US
        ),
        call_line(f"{ref_name} (own processes), 3 torch {dev} tensors", "ref_tensors3"),
        *(
            [
                call_line("tvm_ffi (this project), 3 torch CPU tensors", "ours_tensors3_host"),
                call_line(f"{ref_name} (own processes), 3 torch CPU tensors", "ref_tensors3_host"),
                call_line("tvm_ffi (this project), 1 torch CUDA tensor", "ours_tensor1"),
                call_line(f"{ref_name} (own processes), 1 torch CUDA tensor", "ref_tensor1"),
            ]
            if dev == "CUDA"
            else []
        ),
        call_line("tvm_ffi (this project), no arguments", "ours_noargs"),
        call_line(f"{ref_name} (own processes), no arguments", "ref_noargs"),
        call_line(
            f"tvm_ffi (this project), 3 {dev} tensors, returns Tensor::FromEnvAlloc",
            "ours_alloc3",
        ),
        call_line(f"{ref_name} (own processes), returns Tensor::FromEnvAlloc", "ref_alloc3"),
        call_line(f"torch.empty_like of one {dev} tensor (Python)", "ours_torch_empty_like"),
        call_line("Python def f(a, b, c): pass, in this project's processes", "ours_python_def"),
        call_line(f"Python def f(a, b, c): pass, in {ref_name}'s processes", "ref_python_def"),
    ]
    ratios = raw.get("ratios") or []
    if ratios:
        # Per round (one process of each, back to back), then the median: the bar is 0.5x.
        ratio = (
            f"{statistics.median(ratios):.2f}x apache's (rounds: "
            + ", ".join(f"{r:.2f}" for r in ratios)
            + ")"
        )
        call_cells[0][-1] = f"{call_cells[0][-1]}; {ratio}" if call_cells[0][-1] else ratio
    alloc, noop = rows.get("ours_alloc3"), rows.get("ours_tensors3")
    if all(r is not None and r.get("status") == "ok" for r in (alloc, noop)):
        extra = alloc["median"] - noop["median"]
        for cells in call_cells:
            if cells[0].endswith("returns Tensor::FromEnvAlloc") and cells[0].startswith("tvm_ffi"):
                cells[-1] = (
                    f"+{extra:.3f} us over the no-op; target <= {TARGET_TENSOR_RESULT_US} us: "
                    f"{_common.verdict(extra, TARGET_TENSOR_RESULT_US)}"
                )
    sections = [
        {
            "title": f"Calling an exported no-op: host us per call, median over "
            f"{raw.get('rounds', 1)} alternating processes per implementation (each: "
            f"{p['samples']} samples x {p['iters']} calls after {p['warmup']} warm-up"
            + (f", timed on CPU {raw['cpu']}" if raw.get("cpu") is not None else "")
            + ")",
            "headers": ["path", "median us", "min us", "note"],
            "cells": call_cells,
            "notes": [
                f"{ref_name} ran in processes of its own (it has the same import name, "
                f"tvm_ffi), from {raw.get('ref', '?')}; min us: the fastest round's median"
            ],
        }
    ]

    jit_cells = []
    for prefix, label in (("ours_jit", "tvm_ffi (this project)"), ("ref_jit", ref_name)):
        for key, what, scale, unit, target in (
            ("cold", "cold (fresh process, fresh cache)", 1.0, "s", TARGET_COLD_S),
            ("warm_same", "warm, same process", 1e3, "ms", TARGET_WARM_MS),
            ("warm_fresh", "warm, fresh process (cache hit)", 1e3, "ms", TARGET_WARM_MS),
        ):
            row = rows.get(f"{prefix}_{key}")
            text = ""
            if prefix == "ours_jit" and row is not None and row.get("status") == "ok":
                text = (
                    f"target <= {target} {unit}: {_common.verdict(row['median'] * scale, target)}"
                )
            n = str(row["n"]) if row and row.get("status") == "ok" else "-"
            jit_cells.append(
                [
                    f"{label}: {what}",
                    *_common.stat_cells(row, scale),
                    unit,
                    n,
                    _common.note_cell(row, text),
                ]
            )
    if any(k.endswith("_jit_cold") for k in rows):
        sections.append(
            {
                "title": "load_inline of a one-function cuda_sources module",
                "headers": ["path", "median", "min", "unit", "n", "note"],
                "cells": jit_cells,
                "notes": [
                    "cold: a fresh process with an empty TVM_FFI_CACHE_DIR, timing the "
                    "load_inline call only; warm fresh: a new process on that cache",
                    f"TVM_FFI_CUDA_ARCH_LIST={env.get('cuda_arch_list_env')!s} (unset: each "
                    "implementation picks the archs itself)",
                ],
            }
        )
    return _common.report(NAME, mode, env, raw, sections)


def main(argv=None) -> None:
    _common.main(argv, parse_args, collect, make_report, worker_main)


if __name__ == "__main__":
    main()
