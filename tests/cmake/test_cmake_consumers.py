"""The example consumer projects (examples/cubin_launcher/{embedded_cubin,cpp_only,
dynamic_cubin}) configure and build against the package from a source checkout, from
`cmake --install` and from pip, and what they build carries what the launcher needs.
Running them needs a GPU: see test_consumers_gpu.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "cubin_launcher"
MODES = ["source", "installed", "pip"]
EM_CUDA = 190


def _links_no_driver(elf) -> None:
    # The header finds libcuda at run time, so building needs no driver.
    assert not [n for n in elf.needed() if n.startswith("libcuda.so")], elf.needed()


@pytest.mark.slow_compile
@pytest.mark.parametrize("mode", MODES)
def test_embedded_cubin(mode, built, elf):
    build = built(EXAMPLES / "embedded_cubin", mode)
    library = elf(build / "libadd_one.so")
    library.assert_embedded("add_one_kernels", (build / "add_one.cubin").read_bytes())
    exported = library.dynamic_symbols.get("__tvm_ffi_add_one")
    assert exported is not None and exported.shndx != 0, "add_one is not exported"
    assert not library.stack_is_executable()
    _links_no_driver(library)
    # The intermediate object already has the image's symbols local.
    obj = elf(build / "add_one_embedded.o")
    assert obj.symbols["__tvm_ffi__cubin_add_one_kernels"].bind == 0


@pytest.mark.slow_compile
@pytest.mark.parametrize("mode", MODES)
def test_cpp_only(mode, built, elf):
    build = built(EXAMPLES / "cpp_only", mode)
    program = elf(build / "cpp_only")
    program.assert_embedded("add_one_kernels", (build / "add_one.cubin").read_bytes())
    assert any(n.startswith("libcudart.so") for n in program.needed()), program.needed()
    assert not [n for n in program.needed() if "python" in n.lower()], program.needed()
    assert not program.stack_is_executable()
    _links_no_driver(program)


@pytest.mark.slow_compile
@pytest.mark.parametrize("mode", MODES)
def test_dynamic_cubin(mode, built, elf, test_arch):
    build = built(EXAMPLES / "dynamic_cubin", mode)
    image = elf(build / "scale_add.cubin")
    assert image.machine == EM_CUDA
    program = elf(build / "dynamic_cubin")
    assert not [s for s in program.symbols if s.startswith("__tvm_ffi__cubin_")]
    _links_no_driver(program)
    # Without an argument it explains itself, GPU or not.
    proc = subprocess.run([str(build / "dynamic_cubin")], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.startswith("usage: ")


def test_dynamic_cubin_reports_a_missing_file(built, tmp_path):
    """The file is read before any GPU work, so this error shows on any machine."""
    build = built(EXAMPLES / "dynamic_cubin", "source")
    missing = tmp_path / "missing.cubin"
    proc = subprocess.run(
        [str(build / "dynamic_cubin"), str(missing)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 1
    assert proc.stderr.startswith("dynamic_cubin: ")
    assert f'"{missing}"' in proc.stderr


# Both embedding routes with the other common generator (projects/embed_probe checks the
# outputs of both generators in detail).
@pytest.mark.slow_compile
@pytest.mark.parametrize("example", ["embedded_cubin", "cpp_only"])
def test_examples_build_with_makefiles(example, built):
    built(EXAMPLES / example, "source", generator="Unix Makefiles")


def test_fatbin_through_an_example(built, elf):
    """A list of architectures makes the example embed a fatbin instead."""
    build = built(EXAMPLES / "cpp_only", "source", arch="sm_80;sm_90")
    image = (build / "add_one.cubin").read_bytes()
    assert image[:4] == bytes.fromhex("50ed55ba")
    elf(build / "cpp_only").assert_embedded("add_one_kernels", image)


def test_examples_have_readmes():
    for example in ("embedded_cubin", "cpp_only", "dynamic_cubin"):
        readme = (EXAMPLES / example / "README.md").read_text()
        assert "cmake -S . -B build" in readme and "cmake --build build" in readme, example


def test_embedded_cubin_python_script_is_valid():
    """run.py needs a GPU to run; here it must at least compile."""
    source = (EXAMPLES / "embedded_cubin" / "run.py").read_text()
    compile(source, "run.py", "exec")
    assert "tvm_ffi.load_module" in source
