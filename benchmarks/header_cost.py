"""What the headers cost the host compiler: a guide-style CUBIN wrapper and an apache-style
wrapper, each preprocessed (``-E``: lines, once), parsed (``-fsyntax-only``) and compiled
(``-O2 -fPIC -c``), N times, median CPU seconds (user + sys of the compiler, so that other
work on the machine counts less than in wall time). CPU only: no GPU, no nvcc; the guide-style
wrapper needs ``cuda.h``.

    python benchmarks/header_cost.py                        # the checkout's headers
    python benchmarks/header_cost.py --baseline HEAD~3      # ... against a git revision's
    python benchmarks/header_cost.py --quick                # 1 run each (a smoke test)

Both wrappers are compiled the way ``load_inline`` compiles a source: C++17, with its prelude
(``-include`` of the headers below) before the first line. ``-c`` and not ``-shared``: the link
does not depend on the headers, and the guide-style wrapper needs an embedded image to link.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

import _common

REPO = Path(__file__).resolve().parents[1]

#: load_inline's prelude (tvm_ffi.cpp._spec.PRELUDE_INCLUDES; the smoke test checks they match).
PRELUDE = (
    "tvm/ffi/container/tensor.h",
    "tvm/ffi/dtype.h",
    "tvm/ffi/error.h",
    "tvm/ffi/extra/c_env_api.h",
    "tvm/ffi/function.h",
)

# The user guide's wrapper, in its shape: embedded CUBIN, one kernel, launch, check, export.
GUIDE_STYLE = r"""
#include <tvm/ffi/extra/cuda/cubin_launcher.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/extra/c_env_api.h>

TVM_FFI_EMBED_CUBIN(my_kernels);

void LaunchAddOne(tvm::ffi::TensorView x, tvm::ffi::TensorView y) {
  static auto kernel = TVM_FFI_EMBED_CUBIN_GET_KERNEL(my_kernels, "add_one");
  int64_t n = x.size(0);
  void* x_ptr = x.data_ptr();
  void* y_ptr = y.data_ptr();
  void* args[] = {&x_ptr, &y_ptr, &n};
  tvm::ffi::dim3 grid((n + 255) / 256);
  tvm::ffi::dim3 block(256);
  DLDevice device = x.device();
  CUstream stream = static_cast<CUstream>(TVMFFIEnvGetStream(device.device_type, device.device_id));
  CUresult result = kernel.Launch(args, grid, block, stream);
  TVM_FFI_CHECK_CUDA_DRIVER_ERROR(result);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(launch_add_one, LaunchAddOne);
"""

# apache-tvm-ffi's load_inline example style: no #include, TVM_FFI_ICHECK, DLDataType ==.
APACHE_STYLE = r"""
void add_one_cpu(tvm::ffi::TensorView x, tvm::ffi::TensorView y) {
  TVM_FFI_ICHECK(x.ndim() == 1) << "x must be a 1D tensor";
  DLDataType f32_dtype{kDLFloat, 32, 1};
  TVM_FFI_ICHECK(x.dtype() == f32_dtype) << "x must be a float tensor";
  TVM_FFI_ICHECK_EQ(x.size(0), y.size(0)) << "x and y must have the same shape";
  for (int64_t i = 0; i < x.size(0); ++i) {
    static_cast<float*>(y.data_ptr())[i] = static_cast<float*>(x.data_ptr())[i] + 1;
  }
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_one_cpu, add_one_cpu);
"""

WRAPPERS = {
    "guide-style (CUBIN launcher)": GUIDE_STYLE,
    "apache-style (prelude only)": APACHE_STYLE,
}
MODES = {"-fsyntax-only": ["-fsyntax-only"], "-O2 compile": ["-O2", "-fPIC", "-c"]}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=5, help="compiles per cell (median; default 5)")
    p.add_argument("--quick", action="store_true", help="one run per cell")
    p.add_argument(
        "--include", help="include dir to measure (default: the checkout's, else tvm_ffi's)"
    )
    p.add_argument("--baseline", metavar="REV", help="also measure this git revision's include/")
    p.add_argument(
        "--cxx", default=os.environ.get("CXX", "c++"), help="compiler (default $CXX or c++)"
    )
    p.add_argument(
        "--json",
        default=str(_common.BENCH_DIR / "results" / "header_cost.json"),
        help="where to write the JSON results (default: %(default)s)",
    )
    p.set_defaults(worker=None)  # no child processes of its own
    args = p.parse_args(argv)
    if args.runs < 1:
        p.error("--runs must be at least 1")
    return args


def default_include() -> Path:
    """The checkout's headers (what one edits); the installed package's without a checkout."""
    if (REPO / "include" / "tvm" / "ffi").is_dir():
        return REPO / "include"
    from tvm_ffi import libinfo

    return Path(libinfo.find_include_path())


def cuda_include() -> Path | None:
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and (Path(root) / "include" / "cuda.h").is_file():
            return Path(root) / "include"
    return None


def export_revision(rev: str, dest: Path) -> Path:
    """The include/ tree of git revision `rev`, unpacked under dest."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", rev, "include"], capture_output=True, check=False
    )
    if archive.returncode != 0:
        raise SystemExit(f"--baseline {rev}: git archive failed: {archive.stderr.decode().strip()}")
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return dest / "include"


def compile_seconds(cmd: list[str]) -> float:
    """CPU seconds (user + sys) of one compiler run, children included."""
    # stderr to a file, not a pipe: a long error log must not block the compiler before wait4.
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            log = err.read().decode(errors="replace")
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{log}")
    return usage.ru_utime + usage.ru_stime


def command(cxx: str, include: Path, cuda: Path | None, source: Path, mode: list[str]) -> list[str]:
    cmd = [cxx, "-std=c++17", *mode, "-I", str(include)]
    if cuda is not None:
        cmd += ["-I", str(cuda)]
    for header in PRELUDE:
        cmd += ["-include", header]
    return [*cmd, str(source), "-o", os.devnull]


def preprocessed_lines(cmd: list[str]) -> int:
    """Lines of the translation unit after the preprocessor (``-E`` in place of the mode)."""
    proc = subprocess.run([*cmd[:-2], "-o", "-"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    return len(proc.stdout.splitlines())


def measure(args: argparse.Namespace, includes: dict[str, Path], workdir: Path) -> list[dict]:
    """One row per (wrapper, mode); the include dirs are interleaved run by run."""
    cuda = cuda_include()
    runs = 1 if args.quick else args.runs
    rows = []
    for wrapper, text in WRAPPERS.items():
        source = workdir / f"{len(rows)}.cc"
        source.write_text(text)
        if not (wrapper.startswith("guide") and cuda is None):
            lines = {
                label: preprocessed_lines(command(args.cxx, include, cuda, source, ["-E"]))
                for label, include in includes.items()
            }
            rows.append({"wrapper": wrapper, "mode": "-E lines", "runs": 1, "lines": lines})
        for mode, flags in MODES.items():
            row = {"wrapper": wrapper, "mode": mode, "runs": runs, "seconds": {}}
            if wrapper.startswith("guide") and cuda is None:
                row["skipped"] = "no cuda.h (set CUDA_HOME)"
                rows.append(row)
                continue
            samples: dict[str, list[float]] = {label: [] for label in includes}
            for _ in range(runs):
                for label, include in includes.items():
                    samples[label].append(
                        compile_seconds(command(args.cxx, include, cuda, source, flags))
                    )
            row["seconds"] = {label: statistics.median(s) for label, s in samples.items()}
            rows.append(row)
    return rows


def cells(rows: list[dict], labels: list[str]) -> list[list[str]]:
    out = []
    for row in rows:
        if "lines" in row:
            counts = [row["lines"][label] for label in labels]
            values = [str(n) for n in counts]
            if len(labels) == 2:
                values.append(f"{(counts[1] - counts[0]) / counts[0] * 100:+.0f}%")
        elif "skipped" in row:
            values = [f"n/a ({row['skipped']})"] * len(labels) + (["-"] if len(labels) == 2 else [])
        else:
            secs = [row["seconds"][label] for label in labels]
            values = [f"{s:.2f} s" for s in secs]
            if len(labels) == 2:
                values.append(f"{(secs[1] - secs[0]) / secs[0] * 100:+.0f}%" if secs[0] else "-")
        out.append([row["wrapper"], row["mode"], *values])
    return out


def collect(args: argparse.Namespace, workdir: Path) -> dict:
    if shutil.which(args.cxx) is None:
        raise SystemExit(f"--cxx {args.cxx}: compiler not found")
    includes: dict[str, Path] = {}
    if args.baseline:
        includes[f"baseline ({args.baseline})"] = export_revision(args.baseline, workdir)
    includes["now"] = Path(args.include) if args.include else default_include()
    if not (includes["now"] / "tvm" / "ffi" / "function.h").is_file():
        raise SystemExit(f"--include {includes['now']}: no tvm/ffi/function.h there")
    try:
        rows = measure(args, includes, workdir)
    except RuntimeError as exc:  # a wrapper did not compile: the command and its log
        raise SystemExit(str(exc)) from None
    version = subprocess.run([args.cxx, "--version"], capture_output=True, text=True).stdout
    return {
        "compiler": version.splitlines()[0] if version else args.cxx,
        "rows": rows,
        "includes": {k: str(v) for k, v in includes.items()},
    }


def make_report(raw: dict, mode: str, env: dict) -> dict:
    labels = list(raw["includes"])
    head = ["wrapper", "mode", *labels] + (["change"] if len(labels) == 2 else [])
    section = {
        "title": "preprocessed lines; median CPU seconds (user + sys) of "
        f"{raw['rows'][-1]['runs']} run(s) per timed cell",
        "headers": head,
        "cells": cells(raw["rows"], labels),
        "notes": [raw["compiler"], *(f"{k}: {v}" for k, v in raw["includes"].items())],
    }
    return _common.report("header_cost", mode, env, raw, [section])


def main(argv: list[str] | None = None) -> None:
    _common.main(argv, parse_args, collect, make_report)


if __name__ == "__main__":
    main()
