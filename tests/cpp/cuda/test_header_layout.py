"""How the CUDA headers are laid out: no header includes itself through others, and each
public header brings only the implementation it uses (what docs/guides/cubin_launcher.md says
each brings): image parsing only with the launcher, the driver loader only where an error name
or a driver call needs it. Read off the preprocessor's own dependency list (-M)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
INCLUDE = HERE.parents[2] / "include"
CUDA = INCLUDE / "tvm" / "ffi" / "extra" / "cuda"
_INCLUDE_LINE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)

IMAGE = {"detail/cubin_image.h", "detail/cubin_image_impl.h", "detail/param_info.h"}
DRIVER = {"detail/driver_api.h", "detail/driver_api_impl.h"}

#: public header -> (brings image parsing, brings the driver loader)
BRINGS = {
    "dim3.h": (False, False),
    "launch_config.h": (False, False),
    "base.h": (False, True),
    "device_guard.h": (False, True),
    "internal/unified_api.h": (False, True),
    "cubin_launcher.h": (True, True),
    "embed_cubin.h": (True, True),
}


def _includes() -> dict[str, list[str]]:
    """Every header under include/ -> the headers under include/ it names in an #include."""
    files = {p.relative_to(INCLUDE).as_posix(): p for p in INCLUDE.rglob("*.h")}
    return {
        name: [m for m in _INCLUDE_LINE.findall(path.read_text()) if m in files]
        for name, path in files.items()
    }


def _cycle_from(graph: dict[str, list[str]], start: str) -> list[str] | None:
    path: list[str] = []
    done: set[str] = set()

    def visit(node: str) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return None
        path.append(node)
        for child in graph[node]:
            found = visit(child)
            if found:
                return found
        path.pop()
        done.add(node)
        return None

    return visit(start)


def test_no_include_cycles():
    graph = _includes()
    for header in sorted(graph):
        cycle = _cycle_from(graph, header)
        assert cycle is None, " -> ".join(cycle)


def test_every_public_cuda_header_is_listed():
    public = {
        p.relative_to(CUDA).as_posix()
        for p in CUDA.rglob("*.h")
        if p.relative_to(CUDA).parts[0] != "detail"
    }
    assert public == set(BRINGS)


@pytest.mark.slow_compile
@pytest.mark.parametrize("header", sorted(BRINGS))
def test_header_brings_only_what_it_uses(toolchain, header, tmp_path):
    source = tmp_path / "one.cc"
    source.write_text(f"#include <tvm/ffi/extra/cuda/{header}>\n")
    cmd = [toolchain.cxx, "-std=c++17", "-M", f"-I{INCLUDE}"]
    cmd += [f"-I{toolchain.cuda_home / 'include'}", str(source)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    deps = {Path(word).resolve() for word in out.replace("\\\n", " ").split()[1:]}
    brought = {p.relative_to(CUDA).as_posix() for p in deps if p.is_relative_to(CUDA)}
    image, driver = BRINGS[header]
    assert bool(brought & IMAGE) == image, sorted(brought)
    assert bool(brought & DRIVER) == driver, sorted(brought)
