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


def compile_commands(cubin_dir: Path, arch: str) -> tuple[dict, Path]:
    """``nvcc -c`` and ``c++ -c`` of the wrapper as load_inline writes it (prelude
    includes, one arch, -O2), and the folder they run in."""
    from tvm_ffi import config

    include = config.get_include_dir()
    nvcc = _common.nvcc_path()
    if nvcc is None:
        raise RuntimeError("nvcc not found")
    from tvm_ffi.cpp import _toolchain

    cuda_include = str(_toolchain.find_cuda_home() / "include")  # where load_inline looks
    from tvm_ffi.cpp._spec import PRELUDE_FLAGS as prelude  # what load_inline adds

    work = Path(tempfile.mkdtemp(prefix="tvm_ffi_bench_nvcc_", dir=cubin_dir))
    src = work / "cuda.cu"
    src.write_text(_jit_worker.wrapper_source())
    major, minor = arch.removeprefix("sm_")[:-1], arch[-1]
    gencode = f"-gencode=arch=compute_{major}{minor},code=sm_{major}{minor}"
    common = ["-std=c++17", "-O2", f"-I{include}", f"-I{cuda_include}", *prelude]
    commands = {
        "nvcc_c": [nvcc, *common, "-Xcompiler", "-fPIC", gencode, "-c", str(src), "-o", "n.o"],
        "cxx_c": ["c++", "-x", "c++", "-include", "cuda_runtime.h", *common, "-fPIC",
                  "-c", str(src), "-o", "h.o"],
    }  # fmt: skip
    return commands, work


#: The cold rows: the wrapper given to load_inline as each kind of source.
KINDS = (("cuda_sources", "cold"), ("cpp_sources", "cold_cpp"))


def cold_rounds(cubin_dir: Path, arch: str, impls: list, reps: int) -> tuple[dict, dict]:
    """``reps`` rounds, each running in turn: the plain ``nvcc -c`` and ``c++ -c``, then
    every implementation's cold load_inline of the wrapper as cuda_sources and as
    cpp_sources (each in a fresh process with an empty cache, followed there by the
    re-embeds and another wrapper). Runs of one round share the machine's load, so a
    ratio is taken within its round. Returns (samples by key, first error by key); a key
    ``X`` has wall seconds, ``X_cpu`` CPU seconds of the compilers."""
    samples: dict = {}
    errors: dict = {}

    def add(key: str, wall: float, cpu: float) -> None:
        samples.setdefault(key, []).append(wall)
        samples.setdefault(f"{key}_cpu", []).append(cpu)

    try:
        commands, work = compile_commands(cubin_dir, arch)
    except Exception as exc:
        commands, work = {}, None
        errors["nvcc_c"] = errors["cxx_c"] = _common.error_reason(exc)
    for round_index in range(reps):
        for key, cmd in commands.items():
            cpu0 = _jit_worker.children_cpu()
            t0 = time.perf_counter()
            subprocess.run(cmd, cwd=work, check=True, capture_output=True)
            add(key, time.perf_counter() - t0, _jit_worker.children_cpu() - cpu0)
            _common.progress(f"round {round_index + 1}/{reps} {key}: {samples[key][-1]:.3f} s")
        for impl, rdir in impls:
            for kind, row in KINDS:
                key = f"{impl}_{row}"
                if key in errors:
                    continue
                # The re-embeds (9 builds each) and the second wrapper run where their rows
                # use them: the re-embeds in the first round only, since apache-tvm-ffi
                # recompiles for each.
                argv = [
                    "--mode",
                    "reembed",
                    "--cubin-dir",
                    str(cubin_dir),
                    "--kind",
                    kind,
                    "--count",
                    "10" if round_index == 0 and kind == "cuda_sources" else "1",
                ]
                if kind != "cuda_sources":
                    argv.append("--no-other")
                cache = tempfile.mkdtemp(prefix="tvm_ffi_bench_cold_")
                try:
                    res = _ref.run_worker(
                        "_jit_worker.py", argv,
                        impl=impl, ref_dir=rdir,
                        extra_env={"TVM_FFI_CACHE_DIR": cache, **arch_env(arch)},
                    )  # fmt: skip
                except Exception as exc:
                    errors[key] = _common.error_reason(exc)
                    continue
                finally:
                    shutil.rmtree(cache, ignore_errors=True)
                add(key, res["first_s"], res["first_cpu_s"])
                _common.progress(f"round {round_index + 1}/{reps} {key}: {res['first_s']:.3f} s")
                if kind == "cuda_sources":
                    add(f"{impl}_other", res["other_s"], res["other_cpu_s"])
                    samples.setdefault(f"{impl}_reembed", []).extend(res["again_s"])
    return samples, errors


def paired_ratio(samples: dict, key: str, base: str) -> float | None:
    """Median over rounds of ``key``'s time over ``base``'s in the same round."""
    a, b = samples.get(key) or [], samples.get(base) or []
    if not a or len(a) != len(b):
        return None
    return _median([x / y for x, y in zip(a, b)])


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
        _common.progress(f"{key}: {rows[key].get('median', rows[key].get('reason'))}")

    baseline = getattr(args, "baseline_path", None)
    impls = [("ours", None)]
    if ref_dir is not None:
        impls.append(("ref", ref_dir))
    if cubin_error:
        samples, errors = {}, {}
        for impl, _ in impls:
            for key in ("cold", "cold_cpp", "other", "reembed", "hit", "many_seq", "many_par"):
                rows[f"{impl}_{key}"] = _common.na_row(key, cubin_error)
        impls = []
    else:
        samples, errors = cold_rounds(cubin_dir, args.arch_used, impls, reps)
    for key, label in (("nvcc_c", "nvcc -c"), ("cxx_c", "c++ -c")):
        if key in errors or not samples.get(key):
            rows[key] = _common.na_row(label, errors.get(key, "no samples"))
        else:
            rows[key] = _common.ok_row(label, samples[key], cpu=_median(samples[f"{key}_cpu"]))
    rows["cxx_c_cpu"] = _median(samples["cxx_c_cpu"]) if samples.get("cxx_c_cpu") else None
    for impl, rdir in impls:
        for key in ("cold", "cold_cpp", "other", "reembed"):
            name = f"{impl}_{key}"
            if not samples.get(name):
                why = errors.get(name) or errors.get(f"{impl}_cold", "no samples")
                rows[name] = _common.na_row(key, why)
                continue
            rows[name] = _common.ok_row(key, samples[name])
            if samples.get(f"{name}_cpu"):
                rows[name]["cpu"] = _median(samples[f"{name}_cpu"])
            ratio = paired_ratio(samples, name, "nvcc_c")
            if ratio is not None and key != "reembed":
                rows[name]["paired_nvcc"] = ratio
        guard(f"{impl}_hit", "hit", lambda impl=impl, rdir=rdir: _with_cpu(rows, f"{impl}_hit",
            hit_series(impl, rdir, str(cubin_dir), fresh, args.arch_used)))  # fmt: skip
        many = {}

        def many_seq(impl=impl, rdir=rdir, many=many):
            caches = [tempfile.mkdtemp(prefix="tvm_ffi_bench_many_") for _ in range(2)]
            try:
                argv = ["--mode", "many", "--count", str(args.many), "--caches", *caches]
                res = _ref.run_worker(
                    "_jit_worker.py", argv, impl=impl, ref_dir=rdir,
                    extra_env=arch_env(args.arch_used),
                )  # fmt: skip
            finally:
                for cache in caches:
                    shutil.rmtree(cache, ignore_errors=True)
            many["par"] = res["parallel_s"]
            return [res["sequential_s"]]

        if args.many <= 0:
            for key in ("many_seq", "many_par"):
                rows[f"{impl}_{key}"] = _common.na_row(key, "left out (--many 0)")
            continue
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
        for key in ("cold", "cold_cpp", "other", "reembed", "hit", "many_seq", "many_par"):
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
    if ratio_label == "nvcc" and row.get("paired_nvcc") is not None:
        text += f" ({row['paired_nvcc']:.2f}x nvcc, paired)"  # the median of the rounds' ratios
    elif ratio_to is not None and ratio_to.get("status") == "ok":
        text += f" ({row['median'] / ratio_to['median']:.2f}x {ratio_label})"
    if row.get("cpu") is not None:  # CPU time: steadier than the wall time on a shared machine
        text += f"; cpu {_common.fmt_num(row['cpu'] * scale)} {unit}"
        if ratio_to is not None and ratio_to.get("cpu"):
            text += f" ({row['cpu'] / ratio_to['cpu']:.2f}x)"
    return text


def section(rows: dict, params: dict, arch: str) -> dict:
    """The table: one line per measure, this project beside apache-tvm-ffi."""
    nvcc = rows.get("nvcc_c")
    many = params.get("many", MANY)  # results saved before --many existed
    cells = [
        ["plain `nvcc -c` of the wrapper", _cell(nvcc), _cell(nvcc), "the yardstick"],
        ["plain `c++ -c` of the wrapper", _cell(rows.get("cxx_c")), "-",
         f"host compiler alone; cpu {_common.fmt_num(rows.get('cxx_c_cpu'))} s"],
        ["cold `load_inline`, wrapper + `embed_cubin`",
         _cell(rows.get("ours_cold"), ratio_to=nvcc, ratio_label="nvcc"),
         _cell(rows.get("ref_cold"), ratio_to=nvcc, ratio_label="nvcc"),
         "goal 0.25x"],
        ["cold `load_inline`, the same wrapper as `cpp_sources`",
         _cell(rows.get("ours_cold_cpp"), ratio_to=nvcc, ratio_label="nvcc"),
         _cell(rows.get("ref_cold_cpp"), ratio_to=nvcc, ratio_label="nvcc"),
         "goal 0.25x"],
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
        [f"{many} small modules, one `load_inline_many`", _cell(rows.get("ours_many_par")),
         _cell(rows.get("ref_many_par")), "empty cache"],
        [f"{many} small modules, {many} `load_inline` in turn", _cell(rows.get("ours_many_seq")),
         _cell(rows.get("ref_many_seq")), "empty cache"],
    ]  # fmt: skip
    return {
        "title": "JIT build speed: the guide's wrapper, a new CUBIN, cache hits, many modules",
        "headers": ["measure", "this project", "apache-tvm-ffi", "note"],
        "cells": cells,
        "notes": [
            f"medians; wrapper = one launcher in cuda_sources, no device code, one CUBIN ({arch}); "
            f"cold: {params['reps']} fresh process(es) with an empty cache; re-embed: 9 other "
            "CUBINs into the warm wrapper of the first round; hit: "
            f"{params['fresh']} fresh processes that import nothing first, `import tvm_ffi` + "
            "`tvm_ffi.cpp` + load_inline",
            "cpu: user + system time, median: of the compilers (child processes) for builds, "
            "of the process itself (import + load_inline) for hits",
        ],
    }
