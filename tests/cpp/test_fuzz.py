"""The fuzz targets of the C++ readers (tests/cpp/fuzz/): the CUDA image reader
(fuzz_image.cc: cubin_image.h and param_info.h) and the ELF reader (fuzz_elf.cc: elf64.h),
built under AddressSanitizer and
UndefinedBehaviorSanitizer and run briefly over a seed corpus of real images from nvcc and a
small library. Any sanitizer report, crash or broken promise fails the test.

Each target runs with the standalone driver (standalone_main.cc, any C++ compiler), and with
clang's libFuzzer, coverage-guided, where clang has it (Debian: ``apt-get install clang``; CI's
``.ci/run`` installs it). ``TVM_FFI_FUZZ_SECONDS`` sets each run's length (default 4);
``TVM_FFI_FUZZ_SEED`` replays a run's mutations (the standalone driver's, libFuzzer's).
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import tools

REPO = Path(__file__).resolve().parents[2]
FUZZ = REPO / "tests" / "cpp" / "fuzz"
TARGETS = {
    "image": [FUZZ / "fuzz_image.cc"],
    "elf": [FUZZ / "fuzz_elf.cc"],
}
FLAGS = ["-std=c++17", "-O1", "-g", "-Wall", "-Wextra", "-Werror", "-fno-omit-frame-pointer"]
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
# handle_abort: a broken promise (std::abort in a target) is reported like an overread.
SANITIZER_ENV = {
    "ASAN_OPTIONS": "detect_leaks=0:halt_on_error=1:handle_abort=1",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
}
SECONDS = float(os.environ.get("TVM_FFI_FUZZ_SECONDS", "4"))
SEED = int(os.environ.get("TVM_FFI_FUZZ_SEED") or random.randrange(1, 2**31))
# A library that exports TVM-FFI functions and an embedded-image symbol, as the .dynsym walk
# reads them.
LIBRARY = r"""
extern "C" int __tvm_ffi_add_one(void*, const void*, int, void*) { return 0; }
extern "C" int __tvm_ffi_mul_two(void*, const void*, int, void*) { return 0; }
extern "C" const char __tvm_ffi__cubin_blob[] = "image";
"""
KERNEL = r"""
extern "C" __global__ void add_one(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + 1.0f;
}
"""

pytestmark = pytest.mark.slow_compile


def cxx() -> str:
    compiler = os.environ.get("CXX", "c++")
    if shutil.which(compiler) is None:
        pytest.skip(f"needs a C++ compiler ({compiler} not found)")
    return compiler


@pytest.fixture(scope="module")
def seeds(tmp_path_factory) -> Path:
    """Real inputs: nvcc's cubins (sm_80, sm_90a), PTX and uncompressed and compressed
    fatbins of one kernel, and a stripped library with TVM-FFI exports."""
    root = tmp_path_factory.mktemp("fuzz")
    corpus = root / "seeds"
    corpus.mkdir()
    library = root / "library.cc"
    library.write_text(LIBRARY)
    subprocess.run(
        [cxx(), "-shared", "-fPIC", "-O1", "-s", str(library), "-o", str(corpus / "lib.so")],
        check=True,
    )
    if not tools.has_nvcc():
        return corpus
    from tvm_ffi.cpp._toolchain import find_cuda_tool

    nvcc = str(find_cuda_tool("nvcc"))
    (root / "kernel.cu").write_text(KERNEL)
    # -keep leaves each architecture's cubin and PTX beside the fatbin, from one compile.
    plain = ["-gencode=arch=compute_80,code=[sm_80,compute_80]"]
    plain += ["-gencode=arch=compute_90a,code=sm_90a", "-Xfatbin=-compress=false"]
    compressed = ["-gencode=arch=compute_90,code=[sm_90,compute_90]", "-Xfatbin=-compress-all"]
    for name, options in (("plain", [*plain, "-keep"]), ("compressed", compressed)):
        out = corpus / f"{name}.fatbin"
        subprocess.run(
            [nvcc, "-fatbin", *options, "kernel.cu", "-o", str(out)], cwd=root, check=True
        )
    for kept in sorted(root.glob("kernel.*")):
        if kept.suffix in (".cubin", ".ptx"):
            shutil.copy(kept, corpus / kept.name)
    kinds = {path.suffix for path in corpus.iterdir()}
    assert kinds == {".so", ".fatbin", ".cubin", ".ptx"}, sorted(corpus.iterdir())
    return corpus


def libfuzzer_compiler(tmp_path: Path) -> str:
    """A clang++ that links -fsanitize=fuzzer, or a skip naming what to install."""
    for name in (os.environ.get("TVM_FFI_FUZZ_CLANG"), "clang++", "clang++-14", "clang++-19"):
        if not name or shutil.which(name) is None:
            continue
        probe = tmp_path / "probe.cc"
        probe.write_text(
            "#include <cstddef>\n#include <cstdint>\n"
            'extern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n'
        )
        cmd = [name, "-fsanitize=fuzzer", str(probe), "-o", str(tmp_path / "probe")]
        if subprocess.run(cmd, capture_output=True).returncode == 0:
            return name
    pytest.skip("needs clang with libFuzzer (Debian: apt-get install clang)")


def build(target: str, engine: str, out: Path) -> Path:
    sources = [str(s) for s in TARGETS[target]]
    if engine == "libfuzzer":
        cmd = [libfuzzer_compiler(out.parent), *FLAGS, *SANITIZE, "-fsanitize=fuzzer"]
    else:
        cmd = [cxx(), *FLAGS, *SANITIZE]
        sources.append(str(FUZZ / "standalone_main.cc"))
    cmd += [f"-I{REPO / 'include'}"]
    cmd += [*sources, "-o", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    # Our own code failing to build is a failure, never a skip.
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr}"
    return out


@pytest.mark.parametrize("engine", ["standalone", "libfuzzer"])
@pytest.mark.parametrize("target", sorted(TARGETS))
def test_fuzz_target(target, engine, seeds, tmp_path):
    if target == "image" and not any(seeds.glob("*.cubin")):
        pytest.skip("needs nvcc for a seed corpus of real images")
    exe = build(target, engine, tmp_path / f"fuzz_{target}")
    # libFuzzer adds the inputs that reach new code to its first corpus directory.
    found = tmp_path / "found"
    found.mkdir()
    cmd = [str(exe), f"-max_total_time={SECONDS:g}", f"-seed={SEED}"]
    cmd += [f"-artifact_prefix={tmp_path}/", str(found), str(seeds)]
    if engine == "standalone":
        cmd.insert(1, "-runs=100000000")
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **SANITIZER_ENV})
    crashes = sorted(p.name for p in tmp_path.glob("crash-*"))
    report = f"{' '.join(cmd)}\nseed {SEED}, saved inputs {crashes}\n{proc.stderr[-6000:]}"
    assert proc.returncode == 0 and not crashes, report
    assert "Sanitizer" not in proc.stderr and "runtime error" not in proc.stderr, report
