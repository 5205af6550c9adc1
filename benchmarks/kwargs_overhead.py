"""Host cost per call of tvm_ffi.utils.kwargs_wrapper.make_kwargs_wrapper (CPU only).

The target is a Python function of 4 positional parameters, so each row shows what binding
costs over calling the target directly. Rows, side by side:
  * the target called directly, and through a hand-written ``def`` with the same signature
    (the code apache-tvm-ffi's wrapper generates and execs: the floor for any wrapper);
  * this project's wrapper: 4 positional arguments, 2 of them by keyword, 2 defaults, a
    keyword-only default, and a dataclass argument mapped to a tuple;
  * an ``inspect.Signature.bind`` wrapper: the obvious alternative without generated code.
Run: python benchmarks/kwargs_overhead.py [--quick] [--json PATH]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common

NAME = "kwargs_overhead"


def parse_args(argv=None):
    return _common.base_parser(NAME, __doc__.splitlines()[0]).parse_args(argv)


def params(quick: bool) -> dict:
    if quick:
        return {"iters": 20000, "samples": 7, "warmup": 2000}
    return {"iters": 200000, "samples": 21, "warmup": 20000}


def target(a, b, c, d):
    return None


def hand_written(a, b, c=3, d=4):
    return target(a, b, c, d)


# One loop per call shape, the arguments written out as a user's hot loop writes them (no
# *args/**kwargs unpacking, no functools.partial: those would cost more than the wrapper).
def _four(fn, iters):
    for _ in range(iters):
        fn(1, 2, 3, 4)


def _two(fn, iters):
    for _ in range(iters):
        fn(1, 2)


def _three(fn, iters):
    for _ in range(iters):
        fn(1, 2, 3)


def _two_by_keyword(fn, iters):
    for _ in range(iters):
        fn(1, 2, c=3, d=4)


def _one_by_keyword(fn, iters):
    for _ in range(iters):
        fn(1, 2, 3, d=4)


def cases() -> list[tuple[str, object, object]]:
    """(label, callable, loop) per row; the wrappers are built here, outside the timing."""
    import dataclasses
    import inspect

    from tvm_ffi.utils.kwargs_wrapper import make_kwargs_wrapper

    names = ["a", "b", "c", "d"]
    positional = make_kwargs_wrapper(target, names)
    defaults = make_kwargs_wrapper(target, names, (3, 4))
    kwonly = make_kwargs_wrapper(target, ["a", "b", "c"], (), ["d"], {"d": 4})

    @dataclasses.dataclass
    class Point:
        x: int
        y: int

    point = Point(1, 2)
    mapped = make_kwargs_wrapper(target, names, map_dataclass_to_tuple=["a"])

    def with_point(fn, iters):
        for _ in range(iters):
            fn(point, 2, 3, 4)

    signature = inspect.signature(hand_written)

    def by_signature(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return target(*bound.args)

    return [
        ("target(1, 2, 3, 4) directly", target, _four),
        ("hand-written def: f(1, 2)", hand_written, _two),
        ("hand-written def: f(1, 2, c=3, d=4)", hand_written, _two_by_keyword),
        ("wrapper: w(1, 2, 3, 4)", positional, _four),
        ("wrapper: w(1, 2, c=3, d=4)", positional, _two_by_keyword),
        ("wrapper, 2 defaults: w(1, 2)", defaults, _two),
        ("wrapper, keyword-only default: w(1, 2, 3)", kwonly, _three),
        ("wrapper, keyword-only given: w(1, 2, 3, d=4)", kwonly, _one_by_keyword),
        ("wrapper, dataclass mapped: w(Point(1, 2), 2, 3, 4)", mapped, with_point),
        ("Signature.bind wrapper: w(1, 2, c=3, d=4)", by_signature, _two_by_keyword),
    ]


def time_loop(fn, loop, *, iters: int, samples: int, warmup: int) -> list[float]:
    """Microseconds per call, one value per sample of ``iters`` calls."""
    import time

    loop(fn, warmup)
    out = []
    for _ in range(samples):
        t0 = time.perf_counter_ns()
        loop(fn, iters)
        out.append((time.perf_counter_ns() - t0) / iters / 1e3)
    return out


def collect(args, workdir: Path) -> dict:
    p = params(args.quick)
    rows = []
    for label, fn, loop in cases():
        row = _common.measure_row(label, lambda fn=fn, loop=loop: time_loop(fn, loop, **p))
        rows.append(row)
        _common.progress(f"{label}: {_common.note_cell(row) or row['median']}")
    return {"params": p, "rows": rows}


def make_report(raw: dict, mode: str, env: dict) -> dict:
    rows = raw["rows"]
    floor = rows[0]["median"] if rows[0]["status"] == "ok" else None
    cells = []
    for row in rows:
        median = row.get("median")
        over = None if median is None or floor is None else (median - floor) * 1e3
        cells.append(
            [
                row["path"],
                *_common.stat_cells(row, 1e3, 1),
                "-" if over is None else f"{over:+.1f}",
                _common.note_cell(row),
            ]
        )
    section = {
        "title": "ns per call (the target: a Python def of 4 parameters)",
        "headers": ["call", "median ns", "min ns", "over target ns", "note"],
        "cells": cells,
        "notes": [
            "the hand-written def rows are the floor for their call shape: what a generated "
            "wrapper costs"
        ],
    }
    return _common.report(NAME, mode, env, raw, [section])


if __name__ == "__main__":
    _common.main(None, parse_args, collect, make_report)
