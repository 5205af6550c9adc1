"""The build-time image check of the CMake embedding functions (tvm_ffi_check_image.cmake,
which runs ``python -m tvm_ffi.utils.check_image``): a truncated or corrupt CUBIN or fatbin
stops the build with the image reader's message naming the file; bytes of no known format are
embedded with a warning naming the file. First the tool on good, truncated and crafted images,
then each embedding route in a real build (projects/image_check), with a Python that imports
tvm_ffi and without one.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PROJECT = Path(__file__).resolve().parent / "projects" / "image_check"
KERNEL = 'extern "C" __global__ void scale(float* x, float a) { x[threadIdx.x] *= a; }\n'
ROUTES = {
    "file_route": "tvm_ffi_embed_cubin",
    "target_route": "tvm_ffi_target_embed_cubin",
    "bin_into": "tvm_ffi_embed_bin_into",
}


def _warning(fn: str, path: Path, reason: str) -> str:
    return f'{fn}: {path} ("img") is embedded as it is: {reason}; loading it will fail'


def _refusal(fn: str, path: Path, reason: str) -> str:
    return f'{fn}: cannot embed {path} ("img"): {reason}'


@pytest.fixture(scope="module")
def images(cuda_cmake, tmp_path_factory) -> dict[str, Path]:
    """Real images compiled by nvcc, and the damaged or foreign files made from them."""
    root = tmp_path_factory.mktemp("images")
    (root / "k.cu").write_text(KERNEL)
    nvcc = cuda_cmake.nvcc
    for args, out in (
        (["--cubin", "-arch=sm_90"], "k.cubin"),
        (
            [
                "--fatbin",
                "-gencode",
                "arch=compute_80,code=sm_80",
                "-gencode",
                "arch=compute_90,code=compute_90",
            ],
            "k.fatbin",
        ),
        (["--ptx", "-arch=sm_90"], "k.ptx"),
    ):
        subprocess.run([nvcc, *args, str(root / "k.cu"), "-o", str(root / out)], check=True)
    cubin = (root / "k.cubin").read_bytes()
    fatbin = (root / "k.fatbin").read_bytes()
    made = {
        "cubin": cubin,
        "fatbin": fatbin,
        "ptx": (root / "k.ptx").read_bytes(),
        "ptx-nul": (root / "k.ptx").read_bytes() + b"\0",
        "cubin-1000": cubin[:1000],
        "cubin-40": cubin[:40],
        "fatbin-100": fatbin[:100],
        "fatbin-10": fatbin[:10],
        "empty": b"",
        "text": b"hello, world\n",
        "cuda-source": b"// a kernel, not its PTX\n" + KERNEL.encode(),
    }
    elf32 = bytearray(cubin)
    elf32[4] = 1
    made["elf32"] = bytes(elf32)
    host = bytearray(cubin)
    struct.pack_into("<H", host, 18, 62)  # EM_X86_64
    made["host-elf"] = bytes(host)
    # A section with file contents whose offset lies far past the end, and one that
    # occupies no file bytes (SHT_NOBITS) with the same offset, which is harmless.
    (shoff,) = struct.unpack_from("<Q", cubin, 40)
    progbits = _first_progbits(cubin)
    far = bytearray(cubin)
    struct.pack_into("<Q", far, shoff + 64 * progbits + 24, 0xFFFFFFFFFFFFFF00)
    made["cubin-far-section"] = bytes(far)
    nobits = bytearray(cubin)
    struct.pack_into("<I", nobits, shoff + 64 * progbits + 4, 8)
    struct.pack_into("<Q", nobits, shoff + 64 * progbits + 24, 0xFFFFFFFFFFFFFF00)
    made["cubin-nobits-far"] = bytes(nobits)
    (header,) = struct.unpack_from("<H", fatbin, 6)
    entry = bytearray(fatbin)
    struct.pack_into("<Q", entry, header + 8, 10**9)  # the first entry's payload size
    made["fatbin-long-entry"] = bytes(entry)
    paths = {}
    for name, data in made.items():
        paths[name] = root / f"{name}.img"
        paths[name].write_bytes(data)
    return paths


def _first_progbits(cubin: bytes) -> int:
    """Index of the first section with contents in the file (SHT_PROGBITS)."""
    (shoff,) = struct.unpack_from("<Q", cubin, 40)
    (shnum,) = struct.unpack_from("<H", cubin, 60)
    types = [struct.unpack_from("<I", cubin, shoff + 64 * i + 4)[0] for i in range(shnum)]
    return types.index(1)


def _check(path: str) -> tuple[int, str]:
    """The check's exit status and message, as the build runs it."""
    proc = subprocess.run(
        [sys.executable, "-m", "tvm_ffi.utils.check_image", "--function=fn", "--name=img", path],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return proc.returncode, re.sub(r"^(error|warning): ", "", proc.stderr.rstrip("\n"))


@pytest.mark.parametrize("name", ["cubin", "fatbin", "ptx", "ptx-nul", "cubin-nobits-far"])
def test_good_images_pass_silently(name, images):
    assert _check(str(images[name])) == (0, "")


REFUSED = {
    "cubin-1000": lambda d: (
        "truncated or corrupt CUBIN image: the section table ends at "
        f"byte {_table_end(d)} but the image has 1000 bytes"
    ),
    "cubin-40": lambda d: "truncated CUBIN image: 40 bytes, smaller than an ELF header (64 bytes)",
    "elf32": lambda d: "not a 64-bit ELF image (CUBINs are ELF64)",
    "host-elf": lambda d: "ELF image is not a CUBIN (e_machine 62, expected 190 for NVIDIA CUDA)",
    "cubin-far-section": lambda d: (
        f"truncated or corrupt CUBIN image: section {_first_progbits(d)} ends at "
        f"byte {0xFFFFFFFFFFFFFF00 + _section_size(d, _first_progbits(d))} but the image has "
        f"{len(d)} bytes"
    ),
    "fatbin-100": lambda d: (
        "truncated fatbin image: its header declares "
        f"{_fatbin_declared(d)} bytes but the image has 100 bytes"
    ),
    "fatbin-10": lambda d: (
        "truncated fatbin image: 10 bytes, smaller than a fatbin header (16 bytes)"
    ),
    "fatbin-long-entry": lambda d: (
        "corrupt fatbin image: the entry at byte "
        f"{struct.unpack_from('<H', d, 6)[0]} runs past the end of the fatbin"
    ),
    "empty": lambda d: "empty image (0 bytes)",
}


def _table_end(truncated: bytes) -> int:
    (shoff,) = struct.unpack_from("<Q", truncated, 40)
    (shnum,) = struct.unpack_from("<H", truncated, 60)
    return shoff + 64 * shnum


def _section_size(cubin: bytes, i: int) -> int:
    (shoff,) = struct.unpack_from("<Q", cubin, 40)
    return struct.unpack_from("<Q", cubin, shoff + 64 * i + 32)[0]


def _fatbin_declared(truncated: bytes) -> int:
    header, body = struct.unpack_from("<HQ", truncated, 6)
    return header + body


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_damaged_images_are_refused(name, images):
    path = images[name]
    expected = REFUSED[name](path.read_bytes())
    assert _check(str(path)) == (1, _refusal("fn", path, expected))


FOREIGN = {
    "text": "not a CUBIN, PTX or fatbin image (first bytes: 68 65 6c 6c)",
    "cuda-source": (
        "not a PTX image: no .version directive at its start (only whitespace and comments "
        "may precede it); CUDA source must be compiled to PTX first"
    ),
}


@pytest.mark.parametrize("name", sorted(FOREIGN))
def test_foreign_bytes_are_embedded_with_a_warning(name, images):
    path = images[name]
    assert _check(str(path)) == (0, _warning("fn", path, FOREIGN[name]))


def test_missing_and_several_files(images, tmp_path):
    missing = tmp_path / "missing.cubin"
    assert _check(str(missing)) == (
        1,
        f'fn: the image for "img", {missing}, does not exist',
    )
    # What $<TARGET_OBJECTS:...> of an object library with two sources gives.
    two = f"{images['cubin']};{images['fatbin']}"
    assert _check(two) == (
        1,
        f'fn: the image for "img" must be one file, got 2: "{two}"',
    )


# ---- each route in a real build ---------------------------------------------------------


def _configure(cuda_cmake, package_args, tmp_path: Path, image: Path, *args: str) -> Path:
    """Configured with this test's Python as the checker, unless ``args`` say otherwise."""
    build = tmp_path / "build"
    python = args or (f"-DTVM_FFI_PYTHON_EXECUTABLE={sys.executable}",)
    cuda_cmake.configure(PROJECT, build, *package_args("source"), f"-DIMAGE={image}", *python)
    return build


def test_foreign_bytes_warn_in_every_route(images, cuda_cmake, package_args, elf, tmp_path):
    image = images["text"]
    build = _configure(cuda_cmake, package_args, tmp_path, image)
    result = cuda_cmake.build(build)
    output = " ".join((result.stdout + result.stderr).split())
    for target, fn in ROUTES.items():
        assert _warning(fn, image, FOREIGN["text"]) in output, target
        elf(build / f"lib{target}.so").assert_embedded("img", image.read_bytes())


@pytest.mark.parametrize("target", sorted(ROUTES))
def test_damaged_image_stops_the_build(target, images, cuda_cmake, package_args, elf, tmp_path):
    image = tmp_path / "kernel.cubin"
    shutil.copy(images["cubin-1000"], image)
    build = _configure(cuda_cmake, package_args, tmp_path, image)
    result = cuda_cmake.build(build, "--target", target, check=False)
    assert result.returncode != 0, result.describe()
    output = " ".join((result.stdout + result.stderr).split())
    reason = REFUSED["cubin-1000"](image.read_bytes())
    assert _refusal(ROUTES[target], image, reason) in output
    # Nothing half-made is left behind: the next build checks again.
    assert not (build / f"lib{target}.so").exists()
    assert not (build / "file_route.o").exists()
    assert not (build / "tvm_ffi_embed" / target / "img.image").exists()
    shutil.copy(images["cubin"], image)
    cuda_cmake.build(build, "--target", target)
    elf(build / f"lib{target}.so").assert_embedded("img", image.read_bytes())


def test_without_python_images_are_embedded_unchecked(
    images, cuda_cmake, package_args, elf, tmp_path
):
    """No Python that imports tvm_ffi: one message at configure time, and the damaged image
    is embedded as it is (CubinModule refuses it when it loads it)."""
    image = images["cubin-1000"]
    build = tmp_path / "build"
    result = cuda_cmake.configure(
        PROJECT, build, *package_args("source"), f"-DIMAGE={image}",
        f"-DTVM_FFI_PYTHON_EXECUTABLE={tmp_path / 'no-python'}",
    )  # fmt: skip
    output = " ".join(result.stdout.split())
    message = (
        "tvm_ffi: embedded images are not checked at build time (no Python that imports "
        "tvm_ffi: set TVM_FFI_PYTHON_EXECUTABLE); CubinModule checks each one when it loads it"
    )
    assert output.count(message) == 1, result.describe()
    cuda_cmake.build(build)
    for target in ROUTES:
        elf(build / f"lib{target}.so").assert_embedded("img", image.read_bytes())
