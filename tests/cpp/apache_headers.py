"""Prints, as JSON, every header path an include folder ships and the standard headers each
one's preprocessed closure brings: {"tvm/ffi/error.h": ["cstring", "iostream", ...], ...}
(null where the header does not compile alone). Run on apache-tvm-ffi's include folder, it
makes tests/cpp/apache_std_headers.json (test_apache_std_headers.py does so when the wheel is
found, and compares):

    python tests/cpp/apache_headers.py <unpacked wheel>/tvm_ffi/include
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

CXX = os.environ.get("CXX", "c++")
# A standard header: a file of the C++ library's include folder with no suffix, not in bits/.
_STD = re.compile(r"/c\+\+/[^/]+/([a-z_]+)$")


def std_closure(include: Path, header: str, extra: list[str] = ()) -> list[str] | None:
    """The standard headers that `#include <header>` brings, by the compiler's -M."""
    proc = subprocess.run(
        [CXX, "-std=c++17", "-M", "-x", "c++", "-", "-I", str(include), *extra],
        input=f"#include <{header}>\n", capture_output=True, text=True,
    )  # fmt: skip
    if proc.returncode != 0:
        return None
    deps = proc.stdout.replace("\\\n", " ").split()[2:]
    return sorted({m[1] for d in deps for m in [_STD.search(d)] if m})


def table(include: Path, extra: list[str] = ()) -> dict:
    headers = sorted(str(p.relative_to(include)) for p in include.rglob("*.h"))
    return {h: std_closure(include, h, extra) for h in headers}


def toolkit_includes() -> list[str]:
    """-I flags for what the CUDA headers and the Python helper headers include."""
    import sysconfig

    cuda = Path(os.environ.get("CUDA_HOME") or "/usr/local/cuda") / "include"
    return ["-I", str(cuda), "-I", sysconfig.get_path("include")]


if __name__ == "__main__":
    json.dump(table(Path(sys.argv[1]), toolkit_includes()), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
