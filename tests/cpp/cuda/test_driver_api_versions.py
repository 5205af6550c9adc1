"""The driver entry points are fetched with cuGetProcAddress, which returns the newest ABI of
a name up to the version asked for. A name whose newer variant takes other parameters
(cuCtxGetDevice_v2 in CUDA 13, cuStreamGetCtx_v2 in 12.5) must be asked for at a version
before that variant, or calls through the old declaration pass garbage (a crash seen on an
H100: cuCtxGetDevice_v2 read a context from an uninitialised register)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
# DriverApi::Load, which resolves the entry points, is defined in the impl header.
DRIVER_API = REPO / "include" / "tvm" / "ffi" / "extra" / "cuda" / "detail" / "driver_api_impl.h"


def _cuda_header() -> str:
    for home in (Path("/usr/local/cuda"),):
        header = home / "include" / "cuda.h"
        if header.is_file():
            return header.read_text(errors="replace")
    pytest.skip("needs the CUDA toolkit's cuda.h")


def _params(header: str, name: str) -> str | None:
    m = re.search(rf"CUresult CUDAAPI {name}\(([^)]*)\);", header)
    return " ".join(m.group(1).split()) if m else None


def test_versioned_entry_points_are_resolved_at_their_old_abi():
    header = _cuda_header()
    resolved = re.findall(r'resolve\("(cu\w+)", [\w.]+(?:, (\d+))?\)', DRIVER_API.read_text())
    assert len(resolved) > 20, "the resolve list was not found"
    changed = []
    for name, version in resolved:
        plain = _params(header, name)
        for variant, params in re.findall(rf"CUresult CUDAAPI ({name}_v\d+)\(([^)]*)\);", header):
            if plain is not None and " ".join(params.split()) != plain:
                changed.append(name)
                assert version and int(version) < 12050, (
                    f"{name} is resolved at the newest ABI, but {variant} takes ({params}); "
                    f"ask for it at 12000"
                )
    assert {"cuCtxGetDevice", "cuStreamGetCtx"} <= set(changed)
