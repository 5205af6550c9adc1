"""Each header path apache-tvm-ffi 0.1.15.post2 ships and this package ships too brings at least
the standard headers apache's brings through its own includes: code written for it names
std::invalid_argument (FlashInfer's dsv3_router_gemm.cu), std::ostringstream or
std::has_single_bit after including only tvm/ffi headers. Ours come from detail/std_compat.h.

apache_std_headers.json is read off the wheel's include folder by apache_headers.py, with this
compiler's standard library; test_table_matches_the_wheel regenerates it when the wheel is at
hand. Paths only apache ships are test_apache_header_paths.py's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from helpers import apache_wheel

HERE = Path(__file__).resolve().parent
INCLUDE = HERE.parents[1] / "include"
TABLE = HERE / "apache_std_headers.json"

sys.path.insert(0, str(HERE))
import apache_headers  # noqa: E402


def _table() -> dict:
    return json.loads(TABLE.read_text())


def _shared() -> list[str]:
    return [h for h in sorted(_table()) if (INCLUDE / h).is_file()]


def test_table_size():
    table = _table()
    assert (len(table), sum(len(v) for v in table.values())) == (60, 1954)


@pytest.mark.slow_compile
@pytest.mark.parametrize("header", _shared())
def test_brings_the_standard_headers_apache_brings(header):
    ours = apache_headers.std_closure(INCLUDE, header, apache_headers.toolkit_includes())
    assert ours is not None, f"{header} does not compile alone"
    assert sorted(set(_table()[header]) - set(ours)) == []


def test_invalid_argument_after_a_tvm_ffi_header(tmp_path):
    """dsv3_router_gemm.cu's use, compiled: a tvm/ffi header, then std::invalid_argument."""
    import subprocess

    source = tmp_path / "router.cc"
    source.write_text(
        "#include <tvm/ffi/container/tensor.h>\n"
        'void Check(int n) { if (n < 0) throw std::invalid_argument("n"); }\n'
        "std::string Text(int n) { std::ostringstream os; os << n; return os.str(); }\n"
    )
    proc = subprocess.run(
        [apache_headers.CXX, "-std=c++17", "-fsyntax-only", "-I", str(INCLUDE), str(source)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow_compile
def test_table_matches_the_wheel():
    wheel = apache_wheel.find_wheel()
    if wheel is None:
        pytest.skip(f"no apache-tvm-ffi wheel (set {apache_wheel.WHEEL_ENV})")
    include = apache_wheel.unpacked(wheel) / "tvm_ffi" / "include"
    assert apache_headers.table(include, apache_headers.toolkit_includes()) == _table()
