"""Shared plumbing for the benchmark scripts: statistics, tables, JSON, subprocess workers.

Nothing here imports torch, CUDA packages or ``tvm_ffi`` at import time, so the smoke test can
import every benchmark on a CPU-only machine.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
# Distributions whose versions go into every JSON file (missing ones are recorded as None).
VERSIONED = (
    "torch",
    "triton",
    "cupy-cuda13x",
    "cuda-core",
    "cuda-bindings",
    "numpy",
    "tvm-ffi-cubin",
    "apache-tvm-ffi",
)


# ----------------------------------------------------------------------------- statistics


def summarize(samples: Sequence[float]) -> dict:
    """Median, min, max and count of per-call times (any unit)."""
    if not samples:
        raise ValueError("summarize needs at least one sample (got none)")
    return {
        "median": statistics.median(samples),
        "min": min(samples),
        "max": max(samples),
        "n": len(samples),
    }


@functools.cache
def make_loop(arity: int) -> Callable:
    """A loop ``loop(fn, iters, a0, ..., a{arity-1})`` that calls ``fn(a0, ...)`` iters times.

    Generated per arity because ``fn(*args)`` in the loop costs tens of ns per call, which would
    pollute sub-microsecond numbers; this is the loop a user writes with local names.
    """
    names = ", ".join(f"a{i}" for i in range(arity))
    head = f"def loop(fn, iters{', ' if arity else ''}{names}):\n"
    src = head + f"    for _ in range(iters):\n        fn({names})\n"
    namespace: dict = {}
    exec(compile(src, f"<bench loop {arity}>", "exec"), namespace)
    return namespace["loop"]


def time_calls(
    fn: Callable,
    args: Sequence,
    *,
    iters: int,
    samples: int,
    warmup: int,
    sync: Callable[[], object] | None = None,
) -> list[float]:
    """Host microseconds per call of ``fn(*args)``: one value per sample of ``iters`` calls.

    ``sync`` (e.g. torch.cuda.synchronize) runs before and after each sample, outside the timed
    region: the number is the host cost of issuing the calls, and the GPU queue is drained
    between samples so it never fills up and blocks the host.
    """
    loop = make_loop(len(args))
    loop(fn, warmup, *args)
    if sync is not None:
        sync()
    out = []
    for _ in range(samples):
        if sync is not None:
            sync()
        t0 = time.perf_counter_ns()
        loop(fn, iters, *args)
        t1 = time.perf_counter_ns()
        if sync is not None:
            sync()
        out.append((t1 - t0) / iters / 1e3)
    return out


def time_once(fn: Callable[[], object]) -> float:
    """Seconds taken by one call of fn."""
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


# ----------------------------------------------------------------------------- rows and tables


def ok_row(label: str, samples: Sequence[float], **extra) -> dict:
    row = {"path": label, "status": "ok", "samples": list(samples)}
    row.update(summarize(samples))
    row.update(extra)
    return row


def na_row(label: str, reason: str, **extra) -> dict:
    """A row that could not be measured; reason is kept short enough for a table cell."""
    reason = " ".join(str(reason).split())
    if len(reason) > 200:
        reason = reason[:197] + "..."
    row = {"path": label, "status": "n/a", "reason": reason}
    row.update(extra)
    return row


def error_reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def measure_row(label: str, measure: Callable[[], Sequence[float]], **extra) -> dict:
    """Run one row's measurement; any exception becomes an n/a row instead of killing the table."""
    try:
        return ok_row(label, measure(), **extra)
    except Exception as exc:
        return na_row(label, error_reason(exc), **extra)


def fmt_num(value: float | None, digits: int = 3) -> str:
    if value is None:
        return "-"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:.1f}"
    return f"{value:.{digits}f}"


def fmt_delta(value: float | None) -> str:
    return "-" if value is None else f"{value:+.3f}"


def stat_cells(row: dict | None, scale: float = 1.0, digits: int = 3) -> list[str]:
    """[median, min] of a row, scaled (e.g. 1e3 for s -> ms); dashes for an n/a row."""
    if row is None or row.get("status") != "ok":
        return ["-", "-"]
    return [fmt_num(row["median"] * scale, digits), fmt_num(row["min"] * scale, digits)]


def note_cell(row: dict | None, text: str = "") -> str:
    if row is None:
        return "n/a (not run)"
    if row.get("status") != "ok":
        reason = row.get("reason", "unknown")
        if len(reason) > 100:  # keeps the tables narrow; the JSON has the whole reason
            reason = reason[:97] + "..."
        return f"n/a ({reason})"
    return text


def verdict(value: float | None, limit: float) -> str:
    if value is None:
        return "not measured"
    return "MET" if value <= limit else "MISSED"


def render_table(
    title: str, headers: Sequence[str], rows: Sequence[Sequence[str]], notes: Sequence[str] = ()
) -> str:
    """Plain-text table: numbers right-aligned; the first column and a "note" column left."""
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    left = {0} | {i for i, h in enumerate(headers) if h == "note"}

    def line(cells: Sequence[str]) -> str:
        parts = [
            c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))
        ]
        return "  ".join(parts).rstrip()

    out = [title, line(headers), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in rows]
    out += [f"  * {n}" for n in notes]
    return "\n".join(out)


def report(
    name: str, mode: str, env: dict, raw: dict, sections: list, notes: Sequence[str] = ()
) -> dict:
    """The report every benchmark's make_report() returns: what render_report and the JSON use."""
    return {
        "benchmark": name,
        "mode": mode,
        "env": env,
        "raw": raw,
        "sections": sections,
        "notes": list(notes),
    }


def render_report(report: dict) -> str:
    """Render every section of a report made by a benchmark's make_report()."""
    gpu = report["env"].get("gpu") or "no GPU"
    blocks = [f"== {report['benchmark']} ({report['mode']} mode) on {gpu}"]
    for section in report["sections"]:
        blocks.append(
            render_table(
                section["title"], section["headers"], section["cells"], section.get("notes", ())
            )
        )
    if report.get("notes"):
        blocks.append("\n".join(f"note: {n}" for n in report["notes"]))
    return "\n\n".join(blocks)


# ----------------------------------------------------------------------------- environment, JSON


def package_versions() -> dict:
    versions = {}
    for name in VERSIONED:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def nvcc_path() -> str | None:
    for var in ("CUDA_HOME", "CUDA_PATH"):
        root = os.environ.get(var)
        if root and (Path(root) / "bin" / "nvcc").is_file():
            return str(Path(root) / "bin" / "nvcc")
    found = shutil.which("nvcc")
    if found:
        return found
    default = Path("/usr/local/cuda/bin/nvcc")
    return str(default) if default.is_file() else None


def nvcc_version() -> str | None:
    nvcc = nvcc_path()
    if nvcc is None:
        return None
    try:
        text = subprocess.run(
            [nvcc, "--version"], capture_output=True, text=True, timeout=60
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    lines = [ln for ln in text.splitlines() if "release" in ln]
    return lines[-1].strip() if lines else None


def environment(gpu: str | None = None) -> dict:
    env = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S"),
        "host": platform.node(),
        "python": platform.python_version(),
        "executable": sys.executable,
        "platform": platform.platform(),
        "nvcc": nvcc_version(),
        "gpu": gpu,
        "cuda_arch_list_env": os.environ.get("TVM_FFI_CUDA_ARCH_LIST"),
        "packages": package_versions(),
    }
    return env


def gpu_description() -> str | None:
    """Name and driver of GPU 0 via torch, or None when torch or the GPU is missing."""
    try:
        import torch

        if not torch.cuda.is_available():
            return None
        major, minor = torch.cuda.get_device_capability()
        return f"{torch.cuda.get_device_name()} (sm_{major}{minor})"
    except Exception:
        return None


def write_json(path: str | Path, payload: dict) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, sort_keys=False, default=str) + "\n")
    return path


def progress(line: str) -> None:
    """One measurement as it is taken, on stderr: a run cut off by a time limit still shows
    what it measured."""
    print(f"[progress] {line}", file=sys.stderr, flush=True)


def finish(report: dict, json_path: str | Path) -> None:
    """Write the JSON, then print the table LAST (the device tool returns the output's tail)."""
    written = write_json(json_path, report)
    print(f"[json] {written}", file=sys.stderr, flush=True)
    print(render_report(report), flush=True)


# ----------------------------------------------------------------------------- main


def main(
    argv: Sequence[str] | None,
    parse_args: Callable[[Sequence[str] | None], argparse.Namespace],
    collect: Callable[[argparse.Namespace, Path], dict],
    make_report: Callable[[dict, str, dict], dict],
    worker: Callable[[argparse.Namespace], object] | None = None,
) -> None:
    """Every script's entry point. With ``--worker`` the process is one of the script's own
    children (the apache-tvm-ffi side, a capture) and runs ``worker``; else ``collect`` measures
    in a temporary directory, removed afterwards, and the report is written and printed."""
    args = parse_args(argv)
    if args.worker and worker is not None:
        worker(args)
        return
    workdir = Path(tempfile.mkdtemp(prefix="tvm_ffi_bench_"))
    try:
        raw = collect(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    env = environment(gpu_description())
    finish(make_report(raw, "quick" if args.quick else "full", env), args.json)


# ----------------------------------------------------------------------------- arguments


def base_parser(name: str, description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"{name}.py", description=description)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="fewer samples and repeats (the whole script runs in under a minute)",
    )
    parser.add_argument(
        "--json",
        default=str(BENCH_DIR / "results" / f"{name}.json"),
        help="where to write the JSON results (default: %(default)s)",
    )
    ref = parser.add_mutually_exclusive_group()
    ref.add_argument(
        "--ref-wheel",
        default=None,
        help="apache-tvm-ffi wheel to compare with, unpacked into a temp dir "
        "(default: the first .whl/apache_tvm_ffi-*.whl of the repository)",
    )
    ref.add_argument(
        "--ref-path",
        default=None,
        help="directory holding an unpacked apache-tvm-ffi (its tvm_ffi/ folder)",
    )
    ref.add_argument("--no-ref", action="store_true", help="skip the apache-tvm-ffi rows")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    return parser


# ----------------------------------------------------------------------------- nvcc


def cuda_arch() -> str | None:
    """sm_XY of GPU 0 via torch, or None when there is no GPU."""
    try:
        import torch

        if torch.cuda.is_available():
            major, minor = torch.cuda.get_device_capability()
            return f"sm_{major}{minor}"
    except Exception:
        pass
    return None


def nvcc_compile(args: Sequence[str], timeout: float = 300) -> None:
    nvcc = nvcc_path()
    if nvcc is None:
        raise RuntimeError("nvcc not found (set CUDA_HOME or put nvcc on PATH)")
    proc = subprocess.run([nvcc, *args], capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        first = next(
            (ln for ln in proc.stderr.splitlines() if "error" in ln),
            proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "",
        )
        raise RuntimeError(f"nvcc failed: {first}")


def compile_cubins(sources: dict[str, str], arch: str, workdir: str | Path) -> dict[str, bytes]:
    """Compile {name: CUDA source} to {name: CUBIN bytes} with nvcc, in parallel."""
    from concurrent.futures import ThreadPoolExecutor

    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)

    def one(name: str) -> tuple[str, bytes]:
        src = workdir / f"{name}.cu"
        out = workdir / f"{name}.cubin"
        src.write_text(sources[name])
        nvcc_compile(["-cubin", f"-arch={arch}", "-O3", "-o", str(out), str(src)])
        return name, out.read_bytes()

    workers = max(1, min(len(sources), os.cpu_count() or 4))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return dict(pool.map(one, sorted(sources)))


if __name__ == "__main__":
    # python benchmarks/_common.py RESULT.json ...: print the tables of saved results.
    for _path in sys.argv[1:]:
        print(render_report(json.loads(Path(_path).read_text())), end="\n\n", flush=True)
