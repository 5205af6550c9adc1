"""The suite's own reading of a failed build: the first error is the one reported."""

from __future__ import annotations

import pytest
from client_env import first_error, source_line

pytestmark = pytest.mark.clients


def test_first_error_is_the_first_compiler_error_not_the_last() -> None:
    output = (
        "[1/3] nvcc -c norm.cu\n"
        "In file included from csrc/norm.cu:16:\n"
        "csrc/tvm_ffi_utils.h:42:5: error: 'Optional' does not name a type\n"
        "csrc/norm.cu:90:3: error: expected ';' before 'return'\n"
        "ninja: build stopped: subcommand failed.\n"
        "RuntimeError: Ninja build failed.\n"
    )
    assert (
        first_error(output) == "csrc/tvm_ffi_utils.h:42:5: error: 'Optional' does not name a type"
    )


def test_first_error_reads_nvcc_and_linker_forms() -> None:
    nvcc = 'x.cuh(12): error: more than one operator "==" matches these operands\nRuntimeError: x\n'
    assert (
        first_error(nvcc) == 'x.cuh(12): error: more than one operator "==" matches these operands'
    )
    ld = (
        "/usr/bin/ld: h.o: in function `f':\n"
        "h.cc:(.text+0x1): undefined reference to `cudaGetDevice'\n"
    )
    assert first_error(ld) == "h.cc:(.text+0x1): undefined reference to `cudaGetDevice'"


def test_first_error_without_a_compiler_error_is_the_last_exception() -> None:
    output = (
        "Traceback (most recent call last):\n"
        '  File "toolchain.py", line 9, in <module>\n'
        "OSError: libtvm_ffi.so: cannot open shared object file\n"
        "\nDuring handling of the above exception, another exception occurred:\n\n"
        "RuntimeError: find_libtvm_ffi: no shared library in /x\n"
    )
    assert first_error(output) == "RuntimeError: find_libtvm_ffi: no shared library in /x"


def test_source_line_shows_the_line_an_error_points_at(tmp_path) -> None:
    source = tmp_path / "rope.cu"
    source.write_text("#include <x.h>\n  CHECK_LAST_DIM_CONTIGUOUS_INPUT(q);\n")
    assert (
        source_line(f'{source}(2): error: expected a ";"') == "CHECK_LAST_DIM_CONTIGUOUS_INPUT(q);"
    )
    assert source_line(f"{source}:1:10: fatal error: x.h: No such file") == "#include <x.h>"
    assert source_line("RuntimeError: no location") is None
