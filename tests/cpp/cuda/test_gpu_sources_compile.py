"""The sources of the GPU launcher tests compile here, without a GPU: each module's kernels
with ``nvcc --cubin`` for sm_90 and its wrappers (what load_inline builds there) with
``nvcc -x cu -c`` for sm_90, warnings as errors. A GPU run then only finds run-time problems;
a header change that breaks the GPU tests' code fails here first."""

from __future__ import annotations

import importlib
import shutil
import subprocess

import pytest

ARCH = "-arch=sm_90"
#: GPU test module -> the names of its wrapper sources (module-level strings).
MODULES = {
    "test_cubin_launcher_gpu": ["WRAPPER"],
    "test_cubin_launcher_ext_gpu": ["WRAPPER"],
    "test_apache_compat_gpu": ["WRAPPER", "BIN2C_WRAPPER"],
}


def _text(value) -> str:
    return value if isinstance(value, str) else "".join(value)


@pytest.fixture(scope="module")
def cubins(toolchain, tmp_path_factory):
    """module name -> the cubin of its KERNELS_CU, built for sm_90."""
    folder = tmp_path_factory.mktemp("gpu_kernels")
    out = {}
    for name in MODULES:
        source = folder / f"{name}.cu"
        source.write_text(_text(importlib.import_module(name).KERNELS_CU))
        cubin = folder / f"{name}.cubin"
        cmd = [str(toolchain.nvcc), "--cubin", ARCH, str(source), "-o", str(cubin)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        out[name] = cubin
    return out


@pytest.mark.slow_compile
@pytest.mark.parametrize(
    "module, wrapper", [(m, w) for m, ws in MODULES.items() for w in ws], ids="-".join
)
def test_gpu_test_wrapper_compiles_for_sm90(toolchain, cubins, module, wrapper, tmp_path):
    text = _text(getattr(importlib.import_module(module), wrapper))
    if wrapper == "BIN2C_WRAPPER":
        # Prepended by the test: bin2c's arrays of the kernels' image.
        bin2c = toolchain.cuda_home / "bin" / "bin2c"
        if not bin2c.is_file() and shutil.which("bin2c") is None:
            pytest.skip("needs bin2c")
        tool = str(bin2c) if bin2c.is_file() else "bin2c"
        arrays = [
            subprocess.run([tool, *flags, str(cubins[module])], capture_output=True, text=True,
                           check=True).stdout
            for flags in (["-c", "-n", "kernel_image"], ["-n", "kernel_words", "--type", "longlong"])
        ]  # fmt: skip
        text = "\n".join(arrays) + text
    source = tmp_path / f"{wrapper.lower()}.cu"
    source.write_text(text)
    proc = toolchain.nvcc_compile(source, tmp_path / "wrapper.o", ARCH)
    assert proc.returncode == 0, proc.stderr
