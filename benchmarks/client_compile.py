"""What our headers cost a client's translation unit, against apache-tvm-ffi's (issue 21).

FlashInfer's and sglang's own JIT code (installed privately by tests/clients/client_env.py,
from ``--client-wheels``) generates each module's build.ninja in a child process; the child
stops the build at ``ninja`` and keeps ``ninja -t commands``' compile lines, so the commands
are exactly the client's, made at run time. Each compile line is then run as is (ours: it
names this package's include dir) and with that dir replaced by apache-tvm-ffi's include dir
(``--ref-path``/``--ref-wheel``), in interleaved pairs whose order alternates per rep; the
table gives medians of wall and CPU (user + sys of the compiler processes) seconds.

Two timings per TU:

- "whole command": the client's nvcc line, device pass (cicc, ptxas) included.
- "host pass": the steps of that same nvcc line that do not generate device code, from
  ``nvcc -dryrun --keep``: the host preprocess (gcc -E without ``__CUDA_ARCH__``),
  ``cudafe++`` and the host compile of the ``.cudafe1.cpp`` (gcc -c), replayed on the
  intermediates of a first untimed run. The device pass compiles the TU's kernels, which
  do not change with the tvm_ffi headers, and on FlashInfer's TUs dominates the whole
  command; the host pass is where header weight shows. (cicc also parses the headers, so
  the whole command stays the final word.) A plain c++ TU's host pass is the whole command.

    python benchmarks/client_compile.py --ref-path /path/to/unpacked/apache-tvm-ffi
    python benchmarks/client_compile.py --quick --host-only     # 2 reps, no whole command
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _common as common
import _ref

CLIENTS_DIR = common.REPO_ROOT / "tests" / "clients"
MODULES = (
    "flashinfer.activation",
    "flashinfer.norm",
    "flashinfer.page",
    "sglang.add_constant",
    "sglang.rmsnorm",
)
MARK = "@@CLIENT_COMPILE@@ "
HEADERS = ["module", "ours wall s", "apache wall s", "ratio", "ours CPU s", "apache CPU s"]
HEADERS += ["CPU ratio", "note"]
_DEVICE_STEPS = ("cicc", "ptxas", "fatbinary", "nvlink")


def parse_args(argv=None) -> argparse.Namespace:
    parser = common.base_parser("client_compile", __doc__.splitlines()[0])
    parser.add_argument(
        "--reps", type=int, default=None, help="pairs per TU (default 5; 2 --quick)"
    )
    parser.add_argument("--client-wheels", default=os.environ.get("TVM_FFI_CLIENT_WHEELS"))
    parser.add_argument(
        "--modules", default=",".join(MODULES), help="client cases, comma-separated"
    )
    parser.add_argument("--host-only", action="store_true", help="skip the whole-command timing")
    # The child that captures one module's compile lines: --capture OUT_DIR MODULE.
    parser.add_argument("--capture", nargs=2, dest="worker", default=None, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def params(quick: bool) -> dict:
    return {"reps": 2 if quick else 5}


# ----------------------------------------------------------------------------- child: capture


class _Captured(Exception):
    """Raised in place of the client's ninja run once its compile lines are kept."""


def capture(out_dir: str, name: str) -> None:
    """In the child: build ``name`` through the client's code, keep its compile lines."""
    import client_cases
    import client_driver

    real_run, found = subprocess.run, []

    def run(cmd, *args, **kw):
        if isinstance(cmd, (list, tuple)) and cmd and os.path.basename(str(cmd[0])) == "ninja":
            cwd = str(kw.get("cwd") or os.getcwd())
            keep = Path(out_dir) / f"build{len(found)}"  # sglang deletes its staging dir
            shutil.copytree(cwd, keep, dirs_exist_ok=True)
            tool = [str(cmd[0]), *[c for c in cmd[1:] if c != "-v"], "-t", "commands"]
            text = real_run(tool, cwd=keep, capture_output=True, text=True, check=True).stdout
            found.extend({"cwd": str(keep), "command": c} for c in text.splitlines() if " -c " in c)
            raise _Captured
        return real_run(cmd, *args, **kw)

    case, capability = client_cases.BY_NAME[name], client_driver._capability()
    if capability is None:
        os.environ.setdefault("FLASHINFER_CUDA_ARCH_LIST", "9.0")
    subprocess.run = run
    try:
        with client_driver._arch_context(case, capability):
            case.build()
    except _Captured:
        pass
    print(MARK + json.dumps(found), flush=True)


def capture_all(names: list[str], work: Path, wheels: str | None) -> tuple[dict, dict]:
    """({module: [{"cwd", "command"}] or "reason"}, the environment to compile in: the
    suite's child environment, whose CPATH adds pip's cuBLAS/cuRAND headers where the
    toolkit lacks them) from one child per module."""
    sys.path.insert(0, str(CLIENTS_DIR))
    import client_env

    if wheels:
        os.environ[client_env.WHEELS_ENV] = wheels
    try:
        env = client_env.child_env(client_env.install_clients(), work)
    except Exception as exc:
        return {n: f"clients not installed: {common.error_reason(exc)}" for n in names}, {}
    out = {}
    for name in names:
        argv = [sys.executable, __file__, "--capture", str(work / name), name]
        proc = subprocess.run(argv, env=env, capture_output=True, text=True)
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(MARK)]
        found = json.loads(lines[-1][len(MARK) :]) if lines else []
        out[name] = found or f"no compile line captured: {_ref.failure_reason(proc.stderr)}"
    return out, env


# ----------------------------------------------------------------------------- timing


def timed(script: str, cwd: str, env: dict) -> tuple[float, float]:
    """(wall s, CPU s of every child process) of one bash script; raises if it fails."""
    before, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    proc = subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True)
    wall, after = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(_ref.failure_reason(proc.stdout + proc.stderr))
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def host_steps(command: str, cwd: str, keep: str, env: dict) -> str:
    """The non-device steps of an nvcc line, after one untimed run that leaves every
    intermediate in ``keep`` (the replayed host compile includes the fatbin made there)."""
    if "nvcc" not in shlex.split(command)[0]:
        return command
    kept = f"{command} --keep --keep-dir {shlex.quote(keep)}"
    os.makedirs(keep, exist_ok=True)
    timed(kept, cwd, env)
    dry = subprocess.run(
        ["bash", "-c", kept + " -dryrun"], cwd=cwd, env=env, capture_output=True, text=True
    )
    steps = []
    for line in dry.stderr.splitlines():
        step = line.removeprefix("#$ ").strip()
        if (
            not line.startswith("#$ ")
            or "=" in step.split(" ")[0]
            or step.startswith(("rm ", "--"))
        ):
            continue
        device_pp = " -E " in step and "-D__CUDA_ARCH__=" in step
        if not (device_pp or any(tool in step.split(" ")[0] for tool in _DEVICE_STEPS)):
            steps.append(step)
    if not any(" -c " in step for step in steps):  # never time an empty script as a pass
        raise RuntimeError(f"no host compile step in nvcc -dryrun of: {command}")
    return "set -e\n" + "\n".join(steps)


def stats(pairs: list) -> dict:
    wall, cpu = [p[0] for p in pairs], [p[1] for p in pairs]
    return {"wall": statistics.median(wall), "cpu": statistics.median(cpu), "samples": pairs}


def measure_tu(
    command: str, cwd: str, ours: list[str], apache: str, reps: int, host: bool, base: dict
) -> dict:
    """Interleaved pairs of one TU: {"ours": stats, "apache": stats}."""
    variants = {"ours": command, "apache": command}
    for inc in sorted(ours, key=len, reverse=True):
        variants["apache"] = variants["apache"].replace(inc, apache)
    if variants["apache"] == command:
        raise RuntimeError(f"the command names none of our include dirs {ours}")
    nvcc_bin = os.path.dirname(shlex.split(command)[0])
    env = dict(base, PATH=os.pathsep.join(p for p in (nvcc_bin, base.get("PATH")) if p))
    with tempfile.TemporaryDirectory(prefix="client-compile-") as tmp:
        if host:
            variants = {k: host_steps(v, cwd, f"{tmp}/{k}", env) for k, v in variants.items()}
        samples = {"ours": [], "apache": []}
        for rep in range(reps + (0 if host else 1)):  # the whole command gets one warm-up
            order = ("ours", "apache") if rep % 2 == 0 else ("apache", "ours")
            for key in order:
                result = timed(variants[key], cwd, env)
                if host or rep > 0:
                    samples[key].append(result)
    return {k: stats(v) for k, v in samples.items()}


def tu_label(module: str, command: str) -> str:
    sources = [a for a in shlex.split(command) if a.endswith((".cu", ".cc", ".cpp"))]
    return f"{module}: {Path(sources[-1]).name}" if sources else module


# ----------------------------------------------------------------------------- report


def make_report(raw: dict, mode: str, env: dict) -> dict:
    sections = []
    for kind in ("host pass", "whole command"):
        cells = []
        for row in raw.get(kind, []):
            if row.get("status") != "ok":
                cells.append([row["label"], *["-"] * 6, common.note_cell(row)])
                continue
            o, a = row["ours"], row["apache"]
            fmt = common.fmt_num
            wall, cpu = f"{o['wall'] / a['wall']:.3f}", f"{o['cpu'] / a['cpu']:.3f}"
            cells.append([row["label"], fmt(o["wall"]), fmt(a["wall"]), wall, fmt(o["cpu"])])
            cells[-1] += [fmt(a["cpu"]), cpu, ""]
        if cells:
            notes = [f"medians of {raw['reps']} interleaved pairs; ratio = ours / apache"]
            sections.append(
                {"title": f"{kind} (s)", "headers": HEADERS, "cells": cells, "notes": notes}
            )
    return common.report("client_compile", mode, env, raw, sections, [raw.get("ref", "")])


def collect(args: argparse.Namespace, work: Path) -> dict:
    args.reps = args.reps or params(args.quick)["reps"]
    ref_dir, ref_note = _ref.resolve_ref(args)
    apache = ref_dir and os.path.join(ref_dir, "tvm_ffi", "include")
    from tvm_ffi import libinfo

    ours = sorted({libinfo.find_include_path(), libinfo.find_dlpack_include_path()})
    names = [n for n in args.modules.split(",") if n]
    kinds = ["host pass"] + ([] if args.host_only else ["whole command"])
    raw: dict = {"ref": f"reference: {ref_note}", "ours_include": ours, "apache_include": apache}
    raw["reps"] = args.reps
    commands, env = capture_all(names, work, args.client_wheels)
    for kind in kinds:
        rows = raw.setdefault(kind, [])
        for name in names:
            found = commands[name]
            if isinstance(found, str) or not apache:
                rows.append(common.na_row(name, found if isinstance(found, str) else ref_note))
                rows[-1]["label"] = name
                continue
            for item in found:
                label = tu_label(name, item["command"])
                print(f"[{kind}] {label}", file=sys.stderr, flush=True)
                try:
                    row = measure_tu(
                        item["command"],
                        item["cwd"],
                        ours,
                        apache,
                        args.reps,
                        kind == "host pass",
                        env,
                    )
                    rows.append({"label": label, "status": "ok", "command": item["command"], **row})
                except Exception as exc:
                    row = common.na_row(label, common.error_reason(exc), command=item["command"])
                    rows.append({**row, "label": label})
    return raw


def main(argv=None) -> None:
    common.main(argv, parse_args, collect, make_report, lambda args: capture(*args.worker))


if __name__ == "__main__":
    main()
