"""A host-side compile of every translation unit of the two clients that reaches a tvm/ffi
header, against this package's headers and against apache-tvm-ffi's.

The units: FlashInfer's ``data/csrc`` sources (.cu, .cc, .cpp) and sglang's JIT sources
(``kernels/jit/csrc`` and ``kernels/kda_kernels/csrc``: .cu and the .cuh files its loader
compiles as units) whose includes, followed through the clients' include folders, reach a
``tvm/ffi/`` header. Each is compiled with the client's include folders and language standard
(C++17 for FlashInfer, C++20 for sglang): .cu/.cuh by ``nvcc --cuda -arch=sm_90a`` (host
preprocessing and the CUDA front end, no device code), others by ``c++ -fsyntax-only``. A unit
that fails against both (a header the machine lacks, a macro only the client's JIT defines)
says nothing about either; the comparison is the units apache's headers compile.

    python tests/clients/compile_sweep.py                 # every unit: the summary line
    python tests/clients/compile_sweep.py --sample 10     # the first 10 of a spread
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)
_ARCH, _ARCH_SGL = "sm_90a", "900"  # sglang's JIT defines SGL_CUDA_ARCH (major*100+minor*10)
_BLACKWELL, _BLACKWELL_SGL = "sm_100a", "1000"
_BLACKWELL_ONLY = re.compile(r"#error.*(SM ?10[03]|sm_?10[03]|Blackwell)", re.I)


@dataclasses.dataclass(frozen=True)
class Unit:
    client: str  # "flashinfer" or "sglang"
    path: Path
    std: str  # "c++17" or "c++20"
    includes: tuple[Path, ...]  # the client's include folders, in its order
    system_includes: tuple[Path, ...]

    @property
    def label(self) -> str:
        marker = "/data/csrc/" if self.client == "flashinfer" else "/kernels/"
        return f"{self.client}: {str(self.path).split(marker, 1)[-1]}"


@dataclasses.dataclass(frozen=True)
class Outcome:
    ok: bool
    error: str  # the first error line, "" when it compiled


def _reaching(roots: list[Path], suffixes: tuple[str, ...], dirs: list[Path]) -> list[Path]:
    """Files under `roots` with one of `suffixes` whose includes reach tvm/ffi/."""
    memo: dict[Path, bool] = {}

    def reaches(path: Path, stack: set) -> bool:
        if path in memo:
            return memo[path]
        if path in stack:
            return False
        stack.add(path)
        try:
            text = path.read_text(errors="replace")
        except OSError:
            text = ""
        found = False
        for name in _INCLUDE.findall(text):
            if name.startswith("tvm/ffi/"):
                found = True
                break
            for folder in (path.parent, *dirs):
                candidate = folder / name
                if candidate.is_file() and reaches(candidate.resolve(), stack):
                    found = True
                    break
            if found:
                break
        stack.discard(path)
        memo[path] = found
        return found

    out = []
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.suffix in suffixes and path.is_file() and reaches(path.resolve(), set()):
                out.append(path)
    return out


def units(packages: Path) -> list[Unit]:
    """Every unit of both clients installed under `packages` that reaches a tvm/ffi header."""
    out = []
    data = packages / "flashinfer" / "data"
    csrc = data / "csrc"
    if csrc.is_dir():
        # FlashInfer's JIT: its CCCL with -I, the rest with -isystem (flashinfer/jit/cpp_ext.py),
        # plus the folders its modules add (nv_internal for the TensorRT-LLM ports).
        cutlass = data / "cutlass"
        system = (data / "include", csrc, cutlass / "include",
                  cutlass / "tools" / "util" / "include", data / "spdlog" / "include")  # fmt: skip
        extra = (csrc / "nv_internal", csrc / "nv_internal" / "include")
        cccl = (data / "cccl" / "libcudacxx" / "include",)
        for path in _reaching([csrc], (".cu", ".cc", ".cpp"), [*extra, *system]):
            local = (path.parent, path.parent.parent, *extra, *cccl)
            out.append(Unit("flashinfer", path, "c++17", local, system))
    kernels = packages / "sglang" / "kernels"
    if kernels.is_dir():
        include = (kernels / "jit" / "include",)
        roots = [kernels / "jit" / "csrc", kernels / "kda_kernels" / "csrc"]
        for path in _reaching(roots, (".cu", ".cuh", ".cc", ".cpp"), [*include, *roots]):
            out.append(Unit("sglang", path, "c++20", (path.parent, *include), ()))
    return out


def command(unit: Unit, tvm_ffi_include: Path, nvcc: str, cxx: str) -> list[str]:
    flags = [f"-std={unit.std}", *(f"-I{d}" for d in unit.includes)]
    flags += ["-isystem", str(tvm_ffi_include.resolve())]
    for folder in unit.system_includes:
        flags += ["-isystem", str(folder)]
    if unit.client == "sglang":
        flags.append(f"-DSGL_CUDA_ARCH={_ARCH_SGL}")
    flags += ["-DNDEBUG", "-DENABLE_BF16", "-DENABLE_FP8", "-DFLASHINFER_ENABLE_BF16",
              "-DFLASHINFER_ENABLE_F16", "-DFLASHINFER_ENABLE_FP8_E4M3",
              "-DFLASHINFER_ENABLE_FP8_E5M2"]  # fmt: skip
    if unit.path.suffix in (".cu", ".cuh"):
        return [nvcc, "-x", "cu", *flags, "--expt-relaxed-constexpr", f"-arch={_ARCH}",
                "--cuda", "-o", os.devnull, str(unit.path)]  # fmt: skip
    cuda_include = Path(nvcc).resolve().parent.parent / "include"
    return [cxx, *flags, f"-I{cuda_include}", "-fsyntax-only", str(unit.path)]


def _run(cmd: list[str], env: dict) -> subprocess.CompletedProcess:
    """A c++ line as it is; an nvcc line as its host steps only: nvcc's own host preprocessing
    and its C++ front end (cudafe++), taken from `nvcc -dryrun`, without the device passes
    (cicc, ptxas) that the tvm/ffi headers do not reach and that cost most of the time."""
    if "--cuda" not in cmd:
        return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    import tempfile

    with tempfile.TemporaryDirectory(prefix="sweep-unit-") as tmp:
        env = {**env, "TMPDIR": tmp}
        dry = subprocess.run([*cmd, "-dryrun"], capture_output=True, text=True, env=env, cwd=tmp)
        steps = [ln[3:] for ln in dry.stderr.splitlines() if ln.startswith("#$ ")]
        host = [st for st in steps if " -E " in st and "-D__CUDA_ARCH__=" not in st][:1]
        host += [st for st in steps if st.startswith("cudafe++")][:1]
        if dry.returncode != 0 or len(host) != 2:
            return dry
        # cudafe++ is found on PATH, beside nvcc (client_env puts the toolkit's bin/ there).
        return subprocess.run(["bash", "-c", "set -e\n" + "\n".join(host)], capture_output=True,
                              text=True, env=env, cwd=tmp, timeout=600)  # fmt: skip


def compile_unit(unit: Unit, tvm_ffi_include: Path, nvcc: str, cxx: str, env: dict) -> Outcome:
    cmd = command(unit, tvm_ffi_include, nvcc, cxx)
    proc = _run(cmd, env)
    if proc.returncode != 0 and _BLACKWELL_ONLY.search(proc.stdout + proc.stderr):
        # A unit for Blackwell only (its own #error says so): its host side at sm_100a.
        cmd = [f"-arch={_BLACKWELL}" if a == f"-arch={_ARCH}" else a for a in cmd]
        cmd = [f"-DSGL_CUDA_ARCH={_BLACKWELL_SGL}" if a == f"-DSGL_CUDA_ARCH={_ARCH_SGL}" else a
               for a in cmd]  # fmt: skip
        proc = _run(cmd, env)
    if proc.returncode == 0:
        return Outcome(True, "")
    lines = (proc.stdout + proc.stderr).splitlines()
    first = next((ln for ln in lines if "error" in ln), lines[0] if lines else "")
    return Outcome(False, first.strip()[:300])


def spread(all_units: list[Unit]) -> list[Unit]:
    """The units reordered so that any prefix is a spread over both clients and their folders
    (a sample, or a sweep stopped early, is representative): bit-reversed positions of each
    client's list, the clients alternating."""

    def reorder(items: list[Unit]) -> list[Unit]:
        bits = max(1, (len(items) - 1).bit_length())
        keys = sorted(range(len(items)), key=lambda i: int(f"{i:0{bits}b}"[::-1], 2))
        return [items[i] for i in keys]

    lists = [reorder([u for u in all_units if u.client == c]) for c in ("flashinfer", "sglang")]
    out = []
    for i in range(max(map(len, lists))):
        out += [lst[i] for lst in lists if i < len(lst)]
    return out


def sweep(
    chosen: list[Unit], ours: Path, apache: Path, env: dict, jobs: int = 1, on_row=None
) -> dict:
    """Compiles each unit against both include folders; `on_row(unit, ours, apache)` sees each
    result as it comes (in order)."""
    nvcc = shutil.which("nvcc", path=env.get("PATH")) or "nvcc"
    cxx = env.get("CXX", "c++")

    def both(unit: Unit) -> tuple[Unit, Outcome, Outcome]:
        return (unit, compile_unit(unit, ours, nvcc, cxx, env),
                compile_unit(unit, apache, nvcc, cxx, env))  # fmt: skip

    rows = []
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        for row in pool.map(both, chosen):
            rows.append(row)
            if on_row is not None:
                on_row(*row)
    return {"rows": rows, "summary": summary(rows)}


def summary(rows: list) -> str:
    ours = sum(o.ok for _, o, _ in rows)
    apache = sum(a.ok for _, _, a in rows)
    n = len(rows)
    return f"host-side compile of {n} units: ours {ours}/{n}, apache {apache}/{n}"


def client_sources() -> list[Path]:
    """The two clients' files: their wheels (from $TVM_FFI_CLIENT_WHEELS, any Python tag:
    only the sources are read) unpacked, one folder each."""
    from helpers import apache_wheel

    wanted = ("flashinfer_python-0.7.2.post1-*.whl", "sglang-0.5.23-*.whl")
    folders = [f for f in os.environ.get("TVM_FFI_CLIENT_WHEELS", "").split(os.pathsep) if f]
    found = {
        pattern: sorted(w for f in folders for w in Path(f).glob(pattern)) for pattern in wanted
    }
    wheels = [paths[0] for paths in found.values() if paths]
    missing = [pattern for pattern, paths in found.items() if not paths]
    if missing:
        raise RuntimeError(
            f"the sweep needs the client wheels {', '.join(missing)} in TVM_FFI_CLIENT_WHEELS "
            "(tests/clients/README.md)"
        )
    return [apache_wheel.unpacked(w) for w in wheels]


def main(argv: list[str] | None = None) -> int:
    here = Path(__file__).resolve().parent
    sys.path.insert(0, str(here))
    sys.path.insert(0, str(here.parent))
    import client_env

    from helpers import apache_wheel

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", type=int, default=0, help="units to compile (0: all)")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--log", help="write one line per unit here")
    args = parser.parse_args(argv)
    wheel = apache_wheel.find_wheel()
    if wheel is None:
        parser.error(f"no apache-tvm-ffi wheel: set {apache_wheel.WHEEL_ENV}")
    apache = apache_wheel.unpacked(wheel) / "tvm_ffi" / "include"
    ours = here.parents[1] / "include"
    import tempfile

    with tempfile.TemporaryDirectory(prefix="sweep-") as tmp:
        work = Path(tmp)
        env = client_env.child_env(work, work)
        chosen = [u for folder in client_sources() for u in units(folder)]
        chosen = spread(chosen)[: args.sample or None]
        log = open(args.log, "w") if args.log else None  # noqa: SIM115

        def on_row(unit: Unit, o: Outcome, a: Outcome) -> None:
            if log is not None:
                log.write(f"{unit.label}\tours={'ok' if o.ok else o.error}\t"
                          f"apache={'ok' if a.ok else a.error}\n")  # fmt: skip
                log.flush()

        result = sweep(chosen, ours, apache, env, args.jobs, on_row)
        if log is not None:
            log.close()
    for unit, o, a in result["rows"]:
        if a.ok and not o.ok:
            print(f"ours only fails: {unit.label}: {o.error}")
    print(result["summary"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
