"""The user's CUBIN launcher guide works when pasted as written.

The guide is a document users already have (seed 000); it lives outside this repository
and is never copied into it. This module reads it at test time from, in order:
``$TVM_FFI_SEED_GUIDE``, ``<repo>/../shared/seeds/000_*.txt``, ``<repo>/.seeds/000_*.txt``
(git-ignored; the GPU runner copies it there), and skips when none exists: a missing
document is not our code failing.

What each test does with the guide's blocks (found by their section headings):

* Python blocks run VERBATIM, each in a fresh interpreter in a temp dir.
  "Loading Pre-Compiled CUBIN" is a fragment: it needs ``kernel.cubin`` (we build one with
  nvcc) and a ``cpp_wrapper`` (we prepend the guide's own C++ wrapper that declares
  ``my_kernels``, the embed name the fragment uses; the NVRTC example's wrapper declares
  ``my_cubin`` instead, and a separate test checks that this mismatch fails with an error
  that names it).
* The shell steps (nvcc --cubin, ld -r -b binary, objcopy, g++ -shared) run as written on
  the guide's C++ wrapper, with our include path and the CUDA include path added to g++;
  the resulting library is loaded with ``tvm_ffi.load_module`` and called with torch
  tensors. For the run we build for the GPU's arch, because the guide's ``sm_75`` CUBIN
  cannot run on Hopper; the exact ``sm_75`` commands are also run, and launching that
  library must fail with a message that names both archs.
* The C++ fragments ("Loading CUBIN at Runtime", "Multi-GPU Support", "Dynamic Shared
  Memory") are compiled into one JIT module, with their ``{...}``/``(...)`` placeholders
  filled, ``LaunchOnDevice`` defined and the dynamic shared memory statements put in a
  function (all spelled out below), and then called.
* The CMake block is exercised by the CMake consumer tests (tests/cmake).
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from helpers import gpu

pytestmark = pytest.mark.gpu

REPO = Path(__file__).resolve().parents[2]

# Kernels the guide's C++ refers to but does not show; all take (float*, ..., long long n).
KERNEL_CU = r"""
extern "C" __global__ void add_one(const float* x, float* y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + 1.0f;
}
extern "C" __global__ void my_kernel(const float* x, float* y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + 1.0f;
}
extern "C" __global__ void process(float* x, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) x[i] = 2.0f * x[i] + 1.0f;
}
// Reverses each block of 256 floats through 1 KiB of dynamic shared memory.
extern "C" __global__ void reverse_blocks(const float* x, float* y, long long n) {
  extern __shared__ float tile[];
  long long base = blockIdx.x * (long long)blockDim.x;
  tile[threadIdx.x] = x[base + threadIdx.x];
  __syncthreads();
  y[base + threadIdx.x] = tile[blockDim.x - 1 - threadIdx.x];
}
"""

# Every fenced block of the guide, by (section heading, language), and who tests it.
EXPECTED_BLOCKS = {
    ("Example: NVRTC Compilation", "python"): "test_python_nvrtc_example",
    ("Example: Using Triton Kernels", "python"): "test_python_triton_example",
    ("Loading Pre-Compiled CUBIN", "python"): "test_python_precompiled_cubin",
    ("Embedding CUBIN at Compile Time", "cpp"): "test_shell_steps_*",
    ("Loading CUBIN at Runtime", "cpp"): "test_cpp_fragments",
    ("Step 1: Compile CUDA kernel to CUBIN", "bash"): "test_shell_steps_*",
    ("Step 2: Convert CUBIN to object file", "bash"): "test_shell_steps_*",
    ("Step 3: Rename symbols with objcopy", "bash"): "test_shell_steps_*",
    ("Step 4: Link with your library", "bash"): "test_shell_steps_*",
    ("Step 4: Link with your library", "cmake"): "tests/cmake",
    ("Multi-GPU Support", "cpp"): "test_cpp_fragments",
    ("Dynamic Shared Memory", "cpp"): "test_cpp_fragments",
}


# ---- reading the guide ----------------------------------------------------------------------


def find_guide() -> Path | None:
    explicit = os.environ.get("TVM_FFI_SEED_GUIDE")
    if explicit:
        return Path(explicit) if Path(explicit).is_file() else None
    for folder in (REPO.parent / "shared" / "seeds", REPO / ".seeds"):
        found = sorted(glob.glob(str(folder / "000_*.txt")))
        if found:
            return Path(found[0])
    return None


def parse_guide(text: str) -> dict[tuple[str, str], list[str]]:
    """{(nearest heading, fence language): [block text, ...]} in document order."""
    blocks: dict[tuple[str, str], list[str]] = {}
    heading = ""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = re.match(r"^(`{3,})\s*(\w*)", line)
        if fence:
            body = []
            i += 1
            while i < len(lines) and not lines[i].startswith(fence[1]):
                body.append(lines[i])
                i += 1
            blocks.setdefault((heading, fence[2]), []).append("\n".join(body) + "\n")
        elif re.match(r"^#{1,6} ", line):
            heading = line.lstrip("#").strip()
        i += 1
    return blocks


@pytest.fixture(scope="module")
def guide() -> dict[tuple[str, str], list[str]]:
    path = find_guide()
    if path is None:
        pytest.skip(
            "the user's guide (seed 000) is not available: set TVM_FFI_SEED_GUIDE or copy it "
            "to <repo>/.seeds/ (it is not part of this repository)"
        )
    return parse_guide(path.read_text(encoding="utf-8"))


def block(guide, heading: str, lang: str) -> str:
    found = guide.get((heading, lang))
    assert found and len(found) == 1, f"the guide has no single ```{lang} block under {heading!r}"
    return found[0]


# ---- tools and environment ------------------------------------------------------------------


@pytest.fixture(scope="module")
def cuda_home() -> Path:
    candidates = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")]
    if shutil.which("nvcc"):
        candidates.append(str(Path(shutil.which("nvcc")).resolve().parents[1]))
    candidates.append("/usr/local/cuda")
    for root in filter(None, candidates):
        if (Path(root) / "bin" / "nvcc").is_file():
            return Path(root)
    pytest.skip("nvcc not found (set CUDA_HOME)")


@pytest.fixture(scope="module")
def device_arch() -> str:
    return gpu.device_arch()


@pytest.fixture(scope="module")
def include_dir() -> str:
    out = subprocess.run(
        [sys.executable, "-m", "tvm_ffi.config", "--includedir"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return out.stdout.strip()


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("guide-cache")


def _env(cache_dir: Path, cuda_home: Path | None = None) -> dict[str, str]:
    import tvm_ffi

    env = dict(os.environ)
    package_root = str(Path(tvm_ffi.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    env["TVM_FFI_CACHE_DIR"] = str(cache_dir)
    if cuda_home is not None:
        env["PATH"] = f"{cuda_home / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def run_python(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    (cwd / "script.py").write_text(script)
    return subprocess.run(
        [sys.executable, "script.py"], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )


def _output(proc: subprocess.CompletedProcess) -> str:
    return f"--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}"


def _needs(module: str) -> None:
    import importlib.util

    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        found = False
    if not found:
        pytest.skip(f"needs {module}")


def nvcc_cubin(cuda_home: Path, cwd: Path, arch: str) -> Path:
    (cwd / "kernel.cu").write_text(KERNEL_CU)
    nvcc = str(cuda_home / "bin" / "nvcc")
    subprocess.run(
        [nvcc, "--cubin", f"-arch={arch}", "kernel.cu", "-o", "kernel.cubin"], cwd=cwd, check=True
    )
    return cwd / "kernel.cubin"


# ---- the guide's inventory ------------------------------------------------------------------


def test_every_guide_block_is_covered(guide):
    found = {key: len(texts) for key, texts in guide.items()}
    assert found == dict.fromkeys(EXPECTED_BLOCKS, 1), (
        "the guide's code blocks changed; update EXPECTED_BLOCKS and the tests"
    )


# ---- Python blocks, verbatim ----------------------------------------------------------------


def test_python_nvrtc_example(guide, tmp_path, cache_dir):
    # cuda-bindings is in the test extra: no skip when it is missing.
    proc = run_python(
        block(guide, "Example: NVRTC Compilation", "python"), tmp_path, _env(cache_dir)
    )
    assert proc.returncode == 0, _output(proc)


def test_python_triton_example(guide, tmp_path, cache_dir):
    _needs("triton")
    proc = run_python(
        block(guide, "Example: Using Triton Kernels", "python"), tmp_path, _env(cache_dir)
    )
    assert proc.returncode == 0, _output(proc)


# Appended after the fragment: it loads the module but calls nothing, so we check it works.
PRECOMPILED_CHECK = """
import torch
x = torch.randn(5000, device="cuda")
y = torch.full_like(x, float("nan"))
mod.launch_my_kernel(x, y)
torch.testing.assert_close(y, x + 1)
print("precompiled: OK")
"""


def test_python_precompiled_cubin(guide, tmp_path, cache_dir, cuda_home, device_arch):
    nvcc_cubin(cuda_home, tmp_path, device_arch)  # the guide says "-arch=sm_90" for Hopper
    # cpp_wrapper: the guide's C++ wrapper for `my_kernels`, the name this fragment embeds.
    wrapper = block(guide, "Embedding CUBIN at Compile Time", "cpp")
    script = (
        f"cpp_wrapper = {wrapper!r}\n"
        + block(guide, "Loading Pre-Compiled CUBIN", "python")
        + PRECOMPILED_CHECK
    )
    proc = run_python(script, tmp_path, _env(cache_dir))
    assert proc.returncode == 0, _output(proc)
    assert proc.stdout.strip().endswith("precompiled: OK")


def test_python_precompiled_cubin_with_nvrtc_wrapper_names_the_missing_cubin(
    guide, tmp_path, cache_dir, cuda_home, device_arch
):
    # The NVRTC example's wrapper declares TVM_FFI_EMBED_CUBIN(my_cubin), while this
    # fragment embeds "my_kernels": a user who pastes both must be told which name is missing.
    nvcc_cubin(cuda_home, tmp_path, device_arch)
    nvrtc_block = block(guide, "Example: NVRTC Compilation", "python")
    wrapper = re.search(r'cpp_wrapper = """(.*?)"""', nvrtc_block, re.S)
    assert wrapper, "the NVRTC example defines cpp_wrapper"
    script = (
        f"cpp_wrapper = {wrapper[1]!r}\n"
        + block(guide, "Loading Pre-Compiled CUBIN", "python")
        + PRECOMPILED_CHECK
    )
    proc = run_python(script, tmp_path, _env(cache_dir))
    assert proc.returncode != 0, _output(proc)
    assert "my_cubin" in proc.stderr, _output(proc)
    assert "Segmentation fault" not in proc.stderr and proc.returncode > 0, _output(proc)


# ---- the shell steps ------------------------------------------------------------------------


def run_shell_steps(guide, workdir: Path, arch: str | None, include_dir: str, cuda_home: Path):
    """Run Steps 1-4 in ``workdir`` on the guide's C++ wrapper; return the library path.

    ``arch`` replaces the guide's ``sm_75`` (None: as written). g++ gets our include path
    and the CUDA include path. Toolchain-only adjustments are tried in turn if the line as
    written fails, and reported as warnings: ``-fPIC`` (GCC built with --enable-default-pie
    refuses non-PIC code in a shared object) and the CUDA stub ``libcuda.so`` for ``-lcuda``
    (GPU containers often have only libcuda.so.1); our header needs no libcuda at link time.
    """
    (workdir / "kernel.cu").write_text(KERNEL_CU)
    (workdir / "mycode.cc").write_text(block(guide, "Embedding CUBIN at Compile Time", "cpp"))
    env = dict(os.environ)
    env["PATH"] = f"{cuda_home / 'bin'}{os.pathsep}{env.get('PATH', '')}"

    def sh(command: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["bash", "-euo", "pipefail", "-c", command],
            cwd=workdir, env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip

    step1 = block(guide, "Step 1: Compile CUDA kernel to CUBIN", "bash")
    assert "-arch=sm_75" in step1
    if arch is not None:
        step1 = step1.replace("-arch=sm_75", f"-arch={arch}")
    for step in (
        step1,
        block(guide, "Step 2: Convert CUBIN to object file", "bash"),
        block(guide, "Step 3: Rename symbols with objcopy", "bash"),
    ):
        proc = sh(step)
        assert proc.returncode == 0, f"{step}\n{_output(proc)}"

    link = block(guide, "Step 4: Link with your library", "bash").strip()
    link += f" -I{include_dir} -I{cuda_home / 'include'}"
    stubs = cuda_home / "lib64" / "stubs"
    attempts = [
        ("as written", link),
        ("with -fPIC", f"{link} -fPIC"),
        ("with -fPIC and the CUDA stubs", f"{link} -fPIC -L{stubs}"),
        ("with -fPIC, without -lcuda", f"{link.replace(' -lcuda', '')} -fPIC"),
    ]
    failures = []
    for label, command in attempts:
        proc = sh(command)
        if proc.returncode == 0:
            if label != "as written":
                warnings.warn(
                    f"guide step 4 needed adjusting on this machine ({label}): {failures}",
                    stacklevel=2,
                )
            return workdir / "mylib.so"
        errors = [
            line
            for line in proc.stderr.splitlines()
            if "error" in line.lower() and "collect2" not in line
        ]
        failures.append(f"{label}: {(errors or proc.stderr.splitlines() or ['?'])[0]}")
    pytest.fail("guide step 4 failed:\n" + "\n".join(failures))


def test_shell_steps_build_a_library_python_can_call(
    guide, tmp_path, include_dir, cuda_home, device_arch
):
    import torch

    import tvm_ffi

    lib = run_shell_steps(guide, tmp_path, device_arch, include_dir, cuda_home)
    symbols = subprocess.run(
        ["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True
    )
    assert "__tvm_ffi_launch_my_kernel" in symbols.stdout

    mod = tvm_ffi.load_module(str(lib))
    x = torch.randn(100_000, device="cuda")
    y = torch.full_like(x, float("nan"))
    mod.launch_my_kernel(x, y)
    torch.testing.assert_close(y, x + 1)
    # And on a side stream: the launch follows torch's current stream.
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        z = torch.full_like(x, float("nan"))
        mod.launch_my_kernel(y, z)
    stream.synchronize()
    torch.testing.assert_close(z, x + 2)


SM75_CHECK = """
import sys, torch, tvm_ffi
mod = tvm_ffi.load_module(sys.argv[1])
x = torch.randn(1000, device="cuda")
y = torch.empty_like(x)
try:
    mod.launch_my_kernel(x, y)
    torch.cuda.synchronize()
except RuntimeError as err:
    print("RAISED:", err)
else:
    print("NO ERROR")
"""


def test_shell_steps_exact_sm75_reports_both_archs(
    guide, tmp_path, include_dir, cuda_home, device_arch, cache_dir
):
    if device_arch == "sm_75":
        pytest.skip("the GPU is sm_75: the guide's CUBIN runs here")
    lib = run_shell_steps(guide, tmp_path, None, include_dir, cuda_home)
    assert lib.is_file()
    (tmp_path / "check.py").write_text(SM75_CHECK)
    proc = subprocess.run(
        [sys.executable, "check.py", str(lib)], cwd=tmp_path, env=_env(cache_dir),
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, _output(proc)
    assert proc.stdout.startswith("RAISED:"), _output(proc)
    message = proc.stdout
    assert "sm_75" in message and device_arch in message, message


# ---- the C++ fragments ----------------------------------------------------------------------

# Placeholders of "Loading CUBIN at Runtime" and what the test puts there: the launch
# arguments come from file-scope variables that the exported wrapper below sets.
RUNTIME_FILL = {
    "void* args[] = {...};": "void* args[] = {&g_x_ptr, &g_y_ptr, &g_n};",
    "tvm::ffi::dim3 grid(...);": "tvm::ffi::dim3 grid(static_cast<unsigned>((g_n + 255) / 256));",
    "tvm::ffi::dim3 block(...);": "tvm::ffi::dim3 block(256);",
    "CUstream stream = ...;": "CUstream stream = g_stream;",
}

PRELUDE = r"""
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/extra/cuda/cubin_launcher.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

#include <cuda_runtime.h>

// Set by LoadAndLaunch below; read by the filled-in "Loading CUBIN at Runtime" fragment.
static void* g_x_ptr = nullptr;
static void* g_y_ptr = nullptr;
static long long g_n = 0;
static CUstream g_stream = nullptr;

static CUstream StreamOf(const tvm::ffi::TensorView& t) {
  DLDevice device = t.device();
  return static_cast<CUstream>(TVMFFIEnvGetStream(device.device_type, device.device_id));
}

TVM_FFI_EMBED_CUBIN(my_kernels);

// The guide's multi-GPU fragment leaves LaunchOnDevice to the reader: run `process` over x
// on x's device, on the caller's stream for that device. The device is made current for the
// launch because torch's default stream is the NULL handle on every device, so the stream
// alone does not say which GPU is meant.
template <typename Kernel>
void LaunchOnDevice(Kernel& kernel, tvm::ffi::TensorView x) {
  void* ptr = x.data_ptr();
  long long n = x.numel();
  void* args[] = {&ptr, &n};
  int previous = 0;
  TVM_FFI_CHECK_CUDA_ERROR(cudaGetDevice(&previous));
  TVM_FFI_CHECK_CUDA_ERROR(cudaSetDevice(x.device().device_id));
  CUresult result = kernel.Launch(args, tvm::ffi::dim3(static_cast<unsigned>((n + 255) / 256)),
                                  tvm::ffi::dim3(256), StreamOf(x));
  TVM_FFI_CHECK_CUDA_ERROR(cudaSetDevice(previous));
  TVM_FFI_CHECK_CUDA_DRIVER_ERROR(result);
}
"""

# The "Dynamic Shared Memory" statements need a kernel, args, grid, block and stream.
DYNAMIC_SMEM_TEMPLATE = r"""
void ReverseBlocks(tvm::ffi::TensorView x, tvm::ffi::TensorView y) {
  static auto kernel = TVM_FFI_EMBED_CUBIN_GET_KERNEL(my_kernels, "reverse_blocks");
  void* x_ptr = x.data_ptr();
  void* y_ptr = y.data_ptr();
  long long n = x.numel();
  void* args[] = {&x_ptr, &y_ptr, &n};
  tvm::ffi::dim3 grid(static_cast<unsigned>(n / 256));
  tvm::ffi::dim3 block(256);
  CUstream stream = StreamOf(x);
@FRAGMENT@
  TVM_FFI_CHECK_CUDA_DRIVER_ERROR(result);
}
"""

EXPORTS = r"""
void LoadAndLaunch(tvm::ffi::Bytes cubin, tvm::ffi::TensorView x, tvm::ffi::TensorView y) {
  g_x_ptr = x.data_ptr();
  g_y_ptr = y.data_ptr();
  g_n = x.numel();
  g_stream = StreamOf(x);
  LoadAndLaunchCubin(cubin);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(load_and_launch, LoadAndLaunch);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(multi_gpu, MultiGPUExample);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(reverse_blocks, ReverseBlocks);
"""


def fill_runtime_fragment(text: str) -> str:
    for placeholder, code in RUNTIME_FILL.items():
        assert text.count(placeholder) == 1, f"placeholder {placeholder!r} not found once"
        text = text.replace(placeholder, code)
    return text


def test_cpp_fragments(guide, tmp_path, cuda_home, device_arch, monkeypatch):
    import torch

    from tvm_ffi import cpp

    monkeypatch.setenv("TVM_FFI_CACHE_DIR", str(tmp_path / "cache"))
    cubin = nvcc_cubin(cuda_home, tmp_path, device_arch).read_bytes()
    smem = block(guide, "Dynamic Shared Memory", "cpp")
    source = "\n".join([
        PRELUDE,
        fill_runtime_fragment(block(guide, "Loading CUBIN at Runtime", "cpp")),
        block(guide, "Multi-GPU Support", "cpp"),
        DYNAMIC_SMEM_TEMPLATE.replace("@FRAGMENT@", textwrap.indent(smem, "  ")),
        EXPORTS,
    ])  # fmt: skip
    mod = cpp.load_inline(
        "guide_cpp_fragments", cuda_sources=source, embed_cubin={"my_kernels": cubin}
    )

    # Loading CUBIN at Runtime: bytes in, module loaded, "my_kernel" launched.
    x = torch.randn(3000, device="cuda")
    y = torch.full_like(x, float("nan"))
    mod.load_and_launch(cubin, x, y)
    torch.cuda.synchronize()
    torch.testing.assert_close(y, x + 1)

    # Multi-GPU: the same embedded kernel on the tensors' own devices.
    second = "cuda:1" if torch.cuda.device_count() > 1 else "cuda:0"
    a = torch.randn(4096, device="cuda:0")
    b = torch.randn(5000, device=second)
    expected_a, expected_b = 2 * a + 1, 2 * b + 1
    mod.multi_gpu(a, b)
    torch.cuda.synchronize(0)
    torch.cuda.synchronize(b.device)
    torch.testing.assert_close(a, expected_a)
    torch.testing.assert_close(b, expected_b)

    # Dynamic shared memory: 1 KiB holds one block of 256 floats, reversed through it.
    x = torch.randn(256 * 40, device="cuda")
    y = torch.full_like(x, float("nan"))
    mod.reverse_blocks(x, y)
    torch.testing.assert_close(y, x.view(40, 256).flip(1).reshape(-1))
