"""Interleaved batch timing: every row measured once per round, in a rotating order.

Why: a launch costs a few microseconds of host time, while the GPU clocks, the CPU frequency
and the driver's state drift by as much over a run. Measuring each row in its own block of time
turns that drift into differences between rows. Here each round times one batch of every row,
the order rotated by one each round, so drift reaches all rows alike.

Why small batches: a batch (e.g. 200 launches) stays well below the GPU's queue of pending
launches, so the host never blocks on a full queue and the time is the host's enqueue cost, not
the GPU's throughput. The synchronization after each batch is outside the timed region.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import _common


@dataclass
class Row:
    """One table row: ``batch()`` does ``launches`` launches (or calls) and returns.

    ``context``, when set, makes a context manager entered around each batch, outside the
    timed region (e.g. a different current stream for this row only).
    """

    batch: Callable[[], object]
    context: Callable[[], contextlib.AbstractContextManager] | None = None
    extra: dict = field(default_factory=dict)


def python_batch(fn: Callable, args: Sequence, launches: int) -> Callable[[], None]:
    """A batch of ``launches`` calls ``fn(*args)`` from a plain Python loop with local names
    (no ``*args`` unpacking per call: that alone costs tens of ns)."""
    return functools.partial(_common.make_loop(len(args)), fn, launches, *args)


def native_batch(fn: Callable, launches: int) -> Callable[[], object]:
    """A batch run by one call ``fn(launches)`` that loops in C++ (the floors)."""
    return functools.partial(fn, launches)


def measure(
    rows: dict[str, Row],
    *,
    launches: int,
    rounds: int,
    warmup_rounds: int,
    sync: Callable[[], object],
    clock: Callable[[], int] = time.perf_counter_ns,
) -> tuple[dict[str, list[float]], dict[str, str]]:
    """Time ``rounds`` batches of every row, interleaved; returns (samples, failures).

    samples: row -> microseconds per launch, one value per round. failures: row -> reason,
    for rows whose batch raised (in warm-up or later); such a row leaves the rotation and the
    others go on. ``sync`` (e.g. torch.cuda.synchronize) runs after each batch, untimed.
    """
    live = dict(rows)
    failures: dict[str, str] = {}
    samples: dict[str, list[float]] = {key: [] for key in rows}

    def one(key: str) -> None:
        row = live[key]
        try:
            with row.context() if row.context else contextlib.nullcontext():
                t0 = clock()
                row.batch()
                t1 = clock()
                sync()
        except Exception as exc:
            failures[key] = _common.error_reason(exc)
            del live[key]
            return
        samples[key].append((t1 - t0) / launches / 1e3)

    order = list(rows)
    for _ in range(warmup_rounds):
        for key in [k for k in order if k in live]:
            one(key)
    for key in samples:
        samples[key].clear()
    sync()
    gc_was_enabled = gc.isenabled()
    gc.disable()  # a collection inside one row's batch would be charged to that row alone
    try:
        for r in range(rounds):
            shift = r % len(order) if order else 0
            for key in order[shift:] + order[:shift]:
                if key in live:
                    one(key)
            if r % 100 == 99:  # now and then, untimed, so that garbage does not pile up
                gc.collect()
    finally:
        if gc_was_enabled:
            gc.enable()
    return {k: v for k, v in samples.items() if k not in failures}, failures


def spread(samples: Sequence[float]) -> dict:
    """p10 and p90 of the samples (both the single value when there is only one)."""
    if len(samples) < 2:
        return {"p10": samples[0], "p90": samples[0]}
    cuts = statistics.quantiles(samples, n=10, method="inclusive")
    return {"p10": cuts[0], "p90": cuts[-1]}


def to_rows(
    rows: dict[str, Row], samples: dict[str, list[float]], failures: dict[str, str]
) -> dict[str, dict]:
    """Table rows (ok with median/min/p10/p90, or n/a with the reason) for every row."""
    out = {}
    for key, row in rows.items():
        if key in failures:
            out[key] = _common.na_row(key, failures[key], **row.extra)
        elif samples.get(key):
            out[key] = _common.ok_row(key, samples[key], **spread(samples[key]), **row.extra)
        else:
            out[key] = _common.na_row(key, "no samples", **row.extra)
    return out
