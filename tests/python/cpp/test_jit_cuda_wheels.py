"""One CUDA per process, with NVIDIA's real pip wheels: the CUDA build of torch brings
``nvidia/cu13`` with the runtime headers but without ``crt/`` (the ``nvidia-cuda-crt``
wheel). Beside a complete toolkit, that partial tree is passed over for headers and device
code alike; alone, the error names the wheel that completes it. No GPU needed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import tvm_ffi
from helpers import tools
from tvm_ffi import _cuda_toolkit

KERNEL = "__global__ void k(float* x) { x[0] = 1; }\nint cuda_answer() { return 42; }\n"
WRAPPER = textwrap.dedent(
    """
    #include <tvm/ffi/extra/cuda/cubin_launcher.h>
    TVM_FFI_EMBED_CUBIN(kernels);
    int launcher_answer() { return 7; }
    """
)
PTX = b"// image\n.version 8.0\n.target sm_90\n.address_size 64\n"


def _system_cuda() -> _cuda_toolkit.CudaInstall | None:
    """The complete toolkit of this machine (not a wheel tree), if any."""
    _cuda_toolkit._search.cache_clear()
    try:
        found = _cuda_toolkit.find_cuda(nvcc=True, cudart=True)
    except RuntimeError:
        return None
    finally:
        _cuda_toolkit._search.cache_clear()
    return None if _cuda_toolkit._is_wheel_tree(found.root) else found


SYSTEM = _system_cuda()
needs_toolkit = pytest.mark.skipif(SYSTEM is None, reason="needs a CUDA toolkit (nvcc, cudart)")


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory) -> Path:
    """NVIDIA's runtime and crt wheels, downloaded once per session."""
    where = tmp_path_factory.mktemp("wheelhouse")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d",
         str(where), "nvidia-cuda-runtime>=13,<14", "nvidia-cuda-crt>=13,<14"],
        capture_output=True, text=True,
    )  # fmt: skip
    if proc.returncode != 0:
        pytest.skip(f"pip cannot download NVIDIA's CUDA wheels: {proc.stderr.strip()[-300:]}")
    return where


def _venv_with(tmp_path: Path, wheelhouse: Path, wheels: list[str]) -> tuple[Path, Path]:
    """A virtual environment that sees this test's tvm_ffi, with ``wheels`` (names in the
    wheelhouse) installed into its site-packages; returns (python, site-packages)."""
    venv = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)],
        check=True,
    )
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import site; print(site.getsitepackages()[0])"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
    )  # fmt: skip
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--quiet",
         "--find-links", str(wheelhouse), "--target", str(site), *wheels],
        check=True,
    )  # fmt: skip
    return python, site


def _import_path() -> str:
    """tvm_ffi's directory and cuda-pathfinder's, which a venv of a venv does not see."""
    import importlib.util

    dirs = [str(Path(tvm_ffi.__file__).resolve().parents[1])]
    pathfinder = importlib.util.find_spec("cuda.pathfinder")
    if pathfinder is not None and pathfinder.origin is not None:
        dirs.append(str(Path(pathfinder.origin).resolve().parents[2]))
    return os.pathsep.join(dict.fromkeys(dirs))


def _run(python: Path, tmp_path: Path, body: str, *, path: str, hide_system: bool = False):
    """Run ``body`` in the venv with ``PATH``, no CUDA_HOME; the system toolkit hidden
    from the search too with ``hide_system``. Returns the process."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("CUDA_HOME", "CUDA_PATH", "CONDA_PREFIX", "PYTHONPATH")
    }
    env.update(
        PATH=path,
        PYTHONPATH=_import_path(),
        PYTHONNOUSERSITE="1",
        TVM_FFI_CACHE_DIR=str(tmp_path / "cache"),
        TVM_FFI_CUDA_ARCH_LIST="9.0",
    )
    prelude = "import json, sys\nfrom tvm_ffi import _cuda_toolkit\n"
    if hide_system:
        prelude += tools.HIDE_SYSTEM_CUDA
    prelude += "import tvm_ffi\nfrom tvm_ffi import cpp\n"
    return subprocess.run(
        [str(python), "-c", prelude + textwrap.dedent(body)],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip


def _host_path(extra: Path | None = None) -> str:
    """A PATH with the host compiler and no nvcc (``extra`` first)."""
    dirs = [str(extra)] if extra is not None else []
    dirs += ["/usr/bin", "/bin"]
    if not Path("/usr/bin/c++").exists():
        dirs.append(os.environ["PATH"])
    return os.pathsep.join(dirs)


def _wrapper_dir(tmp_path: Path) -> Path:
    """``nvcc`` as a wrapper script outside the toolkit, as /usr/local/bin/nvcc often is."""
    assert SYSTEM is not None and SYSTEM.nvcc is not None
    bin_dir = tmp_path / "wrapper-bin"
    bin_dir.mkdir()
    script = bin_dir / "nvcc"
    script.write_text(f'#!/bin/sh\nexec {SYSTEM.nvcc.resolve()} "$@"\n')
    script.chmod(0o755)
    return bin_dir


BOTH = f"""
wrapper = cpp.build_inline("w", cpp_sources={WRAPPER!r}, functions=["launcher_answer"],
                           embed_cubin={{"kernels": {PTX!r}}}, verbose=True)
device = cpp.build_inline("d", cuda_sources={KERNEL!r}, functions=["cuda_answer"],
                          verbose=True)
assert tvm_ffi.load_module(wrapper).launcher_answer() == 7
assert tvm_ffi.load_module(device).cuda_answer() == 42
print(json.dumps([wrapper, device]))
"""


def _ninjas(library: str) -> str:
    """Every build.ninja of a cached library's cache root (its objects entries too)."""
    root = Path(library).parent.parent
    return "".join(p.read_text() for p in root.glob("*/build.ninja"))


@needs_toolkit
@pytest.mark.parametrize("nvcc_on_path", ["wrapper script", "none"])
def test_partial_wheel_tree_beside_a_toolkit_is_passed_over(tmp_path, wheelhouse, nvcc_on_path):
    python, site = _venv_with(tmp_path, wheelhouse, ["nvidia-cuda-runtime"])
    partial = site / "nvidia" / "cu13"
    assert (partial / "include" / "cuda_runtime.h").is_file()
    assert not (partial / "include" / "crt").exists()  # the wheel as torch brings it
    extra = _wrapper_dir(tmp_path) if nvcc_on_path == "wrapper script" else None
    proc = _run(python, tmp_path, BOTH, path=_host_path(extra))
    assert proc.returncode == 0, proc.stderr
    wrapper, device = json.loads(proc.stdout.splitlines()[-1])
    toolkit = SYSTEM.nvcc.resolve().parent.parent
    used = [line for line in proc.stderr.splitlines() if line.startswith("tvm_ffi.cpp: using C")]
    assert len(used) == 2 and used[0] == used[1]  # one CUDA for the wrapper and the kernel
    if nvcc_on_path == "wrapper script":
        assert used[0] == (
            f"tvm_ffi.cpp: using CUDA {toolkit} (found through nvcc on PATH "
            f"({extra}/nvcc, which runs {toolkit}/bin/nvcc))"
        )
    else:
        assert used[0].endswith(
            f", passed over: {partial} (no include/crt/host_defines.h, no bin/nvcc (pip "
            "install nvidia-cuda-crt nvidia-cuda-nvcc nvidia-nvvm completes it; or "
            "cuda-toolkit[crt,nvcc,nvvm]))"
        )
    for library in (wrapper, device):
        assert str(site) not in _ninjas(library)
        links = Path(library).parent.parent.glob("*/inc/*")  # the include directories
        assert not [link for link in links if os.readlink(link).startswith(str(site))]
    (nvcc,) = re.findall(r"^nvcc = (\S+)$", _ninjas(device), re.MULTILINE)
    assert Path(nvcc).resolve() == toolkit / "bin" / "nvcc"


def test_partial_wheel_tree_alone_names_the_wheel_that_completes_it(tmp_path, wheelhouse):
    python, site = _venv_with(tmp_path, wheelhouse, ["nvidia-cuda-runtime"])
    body = f"""
    try:
        cpp.build_inline("w", cpp_sources={WRAPPER!r}, embed_cubin={{"kernels": {PTX!r}}})
    except RuntimeError as err:
        print(json.dumps(str(err)))
    """
    proc = _run(python, tmp_path, body, path=_host_path(), hide_system=True)
    assert proc.returncode == 0, proc.stderr
    message = json.loads(proc.stdout.splitlines()[-1])
    partial = site / "nvidia" / "cu13"
    assert message.startswith(
        "CUDA not found: this build needs the CUDA headers, and no CUDA has all the headers: "
        f"{partial} (cuda-pathfinder: pip wheel) has no include/crt/host_defines.h (pip "
        "install nvidia-cuda-crt completes it; or cuda-toolkit[crt]); or set CUDA_HOME to a "
        "CUDA toolkit. Tried: CUDA_HOME (unset), CUDA_PATH (unset), nvcc on PATH (not found), "
    )


def test_completed_wheel_tree_serves_headers_and_names_nvcc_for_device_code(tmp_path, wheelhouse):
    python, site = _venv_with(tmp_path, wheelhouse, ["nvidia-cuda-runtime", "nvidia-cuda-crt"])
    tree = site / "nvidia" / "cu13"
    body = f"""
    path = cpp.build_inline("w", cpp_sources={WRAPPER!r}, functions=["launcher_answer"],
                            embed_cubin={{"kernels": {PTX!r}}}, verbose=True)
    assert tvm_ffi.load_module(path).launcher_answer() == 7
    try:
        cpp.build_inline("d", cuda_sources={KERNEL!r})
    except RuntimeError as err:
        print(json.dumps([path, str(err)]))
    """
    proc = _run(python, tmp_path, body, path=_host_path(), hide_system=True)
    assert proc.returncode == 0, proc.stderr
    path, message = json.loads(proc.stdout.splitlines()[-1])
    assert f"tvm_ffi.cpp: using CUDA {tree} (found through cuda-pathfinder: pip wheel)" in (
        proc.stderr
    )
    root = Path(path).parent.parent
    assert {os.readlink(link) for link in root.glob("*/inc/cuda")} == {f"{tree}/include"}
    assert message.startswith(
        "this build needs nvcc, the CUDA headers, libcudart, and the CUDA of this process, "
        f"CUDA {tree} (found through cuda-pathfinder: pip wheel), has no bin/nvcc (pip "
        "install nvidia-cuda-nvcc nvidia-nvvm completes it; or cuda-toolkit[nvcc,nvvm]); or set "
        "CUDA_HOME to a CUDA toolkit that has it"
    )
