"""Prints, per client module, whether it builds and loads and whether it matches torch.

    python tests/clients/report.py [--mode build|run] [--jobs N] [NAME ...]

``build`` (the default) builds and loads each module; ``run`` also calls it through the
client's API against torch (on a GPU). Run it once in each environment to compare
(this package, apache-tvm-ffi): the rows are the same modules built the same way.
Each row's error is the first compiler/linker error or the exception of the child.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import client_cases
import client_env


def _row(result: client_env.CaseResult, mode: str) -> str:
    case = client_cases.BY_NAME[result.name]
    if mode == "build":
        ran = "-"
    elif not result.ok:
        ran = "no" if result.built else "-"
    else:
        ran = f"skipped ({result.skipped})" if result.skipped else "yes"
    error = result.error or ""
    source = client_env.source_line(error)
    if source:
        error += f" (source: `{source}`)"
    error = error.replace("|", "\\|")
    return f"| {result.name} | {case.kind} | {'yes' if result.built else 'no'} | {ran} | {error} |"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("build", "run"), default="build")
    parser.add_argument("--jobs", type=int, default=1, help="cases built at once")
    parser.add_argument("--log-dir", help="write each case's full output here")
    parser.add_argument("names", nargs="*", help="cases to run (default: all)")
    args = parser.parse_args(argv)
    names = args.names or [case.name for case in client_cases.CASES]
    unknown = sorted(set(names) - set(client_cases.BY_NAME))
    if unknown:
        parser.error(f"unknown case(s) {unknown}; known: {sorted(client_cases.BY_NAME)}")

    import tvm_ffi

    packages = client_env.install_clients()
    work = Path(tempfile.mkdtemp(prefix="tvm-ffi-clients-"))
    env = client_env.child_env(packages, work)
    log_dir = Path(args.log_dir) if args.log_dir else None
    if log_dir:
        log_dir.mkdir(parents=True, exist_ok=True)
    version = getattr(tvm_ffi, "__version__", "?")
    print(f"tvm_ffi {version} from {Path(tvm_ffi.__file__).parent}, mode {args.mode}")
    print("| module | kind | builds+loads | runs and matches torch | first error |")
    print("| --- | --- | --- | --- | --- |", flush=True)
    results = []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        # Rows print in order as their cases finish.
        for result in pool.map(lambda name: client_env.run_case(name, args.mode, env), names):
            results.append(result)
            print(_row(result, args.mode), flush=True)
            if log_dir:
                (log_dir / f"{result.name}.{args.mode}.log").write_text(result.output)
    line = f"builds+loads: {sum(r.built for r in results)} of {len(results)}"
    if args.mode == "run":
        called = [r for r in results if r.built and not r.skipped]
        line += f"; runs and matches torch: {sum(r.ok for r in called)} of {len(called)} called"
    print(line)
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
