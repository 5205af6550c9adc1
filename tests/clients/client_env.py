"""Installs the two clients privately and runs one case of client_cases.py in a child.

The clients are installed with ``pip install --no-deps --target`` into a cache folder of
their own (nothing lands in the environment under test) and imported in a child process
whose PYTHONPATH puts ``site/`` (stand-ins for their heavy third-party imports) and that
folder first. A child per case keeps their import-time state (arch lists read from the
environment, registries, stand-in modules) out of the test process.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
import hashlib
import json
import os
import re
import shutil
import site
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SITE_DIR = HERE / "site"
DRIVER = HERE / "client_driver.py"

# The client versions under test, and msgspec: sglang's kernel registry defines its
# records as msgspec Structs, which a stand-in cannot imitate faithfully.
REQUIREMENTS = ("flashinfer-python==0.7.2.post1", "sglang==0.5.23", "msgspec==0.22.0")
# Folders of wheels (os.pathsep-separated) to install from instead of PyPI (a machine
# without network; several folders, so that each can be carried on its own).
WHEELS_ENV = "TVM_FFI_CLIENT_WHEELS"
RESULT_TAG = "CLIENT-RESULT "
BUILT_TAG = "built and loaded: "  # the driver's line once the module is loaded


def install_dir() -> Path:
    """Where the clients are installed: one folder per requirement set and Python."""
    base = os.environ.get("TVM_FFI_CLIENTS_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "tvm-ffi-clients"
    )
    key = hashlib.sha256(repr((REQUIREMENTS, sys.version_info[:2])).encode()).hexdigest()[:12]
    return Path(base) / f"py{sys.version_info[0]}{sys.version_info[1]}-{key}"


def install_clients() -> Path:
    """Installs the clients once (into a temporary folder renamed when complete)."""
    target = install_dir()
    if (target / ".complete").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=target.name + ".partial.", dir=target.parent))
    cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(partial)]
    wheels = os.environ.get(WHEELS_ENV)
    if wheels:
        cmd.append("--no-index")
        for folder in filter(None, wheels.split(os.pathsep)):
            cmd += ["--find-links", folder]
    proc = subprocess.run([*cmd, *REQUIREMENTS], capture_output=True, text=True)
    if proc.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        where = (
            f"the wheels in {WHEELS_ENV}={wheels}"
            if wheels
            else f"PyPI (set {WHEELS_ENV} to a wheel folder offline)"
        )
        raise RuntimeError(
            f"installing {', '.join(REQUIREMENTS)} from {where} failed:\n{proc.stdout}{proc.stderr}"
        )
    (partial / ".complete").write_text("\n".join(REQUIREMENTS) + "\n")
    try:
        partial.rename(target)
    except OSError:  # another process installed it first
        shutil.rmtree(partial, ignore_errors=True)
    return target


# Library headers FlashInfer includes (norm.cuh: cublasLt.h; sampling.cuh: curand.h; the
# fp8 GEMM: nvrtc.h) that a toolkit without those libraries lacks and that pip's nvidia-*
# wheels (torch's CUDA dependencies, this package's nvrtc extra) provide.
_LIBRARY_HEADERS = ("cublasLt.h", "curand.h", "nvrtc.h")
_PIP_NVIDIA = ("nvidia/cu13", "nvidia/cublas", "nvidia/curand", "nvidia/cuda_nvrtc")


def _pip_nvidia_dirs(kind: str) -> list[str]:
    roots = [*site.getsitepackages(), site.getusersitepackages(), *sys.path]
    return [os.path.join(root, sub, kind) for root in roots for sub in _PIP_NVIDIA]


def _library_includes(cuda_home: str) -> list[str]:
    found = []
    for header in _LIBRARY_HEADERS:
        if os.path.isfile(os.path.join(cuda_home, "include", header)):
            continue
        for folder in _pip_nvidia_dirs("include"):
            if os.path.isfile(os.path.join(folder, header)) and folder not in found:
                found.append(folder)
    return found


def _nvrtc_link_dir(cuda_home: str, work: Path) -> Path | None:
    """FlashInfer's fp8 GEMM links -lnvrtc: where the toolkit has no libnvrtc.so, a link to
    pip's libnvrtc.so.13 (whose folder then also goes on the loader's path)."""
    if os.path.isfile(os.path.join(cuda_home, "lib64", "libnvrtc.so")):
        return None
    for folder in _pip_nvidia_dirs("lib"):
        if os.path.isfile(os.path.join(folder, "libnvrtc.so.13")):
            out = work / "libnvrtc-link"
            out.mkdir(parents=True, exist_ok=True)
            if not (out / "libnvrtc.so").exists():
                (out / "libnvrtc.so").symlink_to(os.path.join(folder, "libnvrtc.so.13"))
            return out
    return None


def _libcuda_stub(cuda_home: str, work: Path) -> Path:
    """A link-time libcuda.so for machines with neither a driver nor the toolkit's stubs/
    folder: every ``CUresult cu*`` entry point of cuda.h, returning CUDA_ERROR_NO_DEVICE.
    The clients link ``-lcuda``; without a GPU their modules are built and loaded, never
    launched, so nothing calls these."""
    out = work / "libcuda-stub"
    if (out / "libcuda.so.1").is_file():
        return out
    out.mkdir(parents=True, exist_ok=True)
    include = os.path.join(cuda_home, "include")
    header = subprocess.run(
        ["cc", "-E", "-P", "-I", include, os.path.join(include, "cuda.h")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    names = sorted(set(re.findall(r"\bCUresult\s+(cu\w+)\s*\(", header)))
    source = out / "libcuda_stub.c"
    source.write_text("".join(f"int {name}(void) {{ return 100; }}\n" for name in names))
    subprocess.run(
        [
            "cc",
            "-shared",
            "-fPIC",
            "-Wl,-soname,libcuda.so.1",
            "-o",
            str(out / "libcuda.so.1"),
            str(source),
        ],
        check=True,
    )
    (out / "libcuda.so").symlink_to("libcuda.so.1")
    return out


def _driver_loadable() -> bool:
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


def _driver_linkable(cuda_home: str) -> bool:
    """Whether ``-lcuda`` resolves: the toolkit's stub or a driver's unversioned link."""
    dirs = [os.path.join(cuda_home, "lib64", "stubs"), os.path.join(cuda_home, "lib64")]
    dirs += ["/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/nvidia/lib64"]
    dirs += os.environ.get("LIBRARY_PATH", "").split(os.pathsep)
    return any(d and os.path.isfile(os.path.join(d, "libcuda.so")) for d in dirs)


def child_env(packages: Path, work: Path) -> dict[str, str]:
    """The child's environment: clients importable, every build cache inside ``work``."""
    env = dict(os.environ)
    path = [str(SITE_DIR), str(packages), str(HERE)]
    if env.get("PYTHONPATH"):
        path.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(path)
    # Fresh caches per session: a module built against another tvm_ffi is never reused.
    env["FLASHINFER_WORKSPACE_BASE"] = str(work / "flashinfer")
    env["SGLANG_JIT_CACHE_DIR"] = str(work / "sglang")
    env["TVM_FFI_CACHE_DIR"] = str(work / "tvm_ffi")
    # FlashInfer's norm runs its CuTe DSL kernels where the DSL is installed; this suite
    # tests its CUDA JIT module.
    env["FLASHINFER_USE_CUDA_NORM"] = "1"
    cuda_home = env.setdefault("CUDA_HOME", "/usr/local/cuda")
    env["PATH"] = os.pathsep.join([os.path.join(cuda_home, "bin"), env.get("PATH", "")])
    env.setdefault("MAX_JOBS", str(max(1, min(8, os.cpu_count() or 1))))
    loadable, linkable = _driver_loadable(), _driver_linkable(cuda_home)
    if not (loadable and linkable):
        stub = str(_libcuda_stub(cuda_home, work))
        for var, wanted in (("LIBRARY_PATH", not linkable), ("LD_LIBRARY_PATH", not loadable)):
            if wanted:
                env[var] = os.pathsep.join(p for p in (env.get(var), stub) if p)
    # The clients link -lcudart from the toolkit; at load time it must be found too.
    lib64 = os.path.join(cuda_home, "lib64")
    env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (env.get("LD_LIBRARY_PATH"), lib64) if p)
    nvrtc = _nvrtc_link_dir(cuda_home, work)
    if nvrtc:
        env["LIBRARY_PATH"] = os.pathsep.join(p for p in (env.get("LIBRARY_PATH"), str(nvrtc)) if p)
        lib = str(Path(os.path.realpath(nvrtc / "libnvrtc.so")).parent)
        env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (env["LD_LIBRARY_PATH"], lib) if p)
    includes = _library_includes(cuda_home)
    if includes:
        env["CPATH"] = os.pathsep.join(p for p in (env.get("CPATH"), *includes) if p)
    return env


@dataclasses.dataclass
class CaseResult:
    name: str
    mode: str  # "build" (build and load) or "run" (build, load, call, compare)
    ok: bool
    skipped: str | None  # why the call was not made (another architecture); None if made
    error: str | None  # the first error line when not ok
    output: str  # the child's whole output

    @property
    def built(self) -> bool:
        """Whether the module was built and loaded (a run may fail after that)."""
        return any(line.startswith(BUILT_TAG) for line in self.output.splitlines())


def run_case(name: str, mode: str, env: dict[str, str], timeout: float = 1800) -> CaseResult:
    try:
        proc = subprocess.run(
            [sys.executable, str(DRIVER), mode, name],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        output = proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        output = f"{exc.stdout or ''}{exc.stderr or ''}\ntimed out after {timeout:.0f} s"
        return CaseResult(name, mode, False, None, f"timed out after {timeout:.0f} s", output)
    record = None
    for line in proc.stdout.splitlines():
        if line.startswith(RESULT_TAG):
            record = json.loads(line[len(RESULT_TAG) :])
    if record is None or proc.returncode != 0:
        return CaseResult(name, mode, False, None, first_error(output), output)
    return CaseResult(
        name,
        mode,
        bool(record["ok"]),
        record.get("skipped"),
        None if record["ok"] else first_error(output),
        output,
    )


# A compiler's or linker's error line, in gcc/clang (file:line:col: error:) or nvcc
# (file(line): error) form, or a loader's missing symbol.
_COMPILER_ERROR = re.compile(
    r"^(?P<line>\S.*?(?::\d+(?::\d+)?: (?:fatal )?error|\(\d+\): (?:catastrophic )?error)\b.*)$"
    r"|^(?P<ld>.*(?:undefined reference to|undefined symbol:|cannot find -l).*)$",
    re.MULTILINE,
)
_EXCEPTION = re.compile(r"^(?P<line>(?:[\w.]+\.)?\w*(?:Error|Exception)\b: .*)$", re.MULTILINE)


_LOCATION = re.compile(r"^(?P<file>[^:(\s]+)(?::(?P<line>\d+):\d+:|\((?P<nvline>\d+)\):)")


def source_line(error: str) -> str | None:
    """The source line a compiler error points at (a macro's use shows there), if readable."""
    match = _LOCATION.match(error)
    if not match:
        return None
    try:
        lines = Path(match.group("file")).read_text(errors="replace").splitlines()
        return lines[int(match.group("line") or match.group("nvline")) - 1].strip()
    except (OSError, IndexError):
        return None


def first_error(output: str) -> str:
    """The first compiler/linker error line in ``output``, else the last exception line."""
    match = _COMPILER_ERROR.search(output)
    if match:
        return (match.group("line") or match.group("ld")).strip()
    matches = list(_EXCEPTION.finditer(output))
    if matches:
        return matches[-1].group("line").strip()
    lines = [line for line in output.splitlines() if line.strip()]
    return lines[-1].strip() if lines else "(no output)"
