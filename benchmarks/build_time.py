"""Build times: cold and warm load_inline, and NVRTC, for this project beside apache-tvm-ffi.

Cases, each built by both implementations from the same source:
  * a small C++ module (cpp_sources, 2 exported functions);
  * a small CUDA module (cuda_sources, one kernel and one exported function);
  * a module embedding 10 CUBINs (cuda_sources wrapper + embed_cubin with 10 images);
  * NVRTC: ``tvm_ffi.cpp.nvrtc.nvrtc_compile(src, arch=...)`` of a small kernel (first call,
    which loads NVRTC, and repeated calls).
cold = fresh process and empty TVM_FFI_CACHE_DIR (only the load_inline call is timed);
warm same = the same call again in that process; warm fresh = a new process on that cache.
apache-tvm-ffi runs in its own processes (it has the same import name).
Run: python benchmarks/build_time.py [--quick] [--json PATH] [--ref-wheel W | --ref-path D]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _build_speed
import _common
import _jit_worker
import _ref
import _sources

NAME = "build_time"
CASES = (
    ("noop_cpp", "small C++ module"),
    ("add_one_cuda", "small CUDA module"),
    ("cubin10", "10 embedded CUBINs"),
)


def parse_args(argv=None):
    parser = _common.base_parser(NAME, __doc__.splitlines()[0])
    parser.add_argument(
        "--arch", default=None, help="sm_XY for the CUBINs and NVRTC (default: GPU 0's, else sm_90)"
    )
    parser.add_argument(
        "--baseline-path",
        default=None,
        help="a folder holding another build of this project's tvm_ffi (put first on "
        "PYTHONPATH): adds its fresh-process cache hit as the 'before' figure",
    )
    parser.add_argument(
        "--only-speed", action="store_true", help="only the JIT build-speed table (issue 11)"
    )
    parser.add_argument(
        "--many",
        type=int,
        default=_build_speed.MANY,
        help="small modules in the load_inline_many rows (default: %(default)s; 0 leaves them out)",
    )
    return parser.parse_args(argv)


def params(quick: bool) -> dict:
    if quick:
        return {"cold_reps": 1, "fresh_reps": 1, "warm_repeats": 5, "nvrtc_repeats": 5}
    return {"cold_reps": 3, "fresh_reps": 3, "warm_repeats": 20, "nvrtc_repeats": 20}


def series_rows(prefix: str, series: dict | None, reason: str | None) -> dict:
    out = {}
    for key in ("cold", "warm_same", "warm_fresh"):
        samples = series.get(f"{key}_s") if series else None
        out[f"{prefix}_{key}"] = (
            _common.ok_row(key, samples) if samples else _common.na_row(key, reason or "no samples")
        )
    return out


def collect(args, workdir: Path) -> dict:
    p = params(args.quick)
    arch = args.arch or _common.cuda_arch() or "sm_90"
    raw: dict = {"params": p, "arch": arch, "rows": {}, "versions": {}, "notes": []}
    rows = raw["rows"]
    ref_dir, ref_desc = _ref.resolve_ref(args)
    raw["ref"] = ref_desc

    cubin_dir, cubin_error = workdir / "cubins", None
    try:
        sources = {f"c{i}": _sources.numbered_kernel(i) for i in range(10)}
        _common.compile_cubins(sources, arch, cubin_dir)
    except Exception as exc:
        cubin_error = f"CUBINs: {_common.error_reason(exc)}"

    args.arch_used = arch
    raw["speed"] = _build_speed.collect(args, cubin_dir, cubin_error, ref_dir, ref_desc)
    raw["speed_params"] = {
        "reps": 1 if args.quick else 3,
        "fresh": 3 if args.quick else 10,
        "many": args.many,
    }
    jit_kw = {k: p[k] for k in ("cold_reps", "fresh_reps", "warm_repeats")}
    for impl in () if args.only_speed else ("ours", "ref"):
        for case, _ in CASES:
            prefix = f"{impl}_{case}"
            if impl == "ref" and ref_dir is None:
                rows.update(series_rows(prefix, None, ref_desc))
                continue
            if case == "cubin10" and cubin_error:
                rows.update(series_rows(prefix, None, cubin_error))
                continue
            try:
                series = _jit_worker.jit_series(
                    impl,
                    case,
                    ref_dir=ref_dir,
                    cubin_dir=str(cubin_dir) if case == "cubin10" else None,
                    **jit_kw,
                )
                raw["versions"][impl] = series.get("version")
                rows.update(series_rows(prefix, series, None))
            except Exception as exc:
                rows.update(series_rows(prefix, None, _common.error_reason(exc)))
        # NVRTC: one fresh process, first compile then repeats.
        prefix = f"{impl}_nvrtc"
        if impl == "ref" and ref_dir is None:
            rows[f"{prefix}_cold"] = _common.na_row("cold", ref_desc)
            rows[f"{prefix}_warm_same"] = _common.na_row("warm_same", ref_desc)
            continue
        try:
            res = _ref.run_worker(
                "_jit_worker.py",
                ["--mode", "nvrtc", "--arch", arch, "--warm-repeats", str(p["nvrtc_repeats"])],
                impl=impl,
                ref_dir=ref_dir,
            )
            rows[f"{prefix}_cold"] = _common.ok_row("cold", [res["first_s"]])
            rows[f"{prefix}_warm_same"] = _common.ok_row("warm_same", res["again_s"])
        except Exception as exc:
            reason = _common.error_reason(exc)
            rows[f"{prefix}_cold"] = _common.na_row("cold", reason)
            rows[f"{prefix}_warm_same"] = _common.na_row("warm_same", reason)
    return raw


def make_report(raw: dict, mode: str, env: dict) -> dict:
    rows = raw["rows"]
    p = raw["params"]
    versions = raw.get("versions", {})
    names = {
        "ours": "tvm_ffi (this project)",
        "ref": f"apache-tvm-ffi {versions.get('ref') or ''}".strip(),
    }
    cells = []
    for impl in ("ours", "ref"):
        for case, label in (*CASES, ("nvrtc", "NVRTC compile")):
            cold = rows.get(f"{impl}_{case}_cold")
            same = rows.get(f"{impl}_{case}_warm_same")
            fresh = rows.get(f"{impl}_{case}_warm_fresh")
            problem = next((r for r in (cold, same, fresh) if r and r.get("status") != "ok"), None)
            cells.append(
                [
                    f"{names[impl]}: {label}",
                    *_common.stat_cells(cold),
                    _common.stat_cells(same, 1e3)[0],
                    _common.stat_cells(fresh, 1e3)[0] if case != "nvrtc" else "-",
                    _common.note_cell(problem) if problem else "",
                ]
            )
    section = {
        "title": "load_inline and NVRTC build times",
        "headers": [
            "path",
            "cold s (median)",
            "cold s (min)",
            "warm same ms",
            "warm fresh ms",
            "note",
        ],
        "cells": cells,
        "notes": [
            f"cold: {p['cold_reps']} fresh process(es), each with an empty "
            f"TVM_FFI_CACHE_DIR; warm same: median of {p['warm_repeats']} repeats per "
            f"process; warm fresh: median of {p['fresh_reps']} new processes on the cache",
            f"NVRTC: cold = first nvrtc_compile in a fresh process (loads NVRTC), warm = "
            f"median of {p['nvrtc_repeats']} more; arch {raw.get('arch')}",
            f"apache-tvm-ffi ran in its own processes, from {raw.get('ref', '?')}",
        ],
    }
    sections = [section] if rows else []
    if "speed" in raw:
        sections.append(_build_speed.section(raw["speed"], raw["speed_params"], raw.get("arch")))
    return _common.report(NAME, mode, env, raw, sections, raw.get("notes", []))


def main(argv=None) -> None:
    _common.main(argv, parse_args, collect, make_report)


if __name__ == "__main__":
    main()
