"""Host cost of calling an exported function, and of load_inline (issue 2's performance targets).

Rows, side by side:
  * this project's tvm_ffi: a no-op exported with ``load_inline(..., cpp_sources=...,
    functions=[...])`` called with 3 torch CUDA tensors, and with no arguments;
  * apache-tvm-ffi (same import name, so it runs with PYTHONPATH pointing at its unpacked
    wheel): the same source, the same calls;
  each in a worker process of its own; the two workers time on one CPU and take turns, sample
  by sample (collect says why);
  * a Python ``def`` with the same arguments: what the interpreter alone costs;
  * cold ``load_inline`` of a one-function ``cuda_sources`` module (fresh process, fresh
    TVM_FFI_CACHE_DIR), warm ``load_inline`` in the same process, and warm in a fresh process
    that hits the cache, for both implementations.

Targets (H100/H200): call <= 0.45 us, cold <= 3 s, warm <= 3 ms.
Run: python benchmarks/call_overhead.py [--quick] [--json PATH] [--ref-wheel W | --ref-path D]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
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
        help="pairs of worker processes (one per implementation), one after the other "
        "(default: 2 quick, 3 full)",
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
            "iters": 10000,
            "samples": 30,
            "warmup": 2000,
            "cold_reps": 1,
            "fresh_reps": 3,
            "warm_repeats": 10,
        }
    return {
        "iters": 20000,
        "samples": 60,
        "warmup": 10000,
        "cold_reps": 3,
        "fresh_reps": 5,
        "warm_repeats": 20,
    }


def call_rows_keys(device: str) -> list[str]:
    """The keys call_rows makes, in its order (known without building anything)."""
    return (["tensors3_host", "tensor1"] if device == "cuda" else []) + [
        "tensors3", "noargs", "alloc3", "python_def", "torch_empty_like",
    ]  # fmt: skip


def call_rows(device: str = "cuda") -> dict:
    """{row key: (function, args)}: the calls timed through one implementation (in this process)."""
    import torch

    mod = _ref.import_cpp().load_inline(
        "bench_call_noop", cpp_sources=_sources.NOOP_CPP, functions=_sources.NOOP_FUNCTIONS
    )
    tensors = tuple(torch.rand(4, device=device) for _ in range(3))
    rows = {}
    if device == "cuda":
        # What a CUDA tensor costs over a host one (device and stream handling), and per tensor.
        rows["tensors3_host"] = (mod.noop, tuple(t.cpu() for t in tensors))
        rows["tensor1"] = (mod.noop1, tensors[:1])
    return rows | {
        "tensors3": (mod.noop, tensors),
        "noargs": (mod.noop0, ()),
        "alloc3": (mod.alloc_like, tensors),
        # The interpreter's own call, for scale: the same on both sides if the host is steady.
        "python_def": (_python_noop, (1, 2, 3)),
        # The framework's own allocation from Python, for scale.
        "torch_empty_like": (torch.empty_like, tensors[:1]),
    }


def _python_noop(a, b, c):
    pass


def worker_main(args) -> None:
    """One implementation (``--worker ours|ref``) in a process of its own, serving samples.

    It builds and warms every row, says so, then times one sample of the row named on each
    line of stdin (one line of output each) until stdin closes: the parent alternates the two
    implementations sample by sample.
    """
    tvm_ffi = _ref.import_impl(args.worker)
    p = params(args.quick)
    rows = {}
    for key, (fn, fn_args) in call_rows(args.device).items():
        try:
            loop = _common.make_loop(len(fn_args))
            loop(fn, p["warmup"], *fn_args)
            rows[key] = (loop, fn, fn_args)
        except Exception as exc:
            rows[key] = _common.error_reason(exc)
    cpu = os.environ.get("TVM_FFI_BENCH_CPU")
    if cpu:  # this thread only: the build above used every CPU
        os.sched_setaffinity(0, {int(cpu)})
    failed = {k: v for k, v in rows.items() if isinstance(v, str)}
    _ref.emit_result({"version": _ref.impl_version(tvm_ffi), "failed": failed})
    for line in sys.stdin:
        loop, fn, fn_args = rows[line.strip()]
        t0 = time.perf_counter_ns()
        loop(fn, p["iters"], *fn_args)
        t1 = time.perf_counter_ns()
        _ref.emit_result({"us": (t1 - t0) / p["iters"] / 1e3})


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


class _Server:
    """A worker process serving samples of one implementation (worker_main)."""

    def __init__(self, impl: str, args, ref_dir: str | None, env: dict, workdir: Path) -> None:
        cmd = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--worker",
            impl,
            "--device",
            args.device,
            *(["--quick"] if args.quick else []),
        ]
        self.impl = impl
        self.log = open(workdir / f"{impl}.stderr", "w+")  # noqa: SIM115 (closed in close())
        # cwd outside the repository so that no stray ./tvm_ffi shadows the package under test.
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True,
            env=_ref.worker_env(impl, ref_dir, env), cwd=tempfile.gettempdir(),
        )  # fmt: skip

    def result(self) -> dict:
        for line in self.proc.stdout:
            if line.startswith(_ref.RESULT_MARKER):
                return json.loads(line[len(_ref.RESULT_MARKER) :])
        self.proc.wait()
        self.log.seek(0)
        reason = _ref.failure_reason(self.log.read())
        raise RuntimeError(f"{self.impl} worker exited {self.proc.returncode}: {reason}")

    def sample(self, key: str) -> float:
        self.proc.stdin.write(key + "\n")
        self.proc.stdin.flush()
        return self.result()["us"]

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


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
    """Both implementations in worker processes that serve samples, alternated sample by sample.

    Why: on a shared host the speed of a process drifts (seen on the GPU machines: a plain
    Python call took 0.030 us in one process and 0.053 us in the next, and rounds of one process
    per side gave ratios from 0.2 to 0.8). Samples a few milliseconds apart, on one CPU, see
    the same host: each pair gives a ratio, and the median over pairs is the comparison.
    """
    p = params(args.quick)
    rounds = args.rounds or (2 if args.quick else 3)
    raw: dict = {"params": p, "device": args.device, "rounds": rounds, "rows": {}, "versions": {}}
    rows = raw["rows"]
    ref_dir, ref_desc = _ref.resolve_ref(args)
    raw["ref"] = ref_desc
    cpu = _worker_cpu(args.cpu)
    raw["cpu"] = cpu
    impls = ["ours"] + (["ref"] if ref_dir is not None else [])
    errors: dict = {} if ref_dir is not None else {"ref": ref_desc}
    samples: dict = {impl: {} for impl in impls}
    failed: dict = {}
    ratios: list[float] = []
    for _ in range(rounds):
        servers: dict = {}
        try:
            for impl in impls:
                env = {"TVM_FFI_CACHE_DIR": str(workdir / f"{impl}cache")}
                if cpu is not None:
                    env["TVM_FFI_BENCH_CPU"] = str(cpu)
                servers[impl] = _Server(impl, args, ref_dir if impl == "ref" else None, env,
                                        workdir)  # fmt: skip
            for impl, server in list(servers.items()):
                try:
                    ready = server.result()
                except Exception as exc:
                    errors[impl] = _common.error_reason(exc)
                    servers.pop(impl).close()
                    continue
                raw["versions"][impl] = ready["version"]
                failed.update({f"{impl}_{k}": v for k, v in ready["failed"].items()})
            keys = call_rows_keys(args.device)
            for i in range(p["samples"]):
                for j, key in enumerate(keys):
                    order = list(servers) if (i + j) % 2 == 0 else list(reversed(servers))
                    got = {}
                    for impl in order:
                        if f"{impl}_{key}" in failed:
                            continue
                        got[impl] = servers[impl].sample(key)
                        samples[impl].setdefault(key, []).append(got[impl])
                    if key == "tensors3" and len(got) == 2:
                        ratios.append(got["ours"] / got["ref"])
        except Exception as exc:
            for impl in servers:
                errors.setdefault(impl, _common.error_reason(exc))
        finally:
            for server in servers.values():
                server.close()
    for impl in ("ours", "ref"):
        for key in call_rows_keys(args.device):
            name = f"{impl}_{key}"
            if name in failed:
                rows[name] = _common.na_row(key, failed[name])
            elif samples.get(impl, {}).get(key):
                rows[name] = _common.ok_row(key, samples[impl][key])
            else:
                rows[name] = _common.na_row(key, errors.get(impl, "not run"))
    if ratios:
        raw["ratios"] = ratios
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
        # Per pair of samples (one of each, back to back), then the median.
        q = statistics.quantiles(ratios, n=10) if len(ratios) > 1 else [ratios[0]] * 9
        ratio = (
            f"{statistics.median(ratios):.2f}x apache's (median of {len(ratios)} sample pairs; "
            f"p10-p90 {q[0]:.2f}-{q[-1]:.2f})"
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
            "title": f"Calling an exported no-op: host us per call, median of "
            f"{raw.get('rounds', 1)} x {p['samples']} samples of {p['iters']} calls per "
            f"implementation ({raw.get('rounds', 1)} worker process pairs, samples alternated "
            f"between the two, after {p['warmup']} warm-up calls"
            + (f", timed on CPU {raw['cpu']}" if raw.get("cpu") is not None else "")
            + ")",
            "headers": ["path", "median us", "min us", "note"],
            "cells": call_cells,
            "notes": [
                f"{ref_name} ran in processes of its own (it has the same import name, "
                f"tvm_ffi), from {raw.get('ref', '?')}; min us: the fastest sample"
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
