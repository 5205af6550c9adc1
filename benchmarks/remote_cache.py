"""First use on a second host of modules a first host built: the remote module cache.

Two "hosts" on one machine: host A is this install with its own cache directory, host B a
copy of the package at another path (other file times) with another cache directory; they
share a local redis-server (and a local docker-registry, where installed). Per module and
remote, each sample starts from empty caches and an empty remote:

- cold build (A): A builds the module and publishes it (``TVM_FFI_REMOTE_CACHE_MODE=write``);
- first use (B): B fetches it (read mode), verifies it, publishes it locally and loads it;
- first use (B, new host): the same with a new ``XDG_CACHE_HOME`` on B, so that the host
  knows no tool's identity and no package digest yet (a new machine or container);
- local hit (B): B's next process, through the hit index.

Times are each child's own, from before ``from tvm_ffi import cpp`` (so with the import of
tvm_ffi) to the module loaded: interpreter start excluded. Bytecode is cached, as an
installed package has it (a warm-up process writes it). ``TVM_FFI_CUDA_ARCH_LIST=9.0`` on
both hosts (a GPU-less builder and a GPU host must choose the same targets). With
``--baseline-path DIR`` (the ``python`` folder of another checkout, built), each sample
also runs that package's hosts right after this one's, so both see the same machine load
("before" rows). Needs the ``redis`` client (test extra), redis-server and g++; the CUDA
rows need nvcc.
Run: python benchmarks/remote_cache.py [--quick] [--baseline-path DIR] [--json PATH]
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common

NAME = "remote_cache"
KEY = "benchmark-secret-0123456789"
MODULES = (
    ("plain", "the guide's wrapper (one C++ function)"),
    ("cuda", "cuda_sources with device code"),
    ("embed", "embedded CUBIN (launcher wrapper)"),
)
COLUMNS = ("cold", "first", "first_new_host", "hit")

CHILD = r"""
import sys, time
start = time.perf_counter()
from tvm_ffi import cpp
kind = sys.argv[1]
if kind == "plain":
    cpp.load_inline("bench_plain", cpp_sources="int add_one(int x) { return x + 1; }",
                    functions="add_one")
elif kind == "cuda":
    source = '''
__global__ void add_one_kernel(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}
void add_one(tvm::ffi::TensorView x) {
  int n = static_cast<int>(x.size(0));
  add_one_kernel<<<(n + 255) / 256, 256>>>(static_cast<float*>(x.data_ptr()), n);
}
'''
    cpp.load_inline("bench_cuda", cuda_sources=source, functions="add_one")
else:
    from helpers.launcher_cases import PTX, WRAPPER
    cpp.load_inline("bench_embed", cpp_sources=WRAPPER, embed_cubin={"kernels": PTX})
print((time.perf_counter() - start) * 1000)
"""


def _child(kind: str, cache: Path, env: dict, install: Path | None = None) -> float:
    code = (
        CHILD if install is None else f"import sys; sys.path.insert(0, {str(install)!r})\n{CHILD}"
    )
    full = dict(env, TVM_FFI_CACHE_DIR=str(cache))
    proc = subprocess.run([sys.executable, "-c", code, kind], env=full, capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"{kind} on {cache.name}: {proc.stderr.strip()[-400:]}")
    return float(proc.stdout.splitlines()[-1])


def _sample(kind: str, url: str, work: Path, base: dict, install_b: Path) -> dict:
    remote = dict(base, TVM_FFI_REMOTE_CACHE=url, TVM_FFI_REMOTE_CACHE_KEY=KEY)
    got = {"cold": _child(kind, work / "a", dict(remote, TVM_FFI_REMOTE_CACHE_MODE="write"))}
    got["first"] = _child(kind, work / "b", remote, install_b)
    got["hit"] = _child(kind, work / "b", remote, install_b)
    new_host = dict(remote, XDG_CACHE_HOME=str(work / "xdg"))
    got["first_new_host"] = _child(kind, work / "c", new_host, install_b)
    return got


def collect(args, workdir: Path) -> dict:
    import redis

    sys.path.insert(0, str(_common.REPO_ROOT / "tests"))
    from helpers import package, servers

    samples = 1 if args.quick else 5
    # (label, host A's PYTHONPATH entries, host B's install): this package, and the baseline
    variants = [("now", [], package.second_install(workdir / "install_b"))]
    if args.baseline_path:
        before = Path(args.baseline_path).resolve()
        copy = package.second_install(workdir / "install_b_before", before / "tvm_ffi")
        variants.append(("before", [str(before)], copy))
    base = {k: v for k, v in os.environ.items() if not k.startswith(("TVM_FFI_", "PYTHONDONT"))}
    base["TVM_FFI_CUDA_ARCH_LIST"] = "9.0"
    tests = str(_common.REPO_ROOT / "tests")
    raw: dict = {"samples": samples, "rows": []}
    remotes = [("Redis", servers.redis_server)]
    if servers.REGISTRY is not None and not args.quick:
        remotes.append(("OCI registry", servers.registry))
    for label, serve in remotes if servers.REDIS else []:
        work = workdir / label.split()[0]
        work.mkdir()
        with serve(work) as url:
            for kind, title in MODULES:
                if kind != "plain" and _common.nvcc_path() is None:
                    raw["rows"].append({"module": title, "remote": label, "skipped": "no nvcc"})
                    continue
                runs: dict = {name: [] for name, _, _ in variants}
                for index in range(samples + 1):  # the first writes the bytecode: not kept
                    for name, paths, install_b in variants:
                        env = dict(base, PYTHONPATH=os.pathsep.join([*paths, tests]))
                        if url.startswith("redis"):
                            redis.Redis.from_url(url).flushdb()
                            where = url
                        else:
                            where = f"{url}-{kind}-{name}-{index}"
                        got = _sample(kind, where, work / f"{kind}-{name}-{index}", env, install_b)
                        _common.progress(f"{label} {kind} {name} {index}: {json.dumps(got)}")
                        if index:
                            runs[name].append(got)
                for name, _, _ in variants:
                    row = {"module": title, "remote": label, "package": name}
                    row.update({c: _common.summarize([r[c] for r in runs[name]]) for c in COLUMNS})
                    raw["rows"].append(row)
                shutil.rmtree(work, ignore_errors=True)
                work.mkdir()
    if not raw["rows"]:
        raw["rows"].append({"module": "all", "remote": "Redis", "skipped": "no redis-server"})
    return raw


def make_report(raw: dict, mode: str, env: dict) -> dict:
    headers = ["module", "remote", "package", "cold build (A) ms", "first use (B) ms",
               "first use (B, new host) ms", "local hit (B) ms", "note"]  # fmt: skip
    cells = []
    for row in raw["rows"]:
        if "skipped" in row:
            cells.append([row["module"], row["remote"], "-", *["n/a"] * 4, row["skipped"]])
            continue
        medians = [_common.fmt_num(row[c]["median"], 1) for c in COLUMNS]
        cells.append([row["module"], row["remote"], row["package"], *medians,
                      f"median of {raw['samples']}"])  # fmt: skip
    section = {"title": "First use on host B of modules host A built", "headers": headers,
               "cells": cells,
               "notes": ["goal: first use (B) of the guide's wrapper under 50 ms"]}  # fmt: skip
    return _common.report(NAME, mode, env, raw, [section])


def parse_args(argv):
    parser = _common.base_parser(NAME, __doc__.splitlines()[0])
    parser.add_argument("--baseline-path", help="another checkout's built python/ folder")
    return parser.parse_args(argv)


if __name__ == "__main__":
    _common.main(None, parse_args, collect, make_report)
