"""Building libraries with the staging headers (staging/include), for tests/abi/test_headers_*.py.

A library is built as a client builds it against apache-tvm-ffi's wheel, but with our headers:
``c++ -std=c++17 -fPIC -shared -I staging/include ... -L <apache lib dir> -ltvm_ffi``, so it
runs in apache's runtime (direction B of docs/dev/abi.md).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
STAGING_INCLUDE = ROOT / "include"
HERE = Path(__file__).resolve().parent
WARNINGS = ("-Wall", "-Wextra", "-Werror")


def compile_source(
    source: Path, output: Path, *flags: str, link_dir: Path | None = None, cxx: str | None = None
) -> Path:
    """Builds `source` with the staging headers into `output` (a shared library when linked
    against `link_dir`'s libtvm_ffi.so, else an object file). A failure is an AssertionError
    carrying the command and the compiler's output: our headers must build. `cxx` overrides
    $CXX (the symbol tests build with GCC and with Clang, whose visibility rules differ)."""
    cxx = cxx or os.environ.get("CXX", "c++")
    cmd = [cxx, "-std=c++17", "-O2", "-fPIC", *WARNINGS, "-I", str(STAGING_INCLUDE), *flags]
    if link_dir is None:
        cmd += ["-c", str(source), "-o", str(output)]
    else:
        cmd += ["-shared", str(source), "-L", str(link_dir), "-ltvm_ffi", "-o", str(output)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr}"
    return output


def dynamic_symbols(library: Path, *nm_flags: str) -> list[str]:
    """`nm -D` of a library: (type, name) lines, names mangled."""
    proc = subprocess.run(["nm", "-D", *nm_flags, str(library)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return [line.split()[-2:] for line in proc.stdout.splitlines() if line.strip()]
