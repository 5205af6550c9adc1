"""The launcher compiled separately (TVM_FFI_CUDA_SEPARATE_LAUNCHER, see
detail/launcher_linkage.h): code using it compiles cleanly in both modes, a separate-mode
object leaves the run-once functions to the two definitions files
(detail/launcher_definitions_driver.h and _modules.h), which define each of them once, and a
program linked that way reports errors exactly as a header-only one."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SEPARATE = "-DTVM_FFI_CUDA_SEPARATE_LAUNCHER"
# The run-once functions, by the definitions file (1: _driver.h, 2: _modules.h) that has them.
DEFINITIONS = {
    1: "tvm/ffi/extra/cuda/detail/launcher_definitions_driver.h",
    2: "tvm/ffi/extra/cuda/detail/launcher_definitions_modules.h",
}
PART_1 = [
    "tvm::ffi::details::InspectImage(char const*, unsigned long)",
    "tvm::ffi::details::InspectCubin(char const*, unsigned long, tvm::ffi::details::ImageInfo*)",
    "tvm::ffi::details::CubinArch[abi:cxx11](char const*, unsigned long)",
    "tvm::ffi::details::SelfDescribedSize(char const*)",
    "tvm::ffi::details::DriverApi::Load()",
    "tvm::ffi::details::DriverErrorText[abi:cxx11](int)",
    "tvm::ffi::details::TakeLaunchFailureNote[abi:cxx11](int)",
]
PART_2 = [
    "tvm::ffi::CubinModule::Load(std::__cxx11::basic_string<char, std::char_traits<char>, "
    "std::allocator<char> >, char const*, unsigned long, bool)",
    "tvm::ffi::CubinModule::GetKernel(std::__cxx11::basic_string<char, std::char_traits<char>, "
    "std::allocator<char> > const&) const",
    "tvm::ffi::CubinModule::ListKernelsForError[abi:cxx11](tvm::ffi::details::LibraryState const&)",
    "tvm::ffi::CubinKernel::LaunchEmpty()",
]


def write_part(directory: Path, part: int) -> Path:
    path = directory / f"launcher_part{part}.cc"
    path.write_text(f"#include <{DEFINITIONS[part]}>\n")
    return path


def symbols(obj: Path) -> dict[str, str]:
    """Demangled name -> nm's type letter for every symbol of ``obj``."""
    if shutil.which("nm") is None:
        pytest.skip("needs binutils (nm)")
    out = subprocess.run(["nm", "-C", str(obj)], capture_output=True, text=True, check=True)
    table = {}
    for line in out.stdout.splitlines():
        fields = line.split(maxsplit=2) if line[:1] != " " else ["", *line.split(maxsplit=1)]
        if len(fields) == 3:
            table[fields[2]] = fields[1]
    return table


@pytest.mark.slow_compile
@pytest.mark.parametrize("source", ["guide_embedded.cc", "launch_api.cc"])
def test_compiles_in_separate_mode(toolchain, source, tmp_path):
    proc = toolchain.gxx(HERE / source, tmp_path / "out.o", "-c", "-O2", SEPARATE)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow_compile
@pytest.mark.parametrize("part", [1, 2])
@pytest.mark.parametrize("flags", [[SEPARATE], []], ids=["with-define", "without-define"])
def test_parts_compile(toolchain, part, flags, tmp_path):
    # A definitions file sets the switch itself: the define on its command line is optional.
    proc = toolchain.gxx(write_part(tmp_path, part), tmp_path / "out.o", "-c", "-O2", *flags)
    assert proc.returncode == 0, proc.stderr
    assert any(kind == "T" for kind in symbols(tmp_path / "out.o").values())


def test_heavy_functions_move_to_the_parts(toolchain, tmp_path):
    objects = {}
    for name, flags in (("header_only", []), ("separate", [SEPARATE])):
        objects[name] = tmp_path / f"{name}.o"
        proc = toolchain.gxx(HERE / "guide_embedded.cc", objects[name], "-c", "-O2", *flags)
        assert proc.returncode == 0, proc.stderr
    for part in (1, 2):
        objects[part] = tmp_path / f"part{part}.o"
        proc = toolchain.gxx(write_part(tmp_path, part), objects[part], "-c", "-O2", SEPARATE)
        assert proc.returncode == 0, proc.stderr
    header_only, separate = symbols(objects["header_only"]), symbols(objects["separate"])
    part1, part2 = symbols(objects[1]), symbols(objects[2])
    # Header-only, every one the code reaches is an inline copy; separate, none is defined,
    # and those it calls directly are left to the link.
    for name in PART_1 + PART_2:
        if name != PART_1[3]:  # the guide has no unsized image: nothing reaches that one
            assert header_only[name] == "W", name
        assert separate.get(name, "U") == "U", name
    for name in (PART_1[5], PART_1[6], PART_2[0], PART_2[1], PART_2[3]):
        assert separate[name] == "U", name
    for name in PART_1:
        assert part1.get(name) == "T" and part2.get(name, "U") == "U", name
    for name in PART_2:
        assert part2.get(name) == "T" and part1.get(name, "U") == "U", name
    assert not any(kind in "TW" for name, kind in separate.items() if "Inspect" in name)


def test_library_links_with_the_parts(toolchain, tmp_path):
    sources = [HERE / "guide_embedded.cc", write_part(tmp_path, 1), write_part(tmp_path, 2)]
    objects = []
    for source in sources:
        objects.append(tmp_path / f"{source.stem}.o")
        proc = toolchain.gxx(source, objects[-1], "-c", SEPARATE)
        assert proc.returncode == 0, proc.stderr
    # The embedded image's symbols, as the embed step would define them.
    image = tmp_path / "image.s"
    image.write_text(
        "".join(
            f".globl {sym}\n.hidden {sym}\n"
            for sym in ("__tvm_ffi__cubin_my_kernels", "__tvm_ffi__cubin_my_kernels_end")
        )
        + ".section .rodata\n__tvm_ffi__cubin_my_kernels:\n.byte 0\n"
        "__tvm_ffi__cubin_my_kernels_end:\n" + '.section .note.GNU-stack,"",@progbits\n'
    )
    lib = tmp_path / "libguide.so"
    cmd = [toolchain.cxx, "-shared", *map(str, objects), str(image), "-o", str(lib)]
    link = ["-Wl,-z,defs", "-ldl", "-pthread", *toolchain.runtime_link]
    proc = subprocess.run([*cmd, *link], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    # Without the parts the run-once functions are missing: the link names one.
    proc = subprocess.run(
        [toolchain.cxx, "-shared", str(objects[0]), str(image), "-o", str(lib), "-Wl,-z,defs",
         *toolchain.runtime_link],
        capture_output=True,
        text=True,
    )
    assert proc.returncode != 0
    assert "undefined reference to `tvm::ffi::CubinModule::" in proc.stderr


@pytest.mark.slow_compile
@pytest.mark.parametrize("part", [1, 2])
def test_definitions_after_a_header_only_include_is_a_compile_error(toolchain, part, tmp_path):
    # Included header-only first, the family's functions are inline: the file would define none.
    source = tmp_path / "late.cc"
    source.write_text(
        "#include <tvm/ffi/extra/cuda/base.h>\n" + write_part(tmp_path, part).read_text()
    )
    proc = toolchain.gxx(source, tmp_path / "out.o", "-c")
    assert proc.returncode != 0
    name = DEFINITIONS[part].rsplit("/", 1)[1]
    message = (
        f"{name} must come before every other header of the CUDA launcher in its file: they "
        "were included header-only, so it would define nothing"
    )
    assert f'error: #error "{message}"' in proc.stderr, proc.stderr
