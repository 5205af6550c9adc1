"""The JIT build-speed rows of build_time.py (issue 11): the guide's wrapper against a
plain ``nvcc -c`` of the same source, a new CUBIN into that wrapper, a cache hit in a fresh
process (import included), and 32 small modules built by one call or one after the other.

Each implementation runs in its own processes (``_jit_worker.py``); a ``--baseline-path``
(a folder with another build of this project's ``tvm_ffi``, e.g. an older install) adds a
"before" column to the cache-hit row.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import _common
import _jit_worker
import _ref

MANY = 32


def _median(samples: list[float]) -> float:
    return statistics.median(samples)


def compile_times(cubin_dir: Path, arch: str, reps: int) -> dict:
    """``nvcc -c`` and ``c++ -c`` of the wrapper as load_inline writes it (prelude
    includes, one arch, -O2), each ``reps`` times."""
    from tvm_ffi import config

    include = config.get_include_dir()
    nvcc = _common.nvcc_path()
    if nvcc is None:
        raise RuntimeError("nvcc not found")
    from tvm_ffi.cpp import _toolchain

    cuda_include = str(_toolchain.find_cuda_home() / "include")  # where load_inline looks
    prelude = []
    for header in ("container/tensor.h", "dtype.h", "error.h", "extra/c_env_api.h", "function.h"):
        prelude += ["-include", f"tvm/ffi/{header}"]
    work = Path(tempfile.mkdtemp(prefix="tvm_ffi_bench_nvcc_", dir=cubin_dir))
    src = work / "cuda.cu"
    src.write_text(_jit_worker.wrapper_source())
    major, minor = arch.removeprefix("sm_")[:-1], arch[-1]
    gencode = f"-gencode=arch=compute_{major}{minor},code=sm_{major}{minor}"
    common = ["-std=c++17", "-O2", f"-I{include}", f"-I{cuda_include}", *prelude]
    commands = {
        "nvcc": [nvcc, *common, "-Xcompiler", "-fPIC", gencode, "-c", str(src), "-o", "n.o"],
        "cxx": ["c++", "-x", "c++", "-include", "cuda_runtime.h", *common, "-fPIC",
                "-c", str(src), "-o", "h.o"],
    }  # fmt: skip
    out: dict = {"nvcc": [], "cxx": [], "nvcc_cpu": [], "cxx_cpu": []}
    for _ in range(reps):
        for label, cmd in commands.items():
            cpu0 = _jit_worker.children_cpu()
            t0 = time.perf_counter()
            subprocess.run(cmd, cwd=work, check=True, capture_output=True)
            out[label].append(time.perf_counter() - t0)
            out[f"{label}_cpu"].append(_jit_worker.children_cpu() - cpu0)
    return out


def arch_env(arch: str) -> dict:
    """One target arch for every build of these rows, as for the plain nvcc -c."""
    digits = arch.removeprefix("sm_")
    return {"TVM_FFI_CUDA_ARCH_LIST": f"{digits[:-1]}.{digits[-1]}"}


def hit_series(
    impl: str, ref_dir, cubin_dir: str, reps: int, arch: str, pythonpath=None
) -> list[float]:
    """Import + cached load_inline of the wrapper in ``reps`` fresh processes."""
    cache = tempfile.mkdtemp(prefix=f"tvm_ffi_bench_hit_{impl}_")
    env = {"TVM_FFI_CACHE_DIR": cache, **arch_env(arch)}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    args = ["--case", "wrapper", "--cubin-dir", cubin_dir]
    try:
        _ref.run_worker("_jit_worker.py", [*args, "--mode", "cold", "--warm-repeats", "0"],
                        impl=impl, ref_dir=ref_dir, extra_env=env)  # fmt: skip
        source = Path(cache) / "wrapper.cu"
        source.write_text(_jit_worker.wrapper_source())
        image = str(Path(cubin_dir) / "c0.cubin")  # _jit_worker.wrapper_image(cubin_dir, 0)
        samples, cpu = [], []
        for _ in range(reps):
            # A bare process (see _hit_probe.py): the worker's own imports would hide part
            # of the package's import.
            res = _ref.run_worker("_hit_probe.py", [str(source), image], impl=impl,
                                  ref_dir=ref_dir, extra_env=env)  # fmt: skip
            samples.append(res["hit_s"])
            cpu.append(res["cpu_s"])
        return samples, cpu
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def collect(args, cubin_dir: Path, cubin_error: str | None, ref_dir, ref_desc: str) -> dict:
    """The rows, as _common rows keyed ``<impl>_<measure>``."""
    reps = 1 if args.quick else 3
    fresh = 3 if args.quick else 10
    rows: dict = {}

    def guard(key: str, label: str, fn) -> None:
        try:
            rows[key] = _common.ok_row(label, fn())
        except Exception as exc:
            rows[key] = _common.na_row(label, _common.error_reason(exc))

    def compiles():
        times = compile_times(cubin_dir, args.arch_used, reps)
        rows["nvcc_c"] = _common.ok_row("nvcc -c", times["nvcc"], cpu=_median(times["nvcc_cpu"]))
        rows["cxx_c_cpu"] = _median(times["cxx_cpu"])
        return times["cxx"]

    guard("cxx_c", "c++ -c", compiles)
    rows.setdefault("nvcc_c", rows["cxx_c"])  # an n/a row for both when the compile failed
    impls = [("ours", None, None)]
    if ref_dir is not None:
        impls.append(("ref", ref_dir, None))
    baseline = getattr(args, "baseline_path", None)
    for impl, rdir, _ in impls:
        if cubin_error:
            for key in ("cold", "other", "reembed", "hit", "many_seq", "many_par"):
                rows[f"{impl}_{key}"] = _common.na_row(key, cubin_error)
            continue
        reembed = {}

        def cold(impl=impl, rdir=rdir, reembed=reembed):
            samples = []
            for _ in range(reps):  # each in a fresh process and an empty cache
                cache = tempfile.mkdtemp(prefix="tvm_ffi_bench_reembed_")
                try:
                    res = _ref.run_worker(
                        "_jit_worker.py",
                        ["--mode", "reembed", "--cubin-dir", str(cubin_dir), "--count", "10"],
                        impl=impl, ref_dir=rdir,
                        extra_env={"TVM_FFI_CACHE_DIR": cache, **arch_env(args.arch_used)},
                    )  # fmt: skip
                finally:
                    shutil.rmtree(cache, ignore_errors=True)
                samples.append(res["first_s"])
                reembed.setdefault("cpu", []).append(res["first_cpu_s"])
                reembed.setdefault("other", []).append(res["other_s"])
                reembed.setdefault("other_cpu", []).append(res["other_cpu_s"])
                reembed.setdefault("again", []).extend(res["again_s"])
            return samples

        guard(f"{impl}_cold", "cold", cold)
        if reembed.get("cpu"):
            rows[f"{impl}_cold"]["cpu"] = _median(reembed["cpu"])
        guard(f"{impl}_reembed", "reembed", lambda reembed=reembed: reembed["again"])
        guard(f"{impl}_other", "other", lambda reembed=reembed: reembed["other"])
        if reembed.get("other_cpu"):
            rows[f"{impl}_other"]["cpu"] = _median(reembed["other_cpu"])
        guard(f"{impl}_hit", "hit", lambda impl=impl, rdir=rdir: _with_cpu(rows, f"{impl}_hit",
            hit_series(impl, rdir, str(cubin_dir), fresh, args.arch_used)))  # fmt: skip
        many = {}

        def many_seq(impl=impl, rdir=rdir, many=many):
            caches = [tempfile.mkdtemp(prefix="tvm_ffi_bench_many_") for _ in range(2)]
            try:
                res = _ref.run_worker(
                    "_jit_worker.py", ["--mode", "many", "--count", str(MANY), "--caches", *caches],
                    impl=impl, ref_dir=rdir, extra_env=arch_env(args.arch_used),
                )  # fmt: skip
            finally:
                for cache in caches:
                    shutil.rmtree(cache, ignore_errors=True)
            many["par"] = res["parallel_s"]
            return [res["sequential_s"]]

        guard(f"{impl}_many_seq", "many sequential", many_seq)
        if many.get("par") is not None:
            rows[f"{impl}_many_par"] = _common.ok_row("many", [many["par"]])
        else:
            rows[f"{impl}_many_par"] = _common.na_row("many", "no load_inline_many")
    if baseline:
        guard("base_hit", "hit before", lambda: _with_cpu(rows, "base_hit", hit_series(
            "ours", None, str(cubin_dir), fresh, args.arch_used, pythonpath=baseline)))  # fmt: skip
    else:
        rows["base_hit"] = _common.na_row("hit before", "no --baseline-path")
    if ref_dir is None:
        for key in ("cold", "other", "reembed", "hit", "many_seq", "many_par"):
            rows[f"ref_{key}"] = _common.na_row(key, ref_desc)
    for key, cpu in rows.pop("_cpu", {}).items():
        if rows.get(key, {}).get("status") == "ok":
            rows[key]["cpu"] = cpu
    return rows


def _with_cpu(rows: dict, key: str, series: tuple) -> list[float]:
    """Keep the median CPU time of a hit series for its row; return the wall times."""
    samples, cpu = series
    cpu = [c for c in cpu if c is not None]
    if cpu:
        rows.setdefault("_cpu", {})[key] = _median(cpu)
    return samples


def _cell(row: dict | None, scale: float = 1.0, unit: str = "s", ratio_to: dict | None = None,
          ratio_label: str = "") -> str:  # fmt: skip
    if row is None or row.get("status") != "ok":
        return _common.note_cell(row)
    text = f"{_common.fmt_num(row['median'] * scale)} {unit}"
    if ratio_to is not None and ratio_to.get("status") == "ok":
        text += f" ({row['median'] / ratio_to['median']:.2f}x {ratio_label})"
    if row.get("cpu") is not None:  # CPU time: steadier than the wall time on a shared machine
        text += f"; cpu {_common.fmt_num(row['cpu'] * scale)} {unit}"
        if ratio_to is not None and ratio_to.get("cpu"):
            text += f" ({row['cpu'] / ratio_to['cpu']:.2f}x)"
    return text


def section(rows: dict, params: dict, arch: str) -> dict:
    """The table: one line per measure, this project beside apache-tvm-ffi."""
    nvcc = rows.get("nvcc_c")
    cells = [
        ["plain `nvcc -c` of the wrapper", _cell(nvcc), _cell(nvcc), "the yardstick"],
        ["plain `c++ -c` of the wrapper", _cell(rows.get("cxx_c")), "-",
         f"host compiler alone; cpu {_common.fmt_num(rows.get('cxx_c_cpu'))} s"],
        ["cold `load_inline`, wrapper + `embed_cubin`",
         _cell(rows.get("ours_cold"), ratio_to=nvcc, ratio_label="nvcc"),
         _cell(rows.get("ref_cold"), ratio_to=nvcc, ratio_label="nvcc"),
         "goal 0.25x, at most 0.5x"],
        ["cold `load_inline`, another wrapper into that cache",
         _cell(rows.get("ours_other"), ratio_to=nvcc, ratio_label="nvcc"),
         _cell(rows.get("ref_other"), ratio_to=nvcc, ratio_label="nvcc"),
         "a module after the first: its objects are new, shared entries may be cached"],
        ["same wrapper, a different CUBIN",
         _cell(rows.get("ours_reembed"), ratio_to=rows.get("ours_cold"), ratio_label="cold"),
         _cell(rows.get("ref_reembed"), ratio_to=rows.get("ref_cold"), ratio_label="cold"),
         "goal 0.05x, at most 0.1x"],
        ["cache hit, fresh process, import included",
         _cell(rows.get("ours_hit"), 1e3, "ms", rows.get("base_hit"), "before"),
         _cell(rows.get("ref_hit"), 1e3, "ms"),
         f"before: {_cell(rows.get('base_hit'), 1e3, 'ms')}"],
        [f"{MANY} small modules, one `load_inline_many`", _cell(rows.get("ours_many_par")),
         _cell(rows.get("ref_many_par")), "empty cache"],
        [f"{MANY} small modules, {MANY} `load_inline` in turn", _cell(rows.get("ours_many_seq")),
         _cell(rows.get("ref_many_seq")), "empty cache"],
    ]  # fmt: skip
    return {
        "title": "JIT build speed: the guide's wrapper, a new CUBIN, cache hits, many modules",
        "headers": ["measure", "this project", "apache-tvm-ffi", "note"],
        "cells": cells,
        "notes": [
            f"medians; wrapper = one launcher in cuda_sources, no device code, one CUBIN ({arch}); "
            f"cold: {params['reps']} fresh process(es) with an empty cache; re-embed: 9 other "
            "CUBINs into the warm wrapper in each of them; hit: "
            f"{params['fresh']} fresh processes that import nothing first, `import tvm_ffi` + "
            "`tvm_ffi.cpp` + load_inline",
            "cpu: user + system time, median: of the compilers (child processes) for builds, "
            "of the process itself (import + load_inline) for hits",
        ],
    }
