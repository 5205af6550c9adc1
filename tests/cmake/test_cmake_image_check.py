"""The build-time image check of the CMake embedding functions (tvm_ffi_check_image.cmake):
a truncated or corrupt CUBIN or fatbin stops the build naming the file; bytes of no known
format are embedded with a warning naming the file. First the script on a corpus of good,
truncated and crafted images, then each embedding route in a real build
(projects/image_check)."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "cmake" / "tvm_ffi_check_image.cmake"
PROJECT = Path(__file__).resolve().parent / "projects" / "image_check"
KERNEL = 'extern "C" __global__ void scale(float* x, float a) { x[threadIdx.x] *= a; }\n'
ROUTES = {
    "file_route": "tvm_ffi_embed_cubin",
    "target_route": "tvm_ffi_target_embed_cubin",
    "bin_into": "tvm_ffi_embed_bin_into",
}


def _warning(fn: str, path: Path, first: str) -> str:
    return (
        f'{fn}: {path} (embedded as "img") is not a CUBIN, PTX or fatbin image (first bytes: '
        f"{first}); its bytes are embedded as they are, and the CUDA driver will refuse to "
        "load them"
    )


def _refusal(fn: str, path: Path, reason: str) -> str:
    return f'{fn}: cannot embed {path} as "img": {reason}'


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


def _check(cmake, path: str) -> tuple[int, str]:
    proc = subprocess.run(
        [
            cmake.exe,
            "-DTVM_FFI_FUNCTION=fn",
            "-DTVM_FFI_NAME=img",
            f"-DTVM_FFI_IMAGE={path}",
            "-P",
            str(SCRIPT),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    text = " ".join(proc.stderr.split())
    found = re.search(r"\(message\): (.*?)(?: Call Stack|$)", text)
    return proc.returncode, found[1] if found else text


@pytest.mark.parametrize("name", ["cubin", "fatbin", "ptx", "ptx-nul", "cubin-nobits-far"])
def test_good_images_pass_silently(name, images, cuda_cmake):
    assert _check(cuda_cmake, str(images[name])) == (0, "")


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
        f"byte 2^60 or more but the image has {len(d)} bytes"
    ),
    "fatbin-100": lambda d: (
        "truncated fatbin image: its header declares "
        f"{_fatbin_declared(d)} bytes but the image has 100 bytes"
    ),
    "fatbin-10": lambda d: "truncated fatbin image: 10 bytes",
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


def _fatbin_declared(truncated: bytes) -> int:
    header, body = struct.unpack_from("<HQ", truncated, 6)
    return header + body


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_damaged_images_are_refused(name, images, cuda_cmake):
    path = images[name]
    expected = REFUSED[name](path.read_bytes())
    assert _check(cuda_cmake, str(path)) == (1, _refusal("fn", path, expected))


@pytest.mark.parametrize(
    ("name", "first"), [("text", "68 65 6c 6c"), ("cuda-source", "2f 2f 20 61")]
)
def test_foreign_bytes_are_embedded_with_a_warning(name, first, images, cuda_cmake):
    path = images[name]
    returncode, message = _check(cuda_cmake, str(path))
    assert (returncode, message) == (0, _warning("fn", path, first))


def test_missing_and_several_files(images, cuda_cmake, tmp_path):
    missing = tmp_path / "missing.cubin"
    assert _check(cuda_cmake, str(missing)) == (
        1,
        f'fn: the image for "img", {missing}, does not exist',
    )
    # What $<TARGET_OBJECTS:...> of an object library with two sources gives.
    two = f"{images['cubin']};{images['fatbin']}"
    assert _check(cuda_cmake, two) == (
        1,
        f'fn: the image for "img" must be one file, got 2: "{two}"',
    )


def test_same_verdict_as_the_python_check(images, cuda_cmake):
    """For CUBIN and fatbin bytes the CMake check refuses exactly what the Python one does."""
    from tvm_ffi.utils import _image as image

    for name in ["cubin", "fatbin", "cubin-nobits-far", *REFUSED]:
        if name == "empty":
            continue
        try:
            image.check_image(images[name].read_bytes())
            python_refuses = False
        except ValueError:
            python_refuses = True
        cmake_refuses = _check(cuda_cmake, str(images[name]))[0] != 0
        assert cmake_refuses == python_refuses, name


# ---- each route in a real build ---------------------------------------------------------


def _configure(cuda_cmake, package_args, tmp_path: Path, image: Path) -> Path:
    build = tmp_path / "build"
    cuda_cmake.configure(PROJECT, build, *package_args("source"), f"-DIMAGE={image}")
    return build


def test_foreign_bytes_warn_in_every_route(images, cuda_cmake, package_args, elf, tmp_path):
    image = images["text"]
    build = _configure(cuda_cmake, package_args, tmp_path, image)
    result = cuda_cmake.build(build)
    output = " ".join((result.stdout + result.stderr).split())
    for target, fn in ROUTES.items():
        assert _warning(fn, image, "68 65 6c 6c") in output, target
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
