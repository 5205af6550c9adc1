"""What the launcher-linkage tests share (test_jit_separate_launcher.py, the runtime in a
cache entry; test_jit_prebuilt.py, the package's prebuilt runtime): a wrapper that links
the launcher's run-once code and reaches it without a GPU, and readers of the cache."""

from __future__ import annotations

from pathlib import Path

from tvm_ffi.cpp import _toolchain

DEFINE = "-DTVM_FFI_CUDA_SEPARATE_LAUNCHER"

WRAPPER = """
#include <tvm/ffi/extra/cuda/cubin_launcher.h>

TVM_FFI_EMBED_CUBIN(kernels);

// Checks the bytes (launcher part 1) from the module code (part 2), before any driver call.
void load_bytes(tvm::ffi::Bytes image) { tvm::ffi::CubinModule module(image); }
"""
PTX = b"// jit\n.version 8.0\n.target sm_90\n.address_size 64\n"
BAD_IMAGE = (
    "cannot load module <4-byte image>: not a CUBIN, PTX or fatbin image (first bytes: 12 34 56 78)"
)


def bad_image(library: object) -> list[str]:
    """BAD_IMAGE as load_bytes of ``library`` (a path) raises it, then the last line of the
    error's note, where the core names the function and the library (see ``raised``)."""
    return [BAD_IMAGE, f"in function 'load_bytes' of library '{library}'"]


def raised(err: BaseException) -> list[str]:
    """The first line of ``err``'s message and the last line of its note (after any C++
    frames): what ``bad_image`` gives."""
    return [str(err).splitlines()[0], err.__notes__[-1].splitlines()[-1]]


def has_cuda_headers() -> bool:
    try:
        return (_toolchain.find_cuda_home() / "include" / "cuda.h").is_file()
    except RuntimeError:
        return False


def entries(cache_dir: Path, stem: str) -> list[Path]:
    """The cache entries named ``<stem>_<key>``."""
    return sorted(p for p in cache_dir.iterdir() if p.name.rsplit("_", 1)[0] == stem)


def ninja_value(entry: Path, variable: str) -> str:
    """A variable of the entry's build.ninja."""
    for line in (entry / "build.ninja").read_text().splitlines():
        if line.startswith(f"{variable} = "):
            return line.split(" = ", 1)[1]
    raise AssertionError(f"{variable} not in {entry / 'build.ninja'}")
