"""Subprocess worker: times load_inline / nvrtc_compile for one implementation of ``tvm_ffi``.

Run by call_overhead.py and build_time.py as
``python _jit_worker.py --worker ours|ref --case CASE --mode cold|warm|nvrtc ...``
with TVM_FFI_CACHE_DIR set by the parent. A fresh process per measurement keeps the cold numbers
honest (no module or toolchain state left over from an earlier build) and lets the reference,
which has the same import name, run with its own PYTHONPATH. Prints one marked JSON line.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common
import _ref
import _sources

CASES = ("noop_cpp", "add_one_cuda", "cubin10", "wrapper")


def case_kwargs(case: str, cubin_dir: str | None) -> tuple[dict, list[str]]:
    """(load_inline keyword arguments, functions that must exist on the module)."""
    if case == "noop_cpp":
        return {"cpp_sources": _sources.NOOP_CPP, "functions": _sources.NOOP_FUNCTIONS}, ["noop"]
    if case == "add_one_cuda":
        return (
            {"cuda_sources": _sources.ADD_ONE_CUDA, "functions": _sources.ADD_ONE_FUNCTIONS},
            ["add_one"],
        )
    if case == "cubin10":
        if cubin_dir is None:
            raise ValueError("case cubin10 needs --cubin-dir")
        cubins = {p.stem: p.read_bytes() for p in sorted(Path(cubin_dir).glob("c*.cubin"))}
        if len(cubins) != 10:
            raise ValueError(f"expected 10 CUBINs in {cubin_dir} (got {len(cubins)})")
        src = _sources.many_launchers_source(10, one_cubin=False)
        return {"cuda_sources": src, "embed_cubin": cubins}, ["launch_k0", "launch_k9"]
    if case == "wrapper":
        # The guide's wrapper: cuda_sources with one launcher and no device code, one image.
        return {
            "cuda_sources": wrapper_source(),
            "embed_cubin": {"all": wrapper_image(cubin_dir, 0)},
        }, ["launch_k0"]
    raise ValueError(f"unknown case {case!r} (expected one of {', '.join(CASES)})")


def wrapper_source() -> str:
    return _sources.many_launchers_source(1, one_cubin=True)


def wrapper_image(cubin_dir: str | None, index: int) -> bytes:
    if cubin_dir is None:
        raise ValueError("case wrapper needs --cubin-dir")
    return (Path(cubin_dir) / f"c{index}.cubin").read_bytes()


def time_reembed(
    impl: str, cubin_dir: str, count: int, kind: str = "cuda_sources", with_other: bool = True
) -> dict:
    """Cold build of the wrapper (given as ``kind``: cuda_sources or cpp_sources), then the
    same wrapper with ``count - 1`` other CUBINs (a new autotune config: only the image
    changes), then, ``with_other``, another wrapper into the same cache."""
    tvm_ffi = _ref.import_impl(impl)
    cpp = _ref.import_cpp()
    kwargs, _ = case_kwargs("wrapper", cubin_dir)
    kwargs[kind] = kwargs.pop("cuda_sources")
    if kind == "cpp_sources":  # as a C++ user would write it for either: the CUDA paths given
        cuda = Path(_common.nvcc_path() or "/usr/local/cuda/bin/nvcc").resolve().parent.parent
        lib = next((cuda / d for d in ("lib64", "lib") if (cuda / d).is_dir()), cuda / "lib64")
        kwargs["extra_include_paths"] = [str(cuda / "include")]
        kwargs["extra_ldflags"] = [f"-L{lib}", "-lcudart"]
    cpu0 = children_cpu()
    t0 = time.perf_counter()
    cpp.load_inline("bench_reembed", **kwargs)
    first = time.perf_counter() - t0
    first_cpu = children_cpu() - cpu0
    again = []
    for index in range(1, count):
        kwargs["embed_cubin"] = {"all": wrapper_image(cubin_dir, index)}
        t0 = time.perf_counter()
        cpp.load_inline("bench_reembed", **kwargs)
        again.append(time.perf_counter() - t0)
    other = other_cpu = None
    if with_other:
        # Another wrapper (new source text, same flags) into the same cache: a module after
        # the first, whose own objects are a miss but whose shared cache entries may be there.
        kwargs[kind] = kwargs[kind] + "\n// another wrapper\n"
        cpu0 = children_cpu()
        t0 = time.perf_counter()
        cpp.load_inline("bench_reembed_other", **kwargs)
        other = time.perf_counter() - t0
        other_cpu = children_cpu() - cpu0
    return {
        "impl": impl,
        "version": _ref.impl_version(tvm_ffi),
        "first_s": first,
        "first_cpu_s": first_cpu,
        "again_s": again,
        "other_s": other,
        "other_cpu_s": other_cpu,
    }


def children_cpu() -> float:
    """User + system CPU seconds of the finished child processes (the compilers, through
    ninja): on a shared machine a steadier measure of a build than the wall time."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def many_modules(count: int) -> list[dict]:
    """``count`` small distinct C++ modules (a kernel library's variants)."""
    return [
        {
            "name": f"bench_many_{i}",
            "cpp_sources": f"int variant_{i}(int a) {{ return a * {i + 2} + {i}; }}",
            "functions": [f"variant_{i}"],
        }
        for i in range(count)
    ]


def time_many(impl: str, count: int, caches: list[str]) -> dict:
    """``count`` modules into an empty cache: one load_inline after the other, then (into
    another empty cache) one load_inline_many call when the implementation has it."""
    tvm_ffi = _ref.import_impl(impl)
    cpp = _ref.import_cpp()
    modules = many_modules(count)
    os.environ["TVM_FFI_CACHE_DIR"] = caches[0]
    t0 = time.perf_counter()
    for kwargs in modules:
        cpp.load_inline(**kwargs)
    sequential = time.perf_counter() - t0
    parallel = None
    if hasattr(cpp, "load_inline_many"):
        os.environ["TVM_FFI_CACHE_DIR"] = caches[1]
        t0 = time.perf_counter()
        mods = cpp.load_inline_many(modules)
        parallel = time.perf_counter() - t0
        assert [m[f"variant_{i}"](1) for i, m in enumerate(mods)] == [
            2 * i + 2 for i in range(count)
        ]
    return {
        "impl": impl,
        "version": _ref.impl_version(tvm_ffi),
        "sequential_s": sequential,
        "parallel_s": parallel,
    }


def time_load_inline(
    impl: str, case: str, mode: str, warm_repeats: int, cubin_dir: str | None
) -> dict:
    kwargs, expected = case_kwargs(case, cubin_dir)  # before the clocks: not the package's
    cpu0 = self_cpu()
    t0 = time.perf_counter()
    tvm_ffi = _ref.import_impl(impl)
    cpp = _ref.import_cpp()
    t_import = time.perf_counter() - t0
    name = f"bench_{case}"

    def load():
        return cpp.load_inline(name, **kwargs)

    t0 = time.perf_counter()
    mod = load()
    first = time.perf_counter() - t0
    first_cpu = self_cpu() - cpu0  # import + first load_inline, this process's CPU time
    for fn in expected:
        getattr(mod, fn)  # a module without the function would make the timing meaningless
    again = [_common.time_once(load) for _ in range(warm_repeats)]
    return {
        "impl": impl,
        "version": _ref.impl_version(tvm_ffi),
        "case": case,
        "mode": mode,
        "import_s": t_import,
        "first_s": first,
        "import_first_cpu_s": first_cpu,
        "again_s": again,
    }


def self_cpu() -> float:
    """User + system CPU seconds of this process so far."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def time_nvrtc(impl: str, arch: str, repeats: int) -> dict:
    t0 = time.perf_counter()
    tvm_ffi = _ref.import_impl(impl)
    from tvm_ffi.cpp import nvrtc

    t_import = time.perf_counter() - t0
    src = _sources.numbered_kernel(0)
    t0 = time.perf_counter()
    cubin = nvrtc.nvrtc_compile(src, arch=arch)
    first = time.perf_counter() - t0
    if not isinstance(cubin, (bytes, bytearray)) or len(cubin) == 0:
        raise RuntimeError(f"nvrtc_compile returned {type(cubin).__name__} of size {len(cubin)}")
    again = [_common.time_once(lambda: nvrtc.nvrtc_compile(src, arch=arch)) for _ in range(repeats)]
    return {
        "impl": impl,
        "version": _ref.impl_version(tvm_ffi),
        "case": "nvrtc",
        "mode": "nvrtc",
        "import_s": t_import,
        "first_s": first,
        "again_s": again,
        "cubin_bytes": len(cubin),
    }


# ----------------------------------------------------------------------------- parent side


def jit_series(
    impl: str,
    case: str,
    *,
    cold_reps: int,
    fresh_reps: int,
    warm_repeats: int,
    ref_dir: str | None = None,
    cubin_dir: str | None = None,
    timeout: float = 600,
) -> dict:
    """Cold builds (each in a fresh process with a fresh TVM_FFI_CACHE_DIR), warm loads in the
    same process after each cold build, and warm loads in fresh processes on the last cache.
    Raises RuntimeError (from run_worker) when the implementation fails."""
    import shutil
    import tempfile

    extra = ["--case", case]
    if cubin_dir:
        extra += ["--cubin-dir", cubin_dir]
    out: dict = {"cold_s": [], "warm_same_s": [], "warm_fresh_s": [], "import_s": []}
    cache = None
    try:
        for _ in range(cold_reps):
            if cache is not None:
                shutil.rmtree(cache, ignore_errors=True)
            cache = tempfile.mkdtemp(prefix=f"tvm_ffi_bench_{impl}_")
            res = _ref.run_worker(
                "_jit_worker.py",
                [*extra, "--mode", "cold", "--warm-repeats", str(warm_repeats)],
                impl=impl,
                ref_dir=ref_dir,
                extra_env={"TVM_FFI_CACHE_DIR": cache},
                timeout=timeout,
            )
            out["version"] = res["version"]
            out["cold_s"].append(res["first_s"])
            out["warm_same_s"] += res["again_s"]
        for _ in range(fresh_reps):
            res = _ref.run_worker(
                "_jit_worker.py",
                [*extra, "--mode", "warm", "--warm-repeats", "0"],
                impl=impl,
                ref_dir=ref_dir,
                extra_env={"TVM_FFI_CACHE_DIR": cache},
                timeout=timeout,
            )
            out["warm_fresh_s"].append(res["first_s"])
            out["import_s"].append(res["import_s"])
    finally:
        if cache is not None:
            shutil.rmtree(cache, ignore_errors=True)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--worker", choices=("ours", "ref"), required=True)
    parser.add_argument("--case", default="add_one_cuda")
    parser.add_argument(
        "--mode", choices=("cold", "warm", "nvrtc", "reembed", "many"), required=True
    )
    parser.add_argument("--count", type=int, default=10)
    parser.add_argument("--caches", nargs="*", default=[])
    parser.add_argument("--warm-repeats", type=int, default=10)
    parser.add_argument("--cubin-dir", default=None)
    parser.add_argument("--kind", choices=("cuda_sources", "cpp_sources"), default="cuda_sources")
    parser.add_argument("--no-other", action="store_true", help="skip the second wrapper")
    parser.add_argument("--arch", default="sm_90")
    args = parser.parse_args(argv)
    if args.mode == "nvrtc":
        result = time_nvrtc(args.worker, args.arch, args.warm_repeats)
    elif args.mode == "reembed":
        result = time_reembed(args.worker, args.cubin_dir, args.count, args.kind, not args.no_other)
    elif args.mode == "many":
        result = time_many(args.worker, args.count, args.caches)
    else:
        result = time_load_inline(
            args.worker, args.case, args.mode, args.warm_repeats, args.cubin_dir
        )
    _ref.emit_result(result)


if __name__ == "__main__":
    main()
