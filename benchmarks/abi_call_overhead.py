"""Host cost of one call through the tvm-ffi C ABI: the new Python core (_core_next, built from
staging/python_core) against apache-tvm-ffi's own Python, and against today's core.

Rows: a no-op called with no arguments, with 3 CPU torch tensors, with 3 ints.
Columns, each in its own process (they cannot share one):
  * next: _core_next + apache's libtvm_ffi.so, calling a library built as apache's clients
    build theirs (tests/abi/pycore/echo_lib.cc: noop, noop_tensors, noop_ints);
  * next-ours: _core_next + our libtvm_ffi.so (staging/runtime), the same library (with CUDA
    tensors the stream comes from a lazy call frame there, not set eagerly);
  * apache: apache-tvm-ffi's Python (PYTHONPATH = its unpacked wheel) calling the same library;
  * today: this package's installed core (ABI v3) calling the same no-ops made by load_inline.
Medians of many samples after a warm-up, in microseconds per call (CPU tensors unless
--device cuda). The columns run
in turns for several rounds and each cell keeps its best round's median, so that load from
other processes in one stretch of time does not land on one column.
Run: python benchmarks/abi_call_overhead.py [--samples N] [--iters N] [--rounds N]
     [--device cpu|cuda]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

# Runs in each child after it has bound `lib` (an object whose attributes are the three no-ops).
TIMING = r"""
import json, statistics, sys, time, torch
ITERS, SAMPLES, DEVICE = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
t = torch.ones(4, device=DEVICE)
cases = {"no-arg call": (lib.noop, ()),
         f"3 {DEVICE.upper()} torch tensors": (lib.noop_tensors, (t, t, t)),
         "3 ints": (lib.noop_ints, (1, 2, 3))}
def loop0(fn, n):
    for _ in range(n): fn()
def loop3(fn, n, a, b, c):
    for _ in range(n): fn(a, b, c)
out = {}
for name, (fn, args) in cases.items():
    loop = loop3 if args else loop0
    loop(fn, ITERS, *args)  # warm-up: type caches, pools, branch predictors
    samples = []
    for _ in range(SAMPLES):
        t0 = time.perf_counter_ns()
        loop(fn, ITERS, *args)
        samples.append((time.perf_counter_ns() - t0) / ITERS / 1e3)
    out[name] = statistics.median(samples)
print(json.dumps(out))
"""

NOOP_SOURCE = """
#include <tvm/ffi/function.h>
#include <tvm/ffi/container/tensor.h>
void noop() {}
void noop_tensors(tvm::ffi::TensorView, tvm::ffi::TensorView, tvm::ffi::TensorView) {}
void noop_ints(int64_t, int64_t, int64_t) {}
"""


def run(code: str, args: argparse.Namespace, env: dict | None = None) -> dict:
    cmd = [sys.executable, "-c", code + TIMING, str(args.iters), str(args.samples), args.device]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"benchmark child failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=2000, help="calls per sample")
    parser.add_argument("--samples", type=int, default=200, help="samples per row")
    parser.add_argument("--rounds", type=int, default=3, help="turns of the columns")
    parser.add_argument(
        "--device", default="cpu", help="the tensors' torch device (cuda: the stream is set)"
    )
    args = parser.parse_args(argv)

    from helpers import apache_wheel, next_pycore

    wheel = apache_wheel.fetch_wheel()
    if wheel is None:
        sys.exit("apache-tvm-ffi's wheel cannot be had (no network, no cached wheel)")
    programs = {}
    for column, runtime_name in (("next", "apache"), ("next-ours", "ours")):
        setup = next_pycore.setup(runtime_name)
        assert setup is not None
        runtime, core_dir, lib, _ = setup
        prelude = next_pycore.child_prelude(runtime, core_dir)
        programs[column] = (prelude + f"lib = core.load_module({str(lib)!r})\n", None)
    programs.update(
        {
            "apache": (
                f"import tvm_ffi\nlib = tvm_ffi.load_module({str(lib)!r})\n",
                dict(os.environ, PYTHONPATH=str(apache_wheel.unpacked(wheel))),
            ),
            "today": (
                "import tvm_ffi.cpp\n"
                f"lib = tvm_ffi.cpp.load_inline('abi_noop', cpp_sources={NOOP_SOURCE!r}, "
                "functions=['noop', 'noop_tensors', 'noop_ints'])\n",
                None,
            ),
        }
    )
    columns: dict[str, dict[str, float]] = {}
    for _ in range(args.rounds):
        for column, (code, env) in programs.items():
            result = run(code, args, env)
            best = columns.setdefault(column, result)
            for row, value in result.items():
                best[row] = min(best[row], value)

    rows = list(columns["next"])
    print(f"{'us per call (median)':<24}" + "".join(f"{c:>10}" for c in columns))
    for row in rows:
        print(f"{row:<24}" + "".join(f"{columns[c][row]:>10.3f}" for c in columns))
    print(
        f"(best of {args.rounds} rounds; each the median of {args.samples} samples of "
        f"{args.iters} calls, after a warm-up)"
    )


if __name__ == "__main__":
    main()
