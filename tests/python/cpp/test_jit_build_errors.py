"""tvm_ffi.cpp build failures: the BuildError's first line is the real cause.

Undefined symbols fail the link (not every later load), nvcc's own fatal errors, a full
disk and a missing embedded image each head the message, and nothing is cached.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tvm_ffi import cpp
from tvm_ffi.cpp import _toolchain


def _has_cuda() -> bool:
    try:
        _toolchain.find_cuda_home()
    except RuntimeError:
        return False
    return True


needs_cuda_toolkit = pytest.mark.skipif(not _has_cuda(), reason="needs the CUDA toolkit (nvcc)")

UNDEFINED = "int g(int);\nint f(int a) { return g(a); }\n"


@pytest.fixture(autouse=True)
def one_cuda_arch(monkeypatch):
    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", "9.0")


def _published(cache_dir: Path, name: str) -> list[Path]:
    """The libraries published in the entries of ``name`` (a failed link with the faster
    linker is tried again with the default one, in an entry of its own)."""
    entries = list(cache_dir.glob(f"{name}_*"))
    assert entries
    return [entry / f"{name}.so" for entry in entries if (entry / f"{name}.so").exists()]


def test_undefined_symbol_is_a_build_error_naming_it(cache_dir):
    """Issue 9, item 5: the library once built and was cached; every load then failed
    with `undefined symbol: _Z1gi`."""
    with pytest.raises(cpp.BuildError) as info:
        cpp.build_inline("jit_undefined", cpp_sources=UNDEFINED)
    assert str(info.value).splitlines()[0] == (
        "undefined symbol g(int) (referenced from main.cpp): define it, or link the library "
        "that does (extra_ldflags)"
    )
    assert _published(cache_dir, "jit_undefined") == []
    # Nothing cached: the next call builds again and fails the same way.
    with pytest.raises(cpp.BuildError, match=r"^undefined symbol g\(int\) "):
        cpp.build_inline("jit_undefined", cpp_sources=UNDEFINED)


def test_undefined_symbols_allowed_on_request():
    """`-Wl,-z,undefs` in extra_ldflags takes the check back (symbols resolved at load)."""
    path = cpp.build_inline("jit_undefs_ok", cpp_sources=UNDEFINED, extra_ldflags=["-Wl,-z,undefs"])
    assert os.path.isfile(path)


def test_mangled_undefined_symbol_is_demangled():
    from tvm_ffi.cpp._build import headline_of

    lld = "ld.lld: error: undefined symbol: _Z1gi\n>>> referenced by main.cpp:2\n"
    assert headline_of(lld, lld) == (
        "undefined symbol g(int) (referenced from main.cpp): define it, or link the library "
        "that does (extra_ldflags)"
    )


@pytest.mark.parametrize(
    "output",
    [
        "main.cpp:(.text+0xa): undefined reference to `g(int)'\n",  # GNU ld
        "obj/main.o:main.cpp:function f(): error: undefined reference to 'g(int)'\n",  # gold
        "mold: error: undefined symbol: g(int)\n>>> referenced by main.cpp\n"
        ">>>               obj/main.o:(f())\n",
    ],
)
def test_undefined_symbol_named_with_its_source_by_every_linker(output):
    from tvm_ffi.cpp._build import headline_of

    assert headline_of(output, output) == (
        "undefined symbol g(int) (referenced from main.cpp): define it, or link the library "
        "that does (extra_ldflags)"
    )


@needs_cuda_toolkit
@pytest.mark.parametrize(
    ("flag", "headline"),
    [
        ("-arch=sm_12", "nvcc fatal   : Unsupported gpu architecture 'sm_12'"),
        ("--no-such-option", "nvcc fatal   : Unknown option '--no-such-option'"),
    ],
    ids=["unsupported-arch", "unknown-option"],
)
def test_nvcc_fatal_line_is_the_headline(flag, headline):
    """Issue 9, item 8: these once read "ninja exited with code 1"."""
    kernel = "__global__ void k(float* x) { x[0] = 1.0f; }\n"
    with pytest.raises(cpp.BuildError) as info:
        cpp.build_inline("jit_nvcc_fatal", cuda_sources=kernel, extra_cuda_cflags=[flag])
    assert str(info.value).splitlines()[0] == headline


@needs_cuda_toolkit
def test_missing_embedded_image_names_the_embedded_ones(cache_dir):
    """Issue 9, item 8: `undefined reference to __tvm_ffi__cubin_X` says what is embedded."""
    source = textwrap.dedent(
        """
        #include <tvm/ffi/extra/cuda/cubin_launcher.h>
        #include <tvm/ffi/function.h>
        TVM_FFI_EMBED_CUBIN(kernels_v2);
        int count() { return &TVM_FFI_EMBED_CUBIN_GET_MODULE(kernels_v2) != nullptr; }
        """
    )
    ptx = b".version 8.0\n.target sm_90\n.address_size 64\n"
    with pytest.raises(cpp.BuildError) as info:
        cpp.build_inline(
            "jit_missing_image",
            cpp_sources=source,
            functions=["count"],
            embed_cubin={"kernels": ptx, "other": ptx},
        )
    assert str(info.value).splitlines()[0] == (
        "undefined symbol __tvm_ffi__cubin_kernels_v2: no image named 'kernels_v2' is "
        "embedded in this build (embedded images: kernels, other); pass it in "
        "embed_cubin={'kernels_v2': ...}"
    )
    assert _published(cache_dir, "jit_missing_image") == []


# Fills the disk just before the link, so that the linker is the tool that meets it.
FILLING_CXX = textwrap.dedent(
    """\
    #!/bin/sh
    for arg in "$@"; do [ "$arg" = --version ] && exec c++ --version; done
    if [ -n "$JIT_FILL" ]; then
      case " $* " in *" -shared "*) cat /dev/zero > "$JIT_FILL" 2>/dev/null;; esac
    fi
    exec c++ "$@"
    """
)

FULL_DISK = textwrap.dedent(
    """
    import os, sys
    from tvm_ffi import cpp
    try:
        cpp.build_inline("jit_full", cpp_sources="int f() { return 1; }\\n")
    except cpp.BuildError as err:
        print(str(err).splitlines()[0])
        print(sorted(os.listdir(err.build_dir)))
    os.unlink(os.environ.pop("JIT_FILL"))
    print(os.path.basename(cpp.build_inline("jit_full", cpp_sources="int f() { return 1; }\\n")))
    """
)


def test_full_disk_is_the_headline(tmp_path, run_with_tmpfs):
    """Issue 9, item 8: a link that hits ENOSPC once read "collect2: error: ld returned 1
    exit status"; a full disk leaves no library, and the next build (with space) works."""
    cxx = tmp_path / "filling-c++"
    cxx.write_text(FILLING_CXX)
    cxx.chmod(0o755)
    disk = tmp_path / "disk"
    env = {
        "CXX": str(cxx),
        "TVM_FFI_CACHE_DIR": str(disk / "cache"),
        "JIT_FILL": str(disk / "filler"),
    }
    out = run_with_tmpfs(disk, "size=8m", [sys.executable, "-c", FULL_DISK], env)
    headline, files, rebuilt = out.splitlines()
    assert headline.endswith(": No space left on device"), headline
    assert "ld" in headline.split(":")[0], headline
    assert files == (
        "['.ninja_deps', '.ninja_log', 'build.ninja', 'inc', 'lib', 'lock', 'main.cpp', 'obj']"
    )
    assert rebuilt == "jit_full.so"


@pytest.fixture
def run_with_tmpfs():
    """``run(mountpoint, options, argv, env)``: run argv with a fresh tmpfs mounted at
    mountpoint (in a private mount namespace, so nothing outlives the call); its stdout."""
    unshare = shutil.which("unshare")
    if unshare is None or os.geteuid() != 0:
        pytest.skip("needs root and unshare(1) to mount a small tmpfs")

    def run(mountpoint: Path, options: str, argv: list[str], env: dict[str, str]) -> str:
        mountpoint.mkdir(exist_ok=True)
        script = 'mount -t tmpfs -o "$1" tmpfs "$2" && shift 2 && exec "$@"'
        proc = subprocess.run(
            [unshare, "-m", "sh", "-c", script, "sh", options, str(mountpoint), *argv],
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    return run
