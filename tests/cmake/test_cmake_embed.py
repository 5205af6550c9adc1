"""tvm_ffi_generate_cubin, tvm_ffi_embed_cubin and tvm_ffi_target_embed_cubin, checked on
the files they produce (projects/embed_probe): image formats, symbols, sections, bytes,
and rebuilds when an input changes. No GPU: the images are compared, not launched."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

PROBE = Path(__file__).resolve().parent / "projects" / "embed_probe"
EM_CUDA = 190
FATBIN_MAGIC = bytes.fromhex("50ed55ba")  # 0xBA55ED50, little-endian


@pytest.fixture(scope="module", params=["Ninja", "Unix Makefiles"])
def probe(request, built, cuda_cmake):
    generator = request.param
    if generator == "Ninja" and shutil.which("ninja") is None:
        pytest.skip("ninja is not on PATH")
    return built(PROBE, "source", generator=generator)


def _arch_of(elf) -> int:
    # CUDA ELF keeps the SM number in e_flags: bits 8-15 in current toolkits, 0-7 before.
    return (elf.flags >> 8) & 0xFF if elf.flags & 0xFF00 else elf.flags & 0xFF


def test_single_arch_gives_a_cubin(probe, elf, test_arch):
    cubin = elf(probe / "probe.cubin")
    assert cubin.machine == EM_CUDA
    assert _arch_of(cubin) == int(test_arch.removeprefix("sm_"))


def test_arch_list_gives_a_fatbin(probe):
    data = (probe / "fat" / "probe.fatbin").read_bytes()
    assert data[:4] == FATBIN_MAGIC
    # The PTX of compute_90 is in there too (fatbins may compress it; ours is small).
    assert b"probe_scale" in data


def test_embed_cubin_object(probe, elf):
    obj = elf(probe / "probe_embedded.o")
    image = (probe / "probe.cubin").read_bytes()
    obj.assert_embedded("probe", image)
    assert obj.symbols["__tvm_ffi__cubin_probe"].bind == 0  # localized in the object itself
    assert obj.sections[obj.symbols["__tvm_ffi__cubin_probe"].shndx].name == (
        ".rodata.tvm_ffi_cubin.probe"
    )
    assert ".note.GNU-stack" in [s.name for s in obj.sections]
    # The compiled code is in the same object and refers to the image.
    assert obj.symbols["probe_image"].shndx != 0


@pytest.mark.parametrize(
    ("binary", "image"),
    [
        ("libprobe_file.so", "probe.cubin"),
        ("libprobe_target.so", "fat/probe.fatbin"),
        ("probe_exe", "probe.cubin"),
    ],
)
def test_linked_files(probe, elf, binary, image):
    linked = elf(probe / binary)
    linked.assert_embedded("probe", (probe / image).read_bytes())
    assert not linked.stack_is_executable()
    assert not [n for n in linked.needed() if n.startswith("libcuda.so")]


def test_embedded_images_load_side_by_side(probe):
    """Two libraries embedding the same NAME, loaded into one process with RTLD_GLOBAL,
    each still see their own image (the symbols never interpose)."""
    script = textwrap.dedent(
        f"""
        import ctypes, os
        libs = [ctypes.CDLL(os.path.join({str(probe)!r}, name), mode=ctypes.RTLD_GLOBAL)
                for name in ("libprobe_file.so", "libprobe_target.so")]
        for lib in libs:
            lib.probe_image.restype = ctypes.c_void_p
            lib.probe_image_size.restype = ctypes.c_size_t
            print(ctypes.string_at(lib.probe_image(), lib.probe_image_size()).hex())
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    file_image, target_image = (bytes.fromhex(line) for line in proc.stdout.split())
    assert file_image == (probe / "probe.cubin").read_bytes()
    assert target_image == (probe / "fat" / "probe.fatbin").read_bytes()


def test_executable_sees_its_image(probe):
    proc = subprocess.run([str(probe / "probe_exe")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout) == (probe / "probe.cubin").stat().st_size


def test_ctypes_reads_the_embedded_bytes(probe):
    lib = ctypes.CDLL(str(probe / "libprobe_file.so"))
    lib.probe_image.restype = ctypes.c_void_p
    lib.probe_image_size.restype = ctypes.c_size_t
    size = lib.probe_image_size()
    assert ctypes.string_at(lib.probe_image(), size + 1) == (
        (probe / "probe.cubin").read_bytes() + b"\0"
    )


@pytest.mark.slow_compile
@pytest.mark.parametrize("generator", ["Ninja", "Unix Makefiles"])
def test_changed_inputs_are_rebuilt(cuda_cmake, package_args, elf, tmp_path, generator):
    """Editing a header the kernel includes regenerates the images (nvcc's depfile) and
    re-embeds them in both routes; touching a DEPENDS file regenerates the CUBIN."""
    if generator == "Ninja" and shutil.which("ninja") is None:
        pytest.skip("ninja is not on PATH")
    source = tmp_path / "src"
    shutil.copytree(PROBE, source)
    build = tmp_path / "build"
    cuda_cmake.configure(source, build, *package_args("source"), generator=generator)
    cuda_cmake.build(build)
    before = (build / "probe.cubin").read_bytes()

    time.sleep(1.1)  # coarse file-system timestamps
    header = source / "probe.cuh"
    header.write_text(header.read_text().replace("2.0f", "3.0f"))
    cuda_cmake.build(build)
    after = (build / "probe.cubin").read_bytes()
    assert after != before
    elf(build / "libprobe_file.so").assert_embedded("probe", after)
    elf(build / "probe_exe").assert_embedded("probe", after)
    elf(build / "libprobe_target.so").assert_embedded(
        "probe", (build / "fat" / "probe.fatbin").read_bytes()
    )

    stamp = (build / "probe.cubin").stat().st_mtime_ns
    time.sleep(1.1)
    os.utime(source / "extra_dependency.txt")
    cuda_cmake.build(build)
    assert (build / "probe.cubin").stat().st_mtime_ns > stamp

    # Nothing changed: nothing runs again.
    stamp = (build / "probe.cubin").stat().st_mtime_ns
    cuda_cmake.build(build)
    assert (build / "probe.cubin").stat().st_mtime_ns == stamp


def test_link_time_optimization(cuda_cmake, package_args, elf, tmp_path):
    """A consumer that builds with LTO still gets machine code to merge (the file route
    compiles its object without LTO) and a working image in the target route."""
    build = tmp_path / "build"
    cuda_cmake.configure(
        PROBE,
        build,
        *package_args("source"),
        "-DCMAKE_CXX_FLAGS=-flto",
        "-DCMAKE_INTERPROCEDURAL_OPTIMIZATION=ON",
    )
    cuda_cmake.build(build)
    image = (build / "probe.cubin").read_bytes()
    elf(build / "libprobe_file.so").assert_embedded("probe", image)
    elf(build / "probe_exe").assert_embedded("probe", image)
