"""Argument checks of the tvm_ffi_* functions: each mistake stops the configure step with
one message that starts with the function's name. The message is the contract, so it
is matched whole."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

GEN = "tvm_ffi_generate_cubin"
EMBED = "tvm_ffi_embed_cubin"
TARGET = "tvm_ffi_target_embed_cubin"
BIN_INTO = "tvm_ffi_embed_bin_into"
ADD_CUBIN = "add_tvm_ffi_cubin"
ADD_FATBIN = "add_tvm_ffi_fatbin"
ARCH_GRAMMAR = "9.0, 90, sm_90, compute_90, 9.0a, sm_90a or 10.0f, each optionally +PTX, or native"

# (call, expected message, languages the project enables). Files k.cu, k.cc and k.cubin
# exist in the project; the target `lib` (a shared library) and `iface` (an INTERFACE
# library) are defined when CXX is enabled. Projects that enable CUDA need nvcc.
CASES = {
    "generate-no-output": (f"{GEN}(SOURCE k.cu ARCH sm_90)", f"{GEN}: OUTPUT is required", "NONE"),
    "generate-no-source": (f"{GEN}(OUTPUT k.cubin)", f"{GEN}: SOURCE is required", "NONE"),
    "generate-unknown": (
        f"{GEN}(OUTPUT o.cubin SOURCE k.cu ARCHS sm_90)",
        f"{GEN}: unknown arguments: ARCHS;sm_90",
        "NONE",
    ),
    "generate-empty-arch": (
        f"{GEN}(OUTPUT o.cubin SOURCE k.cu ARCH)",
        f"{GEN}: ARCH needs a value (native, sm_90, 9.0, compute_90 or a list)",
        "NONE",
    ),
    "generate-bad-arch": (
        f"{GEN}(OUTPUT o.cubin SOURCE k.cu ARCH 9x)",
        f"{GEN}: ARCH: cannot parse '9x' (expected {ARCH_GRAMMAR})",
        "NONE",
    ),
    "generate-bad-arch-in-string": (
        f'{GEN}(OUTPUT o.cubin SOURCE k.cu ARCH "8.0, sm90")',
        f"{GEN}: ARCH: cannot parse 'sm90' (expected {ARCH_GRAMMAR})",
        "NONE",
    ),
    "generate-native-ptx": (
        f"{GEN}(OUTPUT o.cubin SOURCE k.cu ARCH native+PTX)",
        f"{GEN}: ARCH: cannot parse 'native+PTX' (expected {ARCH_GRAMMAR})",
        "NONE",
    ),
    "generate-cmake-all": (
        f"set(CMAKE_CUDA_ARCHITECTURES all)\n{GEN}(OUTPUT o.cubin SOURCE k.cu)",
        f'{GEN}: CMAKE_CUDA_ARCHITECTURES "all" names no list of architectures this '
        "function can use; give ARCH",
        "NONE",
    ),
    "generate-native-in-list": (
        f"{GEN}(OUTPUT o.cubin SOURCE k.cu ARCH native sm_90)",
        f"{GEN}: ARCH: native cannot be combined with other architectures (got 'native;sm_90')",
        "NONE",
    ),
    "generate-cmake-native-in-list": (
        f'set(CMAKE_CUDA_ARCHITECTURES "native;90-real")\n{GEN}(OUTPUT o.cubin SOURCE k.cu)',
        f"{GEN}: CMAKE_CUDA_ARCHITECTURES: native cannot be combined with other architectures "
        "(got 'native;90-real')",
        "NONE",
    ),
    "generate-missing-source": (
        f"{GEN}(OUTPUT o.cubin SOURCE nope.cu ARCH sm_90)",
        f"{GEN}: SOURCE <src>/nope.cu does not exist",
        "NONE",
    ),
    "embed-no-output": (
        f"{EMBED}(SOURCE k.cc CUBIN k.cubin NAME k)",
        f"{EMBED}: OUTPUT is required",
        "NONE",
    ),
    "embed-no-source": (
        f"{EMBED}(OUTPUT k.o CUBIN k.cubin NAME k)",
        f"{EMBED}: SOURCE is required",
        "NONE",
    ),
    "embed-no-cubin": (
        f"{EMBED}(OUTPUT k.o SOURCE k.cc NAME k)",
        f"{EMBED}: CUBIN is required",
        "NONE",
    ),
    "embed-no-name": (
        f"{EMBED}(OUTPUT k.o SOURCE k.cc CUBIN k.cubin)",
        f"{EMBED}: NAME is required",
        "NONE",
    ),
    "embed-unknown": (
        f"{EMBED}(OUTPUT k.o SOURCE k.cc CUBIN k.cubin NAME k ARCH sm_90)",
        f"{EMBED}: unknown arguments: ARCH;sm_90",
        "NONE",
    ),
    "embed-dash-name": (
        f"{EMBED}(OUTPUT k.o SOURCE k.cc CUBIN k.cubin NAME my-kernels)",
        f'{EMBED}: NAME must be a C identifier (got "my-kernels")',
        "NONE",
    ),
    "embed-digit-name": (
        f"{EMBED}(OUTPUT k.o SOURCE k.cc CUBIN k.cubin NAME 9lives)",
        f'{EMBED}: NAME must be a C identifier (got "9lives")',
        "NONE",
    ),
    "embed-missing-source": (
        f"{EMBED}(OUTPUT k.o SOURCE nope.cc CUBIN k.cubin NAME k)",
        f"{EMBED}: SOURCE <src>/nope.cc does not exist",
        "NONE",
    ),
    "embed-missing-cubin": (
        f"{EMBED}(OUTPUT k.o SOURCE k.cc CUBIN nope.cubin NAME k)",
        f"{EMBED}: CUBIN <build>/nope.cubin does not exist",
        "NONE",
    ),
    "embed-no-cxx": (
        f"{EMBED}(OUTPUT k.o SOURCE k.cc CUBIN k.cubin NAME k)",
        f"{EMBED}: the CXX language is not enabled; add CXX to the LANGUAGES of project()",
        "NONE",
    ),
    "embed-no-cuda-headers": (
        f"{EMBED}(OUTPUT k.o SOURCE k.cc CUBIN k.cubin NAME k)",
        f"{EMBED}: the CUDA headers are not known; call find_package(CUDAToolkit REQUIRED) first",
        "CXX",
    ),
    "embed-output-twice": (
        f"set(CUDAToolkit_INCLUDE_DIRS /usr/include)\n"
        f"{EMBED}(OUTPUT k.o SOURCE k.cc CUBIN k.cubin NAME k)\n"
        f"{EMBED}(OUTPUT k.o SOURCE k.cc CUBIN k.cubin NAME k)",
        f"{EMBED}: OUTPUT k.o is already made by another call",
        "CXX",
    ),
    "target-missing": (
        f"{TARGET}(nope NAME k CUBIN k.cubin)",
        f'{TARGET}: no target named "nope"',
        "CXX",
    ),
    "target-interface": (
        f"{TARGET}(iface NAME k CUBIN k.cubin)",
        f'{TARGET}: target "iface" does not compile sources of its own (INTERFACE_LIBRARY); '
        "embed into an executable or a library",
        "CXX",
    ),
    "target-imported": (
        f"{TARGET}(tvm_ffi::header NAME k CUBIN k.cubin)",
        f'{TARGET}: target "tvm_ffi::header" does not compile sources of its own '
        "(alias of tvm_ffi_header, IMPORTED INTERFACE_LIBRARY); embed into an executable or a "
        "library",
        "CXX",
    ),
    "target-no-name": (f"{TARGET}(lib CUBIN k.cubin)", f"{TARGET}: NAME is required", "CXX"),
    "target-no-cubin": (f"{TARGET}(lib NAME k)", f"{TARGET}: CUBIN is required", "CXX"),
    "target-unknown": (
        f"{TARGET}(lib NAME k CUBIN k.cubin SOURCE k.cc)",
        f"{TARGET}: unknown arguments: SOURCE;k.cc",
        "CXX",
    ),
    "target-bad-name": (
        f"{TARGET}(lib NAME k.v2 CUBIN k.cubin)",
        f'{TARGET}: NAME must be a C identifier (got "k.v2")',
        "CXX",
    ),
    "target-twice": (
        f"{TARGET}(lib NAME k CUBIN k.cubin)\n{TARGET}(lib NAME k CUBIN k.cubin)",
        f'{TARGET}: target "lib" already embeds a CUBIN named "k"',
        "CXX",
    ),
    "target-missing-cubin": (
        f"{TARGET}(lib NAME k CUBIN nope.cubin)",
        f"{TARGET}: CUBIN <build>/nope.cubin does not exist",
        "CXX",
    ),
    # X and X_end in one target: the end symbol of one is the start symbol of the other.
    "target-name-and-name-end": (
        f"{TARGET}(lib NAME k CUBIN k.cubin)\n{TARGET}(lib NAME k_end CUBIN k.cubin)",
        f'{TARGET}: target "lib" cannot embed both "k" and "k_end": __tvm_ffi__cubin_k_end '
        'would be both where "k_end" starts and where "k" ends; rename one of them',
        "CXX",
    ),
    "target-name-end-then-name": (
        f"{TARGET}(lib NAME k_end CUBIN k.cubin)\n{BIN_INTO}(lib SYMBOL k BIN k.cubin)",
        f'{BIN_INTO}: target "lib" cannot embed both "k" and "k_end": __tvm_ffi__cubin_k_end '
        'would be both where "k_end" starts and where "k" ends; rename one of them',
        "CXX",
    ),
    "bin-into-no-symbol": (
        f"{BIN_INTO}(lib BIN k.cubin)",
        f"{BIN_INTO}: SYMBOL is required",
        "CXX",
    ),
    "bin-into-no-bin": (f"{BIN_INTO}(lib SYMBOL k)", f"{BIN_INTO}: BIN is required", "CXX"),
    # The older positional form of apache-tvm-ffi (a name after the target).
    "bin-into-positional-name": (
        f"{BIN_INTO}(lib k BIN k.cubin)",
        f"{BIN_INTO}: unknown arguments: k",
        "CXX",
    ),
    "bin-into-bad-symbol": (
        f"{BIN_INTO}(lib SYMBOL my-kernels BIN k.cubin)",
        f'{BIN_INTO}: SYMBOL must be a C identifier (got "my-kernels")',
        "CXX",
    ),
    "bin-into-missing-bin": (
        f"{BIN_INTO}(lib SYMBOL k BIN nope.cubin)",
        f"{BIN_INTO}: BIN <build>/nope.cubin does not exist",
        "CXX",
    ),
    "bin-into-missing-target": (
        f"{BIN_INTO}(nope SYMBOL k BIN k.cubin)",
        f'{BIN_INTO}: no target named "nope"',
        "CXX",
    ),
    "bin-into-imported": (
        # tvm_ffi::header: its type is the same in every layout (tvm_ffi::shared's depends
        # on whether the layout has a runtime).
        f"{BIN_INTO}(tvm_ffi::header SYMBOL k BIN k.cubin)",
        f'{BIN_INTO}: target "tvm_ffi::header" does not compile sources of its own '
        "(alias of tvm_ffi_header, IMPORTED INTERFACE_LIBRARY); embed into an executable or a "
        "library",
        "CXX",
    ),
    "bin-into-twice": (
        f"{BIN_INTO}(lib SYMBOL k BIN k.cubin)\n{TARGET}(lib NAME k CUBIN k.cubin)",
        f'{TARGET}: target "lib" already embeds a CUBIN named "k"',
        "CXX",
    ),
    "add-cubin-no-cuda": (
        f"{ADD_CUBIN}(kc)",
        f"{ADD_CUBIN}: CUDA is required (the kernel source)",
        "CXX",
    ),
    "add-cubin-two-sources": (
        f"{ADD_CUBIN}(kc CUDA k.cu k.cc)",
        f"{ADD_CUBIN}: unknown arguments: k.cc",
        "CXX",
    ),
    "add-cubin-missing-source": (
        f"{ADD_CUBIN}(kc CUDA nope.cu)",
        f"{ADD_CUBIN}: CUDA <src>/nope.cu does not exist",
        "CXX",
    ),
    "add-cubin-target-exists": (
        f"{ADD_CUBIN}(lib CUDA k.cu)",
        f'{ADD_CUBIN}: a target named "lib" already exists',
        "CXX",
    ),
    "add-fatbin-no-cuda-language": (
        f"{ADD_FATBIN}(kf CUDA k.cu)",
        f"{ADD_FATBIN}: the CUDA language is not enabled; add CUDA to the LANGUAGES of "
        "project() (or use tvm_ffi_generate_cubin, which needs only nvcc)",
        "CXX",
    ),
    "add-cubin-several-archs": (
        f'set(CMAKE_CUDA_ARCHITECTURES "80;90")\n{ADD_CUBIN}(kc CUDA k.cu)',
        f'{ADD_CUBIN}: a CUBIN holds one architecture, but CUDA_ARCHITECTURES is "80;90"; '
        "use add_tvm_ffi_fatbin for several",
        "CXX CUDA",
    ),
    "add-cubin-all-major": (
        f"set(CMAKE_CUDA_ARCHITECTURES all-major)\n{ADD_CUBIN}(kc CUDA k.cu)",
        f'{ADD_CUBIN}: a CUBIN holds one architecture, but CUDA_ARCHITECTURES is "all-major"; '
        "use add_tvm_ffi_fatbin for several",
        "CXX CUDA",
    ),
    "add-cubin-virtual": (
        f"set(CMAKE_CUDA_ARCHITECTURES 90-virtual)\n{ADD_CUBIN}(kc CUDA k.cu)",
        f'{ADD_CUBIN}: a CUBIN holds machine code, but CUDA_ARCHITECTURES is "90-virtual" '
        "(PTX only); use add_tvm_ffi_fatbin",
        "CXX CUDA",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_argument_error(case, cmake, tmp_path, request):
    call, expected, languages = CASES[case]
    if "CUDA" in languages.split():
        request.getfixturevalue("cuda_cmake")  # enabling CUDA needs nvcc
    source = tmp_path / "src"
    build = tmp_path / "build"
    source.mkdir()
    (source / "k.cu").write_text('extern "C" __global__ void k() {}\n')
    (source / "k.cc").write_text("int f() { return 0; }\n")
    (source / "k.cubin").write_bytes(b"\x7fELF not really a cubin")
    targets = (
        "add_library(lib SHARED k.cc)\nadd_library(iface INTERFACE)\n"
        if "CXX" in languages.split()
        else ""
    )
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\n"
        f"project(args LANGUAGES {languages})\n"
        "find_package(tvm_ffi CONFIG REQUIRED)\n"
        f"{targets}{call}\n"
        'message(STATUS "configured past the call")\n'
    )
    result = cmake.configure(source, build, f"-Dtvm_ffi_ROOT={REPO}", check=False)
    assert result.returncode != 0, result.describe()
    assert "configured past the call" not in result.stdout
    expected = expected.replace("<src>", str(source)).replace("<build>", str(build))
    # CMake prints `CMake Error at <file>:<line> (message):`, then the message (wrapped),
    # then the call stack: the whole message sits between the two.
    found = re.search(r"\(message\): (.*?) Call Stack", result.error_text)
    assert found, result.describe()
    assert found[1] == expected
