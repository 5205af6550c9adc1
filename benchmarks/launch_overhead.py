"""Host cost of launching one empty kernel, through every launcher at hand (issue 5).

The kernel: ``extern "C" __global__ void empty(float* a, float* b, float* c, int n) {}``
(and ``empty16`` with 15 pointers and an int), grid 1, block 1, all rows on one torch stream.

Paths: the C++ floor (a module loaded into this process whose functions loop in C++ on
cudaLaunchKernel, cuLaunchKernel and cuLaunchKernelEx, on the same CUBIN, stream and arguments);
this project (the CUBIN embedded with ``load_inline(embed_cubin=...)``, called with torch tensors
and an int), broken down into the binding alone, the binding + TVMFFIEnvGetStream, and the
launch; ``tvm_ffi.cuda`` (the same CUBIN loaded from Python, no C++: ``kernel.launch`` and
``kernel[grid, block](...)``); apache-tvm-ffi (same sources, own process: same import name);
Triton's launcher; CuPy RawKernel; cuda.core launch; torch ``x.add_(1)`` for reference. Also
16 arguments and cluster 2x1x1 + PDL.

Method (see _interleave): each sample is the enqueue time of one batch of launches (well below
the GPU's queue depth, synchronized after, untimed) / the batch size; every row is measured
once per round, in an order rotated each round, after warm-up rounds; median, min, p10-p90.
Target: this project <= C++ cudaLaunchKernel + 0.3 us, and the fastest Python launcher;
tvm_ffi.cuda's kernel.launch (no C++ wrapper) <= the floor + 0.5 us, and the fastest Python
launcher.
Run: python benchmarks/launch_overhead.py [--quick] [--json PATH] [--ref-wheel W | --ref-path D]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common
import _interleave
import _launchers
import _ref
import _sources
from _launch_report import make_report

NAME = "launch_overhead"
# Row key -> the floor module's loop (see _sources.FLOOR_LOOPS).
FLOOR_ROWS = {
    "cpp_rt3": "floor_cuda_launch_kernel",
    "cpp_rt_static3": "floor_cuda_launch_kernel_static",
    "cpp_drv3": "floor_cu_launch_kernel",
    "cpp_drv_ex3": "floor_cu_launch_kernel_ex",
    "cpp_rt16": "floor_cuda_launch_kernel_16",
    "cpp_drv16": "floor_cu_launch_kernel_16",
    "cpp_drv_ex16": "floor_cu_launch_kernel_ex_16",
    "cpp_rt_attrs3": "floor_cuda_launch_kernel_ex_attrs",
    "cpp_drv_attrs3": "floor_cu_launch_kernel_ex_attrs",
}
# The floors apache-tvm-ffi's worker measures beside its rows, in its own process.
REF_FLOORS = {"floor_rt3": "floor_cuda_launch_kernel", "floor_rt16": "floor_cuda_launch_kernel_16"}
PROJECT_KEYS = ("launch3", "launch3_null", "launch16", "nolaunch", "getstream", "attrs3")
# tvm_ffi.cuda's rows: the CUBIN loaded from Python, launched with no C++ wrapper.
PYCUDA_KEYS = (
    "pycuda_launch3",
    "pycuda_item3",
    "pycuda_bound3",
    "pycuda_stream3",
    "pycuda_raw3",
    "pycuda_launch16",
    "pycuda_bound16",
)
REF_KEYS = ("launch3", "launch16", "nolaunch", "getstream", *REF_FLOORS)


def parse_args(argv=None):
    parser = _common.base_parser(NAME, __doc__.splitlines()[0])
    parser.add_argument("--cubin", default=None, help=argparse.SUPPRESS)  # worker input
    parser.add_argument("--build-only", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def params(quick: bool) -> dict:
    # 200 launches stay far below the pending-launch queue; rounds give the sample count.
    if quick:
        return {"launches": 200, "rounds": 300, "warmup_rounds": 20}
    return {"launches": 200, "rounds": 1000, "warmup_rounds": 50}


# ----------------------------------------------------------------------------- builds


def build_cubin(workdir: Path, arch: str) -> Path:
    """The CUBIN of the empty kernels that every launcher row launches."""
    (workdir / "kernels.cu").write_text(_sources.EMPTY_KERNELS_CU)
    cubin = workdir / "kernels.cubin"
    _common.nvcc_compile(["-cubin", f"-arch={arch}", "-o", str(cubin), str(workdir / "kernels.cu")])
    return cubin


def project_modules(cubin: bytes, *, attrs: bool = True) -> dict[str, tuple[str, dict]]:
    """load_inline (name, kwargs) of the modules, shared by the pre-build and the rows."""
    embed = {"bench_empty": cubin}
    mods = {
        "main": (
            "bench_launch",
            {"cuda_sources": _sources.launch_wrapper_source(), "embed_cubin": embed},
        ),
        "floor": ("bench_launch_floor", {"cuda_sources": _sources.floor_module_source()}),
    }
    if attrs:  # this project's LaunchConfig only: not built by the reference
        mods["attrs"] = (
            "bench_launch_attrs",
            {"cuda_sources": _sources.launch_attrs_wrapper_source(), "embed_cubin": embed},
        )
    return mods


def prebuild(cpp, mods: dict[str, tuple[str, dict]]) -> dict[str, str]:
    """Build the modules side by side (nvcc is single-threaded); {module: reason} of failures.

    The rows' own load_inline raises a build error again, so a failure here only costs time."""
    build = getattr(cpp, "build_inline", None) or cpp.load_inline

    def one(item):
        key, (name, kwargs) = item
        try:
            build(name, **kwargs)
            return key, None
        except Exception as exc:
            return key, _common.error_reason(exc)

    with ThreadPoolExecutor(max_workers=len(mods)) as pool:
        return {k: r for k, r in pool.map(one, mods.items()) if r is not None}


# ----------------------------------------------------------------------------- rows


def impl_rows(
    cpp,
    mods: dict[str, tuple[str, dict]],
    cubin_path: Path,
    tensors: list,
    stream_handle: int,
    launches: int,
    floors: dict[str, str],
    null_stream=None,
) -> tuple[dict[str, _interleave.Row], dict[str, str]]:
    """Batch rows of one tvm_ffi implementation (PROJECT_KEYS, the floors asked for), and
    {row: reason} for those that could not be set up. ``null_stream`` makes the context of
    the launch3_null row (None: no such row)."""
    import torch

    t = tensors
    rows: dict[str, _interleave.Row] = {}
    failed: dict[str, str] = {}
    batch = _interleave.python_batch
    args3 = (t[0], t[1], t[2], _launchers.N_VALUE)

    def load(key: str):
        name, kwargs = mods[key]
        return cpp.load_inline(name, **kwargs)

    try:
        mod = load("main")
    except Exception as exc:
        keys = ["launch3", "launch16", "nolaunch", "getstream"]
        keys += ["launch3_null"] if null_stream is not None else []
        failed.update(dict.fromkeys(keys, "build: " + _common.error_reason(exc)))
    else:
        rows["launch3"] = _interleave.Row(batch(mod.launch3, args3, launches))
        if null_stream is not None:
            rows["launch3_null"] = _interleave.Row(
                batch(mod.launch3, args3, launches), context=null_stream
            )
        rows["launch16"] = _interleave.Row(batch(mod.launch16, (*t, _launchers.N_VALUE), launches))
        rows["nolaunch"] = _interleave.Row(batch(mod.nolaunch, args3, launches))
        try:
            rows["getstream"] = _interleave.Row(batch(mod.getstream, args3, launches))
        except Exception as exc:  # an older build of the module without it
            failed["getstream"] = _common.error_reason(exc)

    if "attrs" in mods:
        try:
            major, _ = torch.cuda.get_device_capability()
            if major < 9:
                raise RuntimeError(f"clusters need sm_90+ (device is sm_{major}x)")
            rows["attrs3"] = _interleave.Row(batch(load("attrs").launch3_attrs, args3, launches))
        except Exception as exc:
            failed["attrs3"] = _common.error_reason(exc)

    try:
        floor = load("floor")
        floor.floor_setup(str(cubin_path), stream_handle, *t)
        for key, fn in floors.items():
            rows[key] = _interleave.Row(_interleave.native_batch(getattr(floor, fn), launches))
    except Exception as exc:
        failed.update(dict.fromkeys(floors, "C++ floor: " + _common.error_reason(exc)))
    return rows, failed


def measure(rows: dict, failed: dict, p: dict, sync) -> dict[str, dict]:
    """Interleaved measurement of the rows; table rows for them and for the failed ones."""
    samples, failures = _interleave.measure(
        rows,
        launches=p["launches"],
        rounds=p["rounds"],
        warmup_rounds=p["warmup_rounds"],
        sync=sync,
    )
    out = _interleave.to_rows(rows, samples, failures)
    out.update({k: _common.na_row(k, reason) for k, reason in failed.items() if k not in out})
    return out


def _subscript_batch(kernel, args: tuple, launches: int):
    """``kernel[1, 1](a, b, c, n)`` written out in the loop, as a user's code reads: the
    launcher object is made on every launch."""
    a, b, c, n = args

    def run() -> None:
        k = kernel
        for _ in range(launches):
            k[1, 1](a, b, c, n)

    return run


def pycuda_rows(
    cubin_path: Path, tensors: list, launches: int, stream_handle: int
) -> tuple[dict[str, _interleave.Row], dict[str, str]]:
    """tvm_ffi.cuda's rows: ``kernel.launch(1, 1, args)``, ``kernel[1, 1](*args)`` made per
    launch, and the launcher ``kernel[1, 1]`` made once (as Triton's ``kernel[(1,)]``)."""
    import importlib

    t = tensors
    batch = _interleave.python_batch
    try:
        cuda = importlib.import_module("tvm_ffi.cuda")
        mod = cuda.CubinModule(cubin_path.read_bytes())
        k3, k16 = mod["empty"], mod["empty16"]
    except Exception as exc:
        return {}, dict.fromkeys(PYCUDA_KEYS, _common.error_reason(exc))
    args3 = (t[0], t[1], t[2], _launchers.N_VALUE)
    args16 = (*t, _launchers.N_VALUE)
    # Breakdown: the stream given (no stream lookup), then raw pointers through a signature
    # as well (no tensor export, no device check): what is left is the call and the launch.
    raw3 = k3.with_signature("void*, void*, void*, int")
    ptrs3 = (t[0].data_ptr(), t[1].data_ptr(), t[2].data_ptr(), _launchers.N_VALUE)
    rows = {
        "pycuda_launch3": _interleave.Row(batch(k3.launch, (1, 1, args3), launches)),
        "pycuda_item3": _interleave.Row(_subscript_batch(k3, args3, launches)),
        "pycuda_bound3": _interleave.Row(batch(k3[1, 1], args3, launches)),
        "pycuda_stream3": _interleave.Row(batch(k3[1, 1, stream_handle], args3, launches)),
        "pycuda_raw3": _interleave.Row(batch(raw3[1, 1, stream_handle], ptrs3, launches)),
        "pycuda_launch16": _interleave.Row(batch(k16.launch, (1, 1, args16), launches)),
        "pycuda_bound16": _interleave.Row(batch(k16[1, 1], args16, launches)),
    }
    return rows, {}


# ----------------------------------------------------------------------------- driver


def worker_main(args) -> None:
    """apache-tvm-ffi's rows (or its pre-build) in a process of its own."""
    tvm_ffi = _ref.import_impl(args.worker)
    cpp = _ref.import_cpp()
    cubin_path = Path(args.cubin)
    mods = project_modules(cubin_path.read_bytes(), attrs=False)
    if args.build_only:
        failures = prebuild(cpp, mods)
        _ref.emit_result({"version": _ref.impl_version(tvm_ffi), "failures": failures})
        return
    torch, t = _launchers.torch_setup()
    p = params(args.quick)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        rows, failed = impl_rows(
            cpp, mods, cubin_path, t, stream.cuda_stream, p["launches"], REF_FLOORS
        )
        result = measure(rows, failed, p, torch.cuda.synchronize)
    _ref.emit_result({"version": _ref.impl_version(tvm_ffi), "rows": result})


def run_ref(args, ref_dir: str, cubin_path: Path, workdir: Path, *, build_only: bool) -> dict:
    """apache-tvm-ffi's worker: its pre-build, or its rows (the same batch method)."""
    worker_args = ["--cubin", str(cubin_path)] + (["--quick"] if args.quick else [])
    return _ref.run_worker(
        f"{NAME}.py",
        worker_args + (["--build-only"] if build_only else []),
        impl="ref",
        ref_dir=ref_dir,
        extra_env={"TVM_FFI_CACHE_DIR": str(workdir / "refcache")},
    )


def collect(args, workdir: Path) -> dict:
    p = params(args.quick)
    raw: dict = {"params": p, "rows": {}, "versions": {}, "notes": []}
    rows = raw["rows"]
    arch = _common.cuda_arch()
    if arch is None:  # the table says why its rows are missing
        raw["notes"].append("no CUDA GPU visible to torch: no launch was measured")
        return raw
    raw["arch"] = arch
    try:
        cubin_path = build_cubin(workdir, arch)
    except Exception as exc:  # without the CUBIN no launcher row can run
        raw["notes"].append(f"compiling the empty kernels failed: {_common.error_reason(exc)}")
        return raw
    mods = project_modules(cubin_path.read_bytes())
    ref_dir, ref_desc = _ref.resolve_ref(args)
    raw["ref"] = ref_desc

    # apache-tvm-ffi builds its modules in its own process while this one builds ours.
    with ThreadPoolExecutor(max_workers=1) as pool:
        ref_build = None
        cpp, ours_error = None, None
        if ref_dir is not None:
            ref_build = pool.submit(run_ref, args, ref_dir, cubin_path, workdir, build_only=True)
        try:
            tvm_ffi = _ref.import_impl("ours")
            raw["versions"]["ours"] = _ref.impl_version(tvm_ffi)
            cpp = _ref.import_cpp()
            for key, reason in prebuild(cpp, mods).items():
                raw["notes"].append(f"pre-building module {key} failed: {reason}")
        except Exception as exc:  # this project's import: every row of it is n/a
            cpp, ours_error = None, _common.error_reason(exc)
        if ref_build is not None:
            try:
                for key, reason in ref_build.result().get("failures", {}).items():
                    raw["notes"].append(f"apache-tvm-ffi pre-building {key} failed: {reason}")
            except Exception as exc:  # its measuring run builds again, one module at a time
                raw["notes"].append(f"apache-tvm-ffi pre-build failed: {_common.error_reason(exc)}")

    torch, t = _launchers.torch_setup()
    stream = torch.cuda.Stream()  # every row launches here: none pays legacy-stream semantics
    with torch.cuda.stream(stream):
        if cpp is not None:
            own, failed = impl_rows(
                cpp,
                mods,
                cubin_path,
                t,
                stream.cuda_stream,
                p["launches"],
                FLOOR_ROWS,
                null_stream=lambda: torch.cuda.stream(torch.cuda.default_stream()),
            )
        else:
            own = {}
            failed = {k: ours_error for k in (*PROJECT_KEYS, *FLOOR_ROWS)}
        rename = {k: k if k in FLOOR_ROWS else f"ours_{k}" for k in (*PROJECT_KEYS, *FLOOR_ROWS)}
        all_rows = {rename[k]: v for k, v in own.items()}
        all_failed = {rename[k]: v for k, v in failed.items()}
        if cpp is not None:
            py_rows, py_failed = pycuda_rows(cubin_path, t, p["launches"], stream.cuda_stream)
            all_rows.update(py_rows)
            all_failed.update(py_failed)
        else:
            all_failed.update(dict.fromkeys(PYCUDA_KEYS, ours_error))
        try:
            others, others_failed = _launchers.other_rows(
                cubin_path, t, stream.cuda_stream, p["launches"]
            )
            all_rows.update(others)
            all_failed.update(others_failed)
        except Exception as exc:  # each launcher is guarded inside; this is torch itself failing
            raw["notes"].append(f"other launchers not measured: {_common.error_reason(exc)}")
        rows.update(measure(all_rows, all_failed, p, torch.cuda.synchronize))

    # The reference last, alone: its process must not run while this one measures.
    if ref_dir is None:
        rows.update({f"ref_{k}": _common.na_row(k, ref_desc) for k in REF_KEYS})
    else:
        try:
            res = run_ref(args, ref_dir, cubin_path, workdir, build_only=False)
            raw["versions"]["ref"] = res["version"]
            rows.update({f"ref_{k}": v for k, v in res["rows"].items()})
        except Exception as exc:
            reason = _common.error_reason(exc)
            rows.update({f"ref_{k}": _common.na_row(k, reason) for k in REF_KEYS})
    raw["notes"].extend(drift_notes(rows))
    return raw


def drift_notes(rows: dict) -> list[str]:
    """The floor's median over the first and the second half of the rounds: what drift is left."""
    row = rows.get("cpp_rt3")
    if not row or row.get("status") != "ok" or len(row["samples"]) < 4:
        return []
    half = len(row["samples"]) // 2
    first = statistics.median(row["samples"][:half])
    second = statistics.median(row["samples"][half:])
    return [
        f"drift check: C++ cudaLaunchKernel floor median {first:.3f} us over the first half of "
        f"the rounds, {second:.3f} us over the second"
    ]


def main(argv=None) -> None:
    _common.main(argv, parse_args, collect, make_report, worker_main)


if __name__ == "__main__":
    main()
