"""The example consumer projects, built for this machine's GPU and run: the C++-only
program, the program that loads its image from a file, and the Python script that
calls the library with the embedded image; then the projects written for
apache-tvm-ffi's CMake (projects/apache_style, projects/option1). Each checks its own
results and says OK."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "cubin_launcher"
PROJECTS = Path(__file__).resolve().parent / "projects"
# The GPU this runs on is the one to build for (nvcc -arch=native).
ARCH = "native"


def _gpu_arch() -> str:
    """sm_XX of GPU 0, for projects that hand the architecture to CMake's CUDA language
    (whose "native" needs CMake 3.24); "native" when nvidia-smi cannot say."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader", "-i", "0"],
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout.strip()
    except OSError:
        return ARCH
    return "sm_" + out.replace(".", "") if out.replace(".", "").isdigit() else ARCH


def _run_c_function(library: Path, function: str, runtime_first: bool = False) -> None:
    """Calls ``int function()`` of ``library`` in a fresh process (its own CUDA runtime,
    apart from this process's) and expects 0. ``runtime_first``: the tvm-ffi runtime is loaded
    into the global scope first, as tvm_ffi (and apache-tvm-ffi) load it before a library that
    does not link it itself."""
    script = "import ctypes, sys; "
    if runtime_first:
        import tvm_ffi.libinfo

        runtime = tvm_ffi.libinfo.find_libtvm_ffi()
        script += f"ctypes.CDLL({runtime!r}, mode=ctypes.RTLD_GLOBAL); "
    script += f"lib = ctypes.CDLL({str(library)!r}); sys.exit(lib.{function}())"
    _run([sys.executable, "-c", script])


def _run(cmd: list[str], **kwargs) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kwargs)
    assert proc.returncode == 0, (
        f"{' '.join(cmd)} exited with {proc.returncode}\n"
        f"--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}"
    )
    return proc.stdout


@pytest.mark.parametrize("mode", ["source", "installed"])
def test_cpp_only_runs(mode, built):
    build = built(EXAMPLES / "cpp_only", mode, arch=ARCH)
    assert _run([str(build / "cpp_only")]) == "cpp_only: OK (1048576 elements)\n"


def test_cpp_only_runs_a_fatbin(built):
    build = built(EXAMPLES / "cpp_only", "source", arch="sm_80;sm_90")
    assert _run([str(build / "cpp_only")]) == "cpp_only: OK (1048576 elements)\n"


def test_dynamic_cubin_runs(built):
    build = built(EXAMPLES / "dynamic_cubin", "source", arch=ARCH)
    out = _run([str(build / "dynamic_cubin"), str(build / "scale_add.cubin")])
    assert out == "dynamic_cubin: OK (1000003 elements)\n"


def test_embedded_cubin_python_script_runs(built):
    import torch

    if not torch.cuda.is_available():
        pytest.skip("torch was built without CUDA")
    import tvm_ffi

    build = built(EXAMPLES / "embedded_cubin", "source", arch=ARCH)
    env = dict(os.environ)
    # The script imports the same tvm_ffi as this test (installed or from a checkout).
    package_root = str(Path(tvm_ffi.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    script = EXAMPLES / "embedded_cubin" / "run.py"
    out = _run([sys.executable, str(script), str(build / "libadd_one.so")], env=env)
    assert out == "embedded_cubin: OK (1000003 elements)\n"


def test_apache_style_program_runs(built):
    """A CUBIN from add_tvm_ffi_cubin and a fatbin from a file, both via
    tvm_ffi_embed_bin_into, launched from one program."""
    build = built(PROJECTS / "apache_style", "source", arch=_gpu_arch())
    assert _run([str(build / "apache_exe")]) == "apache_exe: OK\n"


def test_apache_style_library_runs(built):
    """A fatbin from add_tvm_ffi_fatbin embedded from $<TARGET_OBJECTS:...>."""
    build = built(PROJECTS / "apache_style", "source", arch=_gpu_arch())
    _run_c_function(build / "liblib_embedded.so", "lib_embedded_run")


def test_option1_library_runs(built):
    """The Option 1 block as written (it compiles for ARCH native). It links tvm_ffi_header
    alone, as apache-tvm-ffi's docs write it: the library finds the runtime in the process."""
    build = built(PROJECTS / "option1", "source")
    _run_c_function(build / "libmylib.so", "mylib_run", runtime_first=True)
