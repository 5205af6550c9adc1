"""Finding CUDA: pip wheels through cuda-pathfinder, what each kind of module asks for,
the errors, and the remembered result. No GPU needed; the builds need a CUDA toolkit,
which the pip-wheel trees here are made from (by symbolic links), with the toolkit
itself hidden from the build."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import tvm_ffi
from helpers import tools
from tvm_ffi import _cuda_toolkit, cpp


def _real_cuda() -> _cuda_toolkit.CudaInstall | None:
    try:
        return _cuda_toolkit.find_cuda(nvcc=True, cudart=True)
    except RuntimeError:
        return None


REAL = _real_cuda()
needs_cuda = pytest.mark.skipif(REAL is None, reason="needs a CUDA toolkit (nvcc, cudart)")

KERNEL = textwrap.dedent(
    """
    __global__ void scale_kernel(float* x, float k, int n) {
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) x[i] *= k;
    }
    int cuda_answer() { return 40 + 2; }
    """
)

# A wrapper that launches an embedded image: the launcher header, no CUDA runtime call.
WRAPPER = textwrap.dedent(
    """
    #include <tvm/ffi/extra/cuda/cubin_launcher.h>
    TVM_FFI_EMBED_CUBIN(kernels);
    int launcher_answer() { return 7; }
    """
)
PTX = b"// image\n.version 8.0\n.target sm_90\n.address_size 64\n"


def _cuda_includes(library: Path) -> set[str]:
    """The CUDA include directories the commands of a cached library's entries (see
    _ninja_of) name, through the links in their build directories (inc/cuda)."""
    dirs = [library.parent]
    objects = re.search(r"(\S+/objects_[0-9a-f]+)/objects\.o", _ninja_of(library))
    if objects is not None:
        dirs.append(Path(objects.group(1)))
    return {os.readlink(d / "inc" / "cuda") for d in dirs if (d / "inc" / "cuda").is_symlink()}


def _ninja_of(library: Path) -> str:
    """The build.ninja of a cached library, and with embedded images (two cache entries:
    the objects, then the link) that of its objects entry too."""
    text = (library.parent / "build.ninja").read_text()
    objects = re.search(r"(\S+/objects_[0-9a-f]+)/objects\.o", text)
    if objects is not None:
        text += (Path(objects.group(1)) / "build.ninja").read_text()
    return text


@pytest.fixture(autouse=True)
def fresh_search(monkeypatch, tmp_path):
    for var in ("CUDA_HOME", "CUDA_PATH", "CONDA_PREFIX"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", "9.0")
    monkeypatch.setenv("TVM_FFI_CACHE_DIR", str(tmp_path / "cache"))
    _cuda_toolkit._search.cache_clear()
    yield
    _cuda_toolkit._search.cache_clear()


def _mirror(src: Path, dst: Path) -> None:
    """A real directory of symbolic links to ``src``'s entries: resolving ``dst`` itself
    (as cuda-pathfinder does) stays in the copy."""
    dst.mkdir(parents=True)
    for entry in src.iterdir():
        (dst / entry.name).symlink_to(entry)


def _tool(path: Path, real: Path) -> None:
    # A wheel's nvcc is a file, not a link into a toolkit (which would be resolved to it).
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\nexec {real} "$@"\n')
    path.chmod(0o755)


def _wheel_tree(site: Path, layout: str, *, with_nvcc: bool = True) -> dict[str, Path]:
    """Lay out NVIDIA's CUDA wheels under ``site``: ``cu13`` (CUDA 13: one nvidia/cu13
    tree) or ``split`` (CUDA 12: nvidia/cuda_nvcc and nvidia/cuda_runtime). As in the
    wheels, the library is only ``libcudart.so.<major>``."""
    assert REAL is not None and REAL.cudart is not None and REAL.nvcc is not None
    major = REAL.cudart.name.split(".so")[0]  # "libcudart"
    versioned = sorted(REAL.cudart.parent.glob(f"{major}.so.*"), key=lambda p: len(p.name))[0]
    if layout == "cu13":
        runtime = nvcc_root = site / "nvidia" / "cu13"
    else:
        runtime = site / "nvidia" / "cuda_runtime"
        nvcc_root = site / "nvidia" / "cuda_nvcc"
    _mirror(REAL.include_dirs[0], runtime / "include")
    (runtime / "lib").mkdir(parents=True)
    (runtime / "lib" / versioned.name).symlink_to(versioned)
    if with_nvcc:
        for name in ("nvcc", "fatbinary"):
            _tool(nvcc_root / "bin" / name, REAL.nvcc.parent / name)
        (nvcc_root / "nvvm").symlink_to(REAL.nvcc.parent.parent / "nvvm")  # nvidia-nvvm
    return {"runtime": runtime, "nvcc_root": nvcc_root, "cudart": runtime / "lib" / versioned.name}


def _venv(tmp_path: Path) -> tuple[Path, Path]:
    """A virtual environment (its site-packages is where cuda-pathfinder looks for wheels)
    that sees this test's tvm_ffi; returns (python, site-packages)."""
    venv = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)],
        check=True,
    )
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import site; print(site.getsitepackages()[0])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    return python, Path(site)


# Run in the venv: the system toolkit is hidden (no nvcc on PATH, no CUDA_HOME, no
# /usr/local/cuda), so only the wheels can provide CUDA.
_HIDDEN_SYSTEM = (
    "import json, sys\nfrom tvm_ffi import _cuda_toolkit\n"
    + tools.HIDE_SYSTEM_CUDA
    + "import tvm_ffi\nfrom tvm_ffi import cpp\n"
)


def _run_hidden(python: Path, tmp_path: Path, body: str) -> subprocess.CompletedProcess:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("CUDA_HOME", "CUDA_PATH", "CONDA_PREFIX", "PYTHONPATH")
    }
    env.update(
        PATH="/usr/bin:/bin",
        PYTHONPATH=str(Path(tvm_ffi.__file__).resolve().parents[1]),
        PYTHONNOUSERSITE="1",
        TVM_FFI_CACHE_DIR=str(tmp_path / "venv-cache"),
        TVM_FFI_CUDA_ARCH_LIST="9.0",
    )
    if not Path("/usr/bin/c++").exists():
        env["PATH"] += os.pathsep + os.environ["PATH"]  # keep the compiler
    proc = subprocess.run(
        [str(python), "-c", _HIDDEN_SYSTEM + textwrap.dedent(body)],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc


@needs_cuda
@pytest.mark.parametrize("layout", ["cu13", "split"])
def test_cuda_sources_build_with_the_pip_wheels_alone(tmp_path, layout):
    python, site = _venv(tmp_path)
    tree = _wheel_tree(site, layout)
    body = f"""
    path = cpp.build_inline("pip_cuda", cuda_sources={KERNEL!r}, functions=["cuda_answer"],
                            verbose=True)
    assert tvm_ffi.load_module(path).cuda_answer() == 42
    print(json.dumps({{"path": path}}))
    """
    proc = _run_hidden(python, tmp_path, body)
    path = Path(json.loads(proc.stdout.splitlines()[-1])["path"])
    runtime, nvcc = tree["runtime"], tree["nvcc_root"] / "bin" / "nvcc"
    described = f"CUDA {runtime} (found through cuda-pathfinder: pip wheel)"
    if layout == "split":
        described += f", nvcc {nvcc}"
    (used,) = [line for line in proc.stderr.splitlines() if line.startswith("tvm_ffi.cpp: using")]
    # A partial CUDA elsewhere on the path (CI's system site-packages has nvidia/cu13 without
    # crt/) is named after the one used, as passed over.
    assert used == f"tvm_ffi.cpp: using {described}" or used.startswith(
        f"tvm_ffi.cpp: using {described}, passed over: "
    ), used
    ninja = _ninja_of(path)
    assert f"nvcc = {nvcc}\n" in ninja
    assert _cuda_includes(path) == {f"{runtime}/include"}
    lib = runtime / "lib"
    cudart = tree["cudart"].name
    assert f"-L{lib} -l:{cudart} -Wl,-rpath,{lib} " in ninja  # no libcudart.so in a wheel
    assert str(REAL.root) not in ninja
    dynamic = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True).stdout
    assert f"Shared library: [{cudart}]" in dynamic
    assert f"[{lib}]" in dynamic


@needs_cuda
def test_embedded_image_wrapper_builds_with_wheel_headers_only(tmp_path):
    """No nvcc anywhere, no libcudart: a C++ wrapper of an embedded image still builds."""
    python, site = _venv(tmp_path)
    tree = _wheel_tree(site, "cu13", with_nvcc=False)
    (tree["cudart"]).unlink()
    body = f"""
    path = cpp.build_inline("pip_headers", cpp_sources={WRAPPER!r},
                            functions=["launcher_answer"], embed_cubin={{"kernels": {PTX!r}}},
                            verbose=True)
    assert tvm_ffi.load_module(path).launcher_answer() == 7
    print(json.dumps({{"path": path}}))
    """
    proc = _run_hidden(python, tmp_path, body)
    path = Path(json.loads(proc.stdout.splitlines()[-1])["path"])
    runtime = tree["runtime"]
    assert f"using CUDA {runtime} (found through cuda-pathfinder: pip wheel)\n" in proc.stderr
    ninja = _ninja_of(path)
    assert _cuda_includes(path) == {f"{runtime}/include"}
    assert "nvcc" not in ninja and "cudart" not in ninja
    dynamic = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True).stdout
    assert "libcudart" not in dynamic


@needs_cuda
def test_cuda_home_at_a_wheel_tree_links_the_versioned_cudart(tmp_path, monkeypatch):
    tree = _wheel_tree(tmp_path / "site", "cu13")
    monkeypatch.setenv("CUDA_HOME", str(tree["runtime"]))
    install = _cuda_toolkit.find_cuda(nvcc=True, cudart=True)
    assert install.how == "CUDA_HOME"
    assert install.nvcc == tree["runtime"] / "bin" / "nvcc"
    lib = tree["runtime"] / "lib"
    assert install.link_flags() == [f"-L{lib}", f"-l:{tree['cudart'].name}", f"-Wl,-rpath,{lib}"]
    mod = cpp.load_inline("home_wheel", cuda_sources=KERNEL, functions=["cuda_answer"])
    assert mod.cuda_answer() == 42


@needs_cuda
def test_headers_only_cuda_home_builds_a_launcher_wrapper(tmp_path, monkeypatch):
    headers = tmp_path / "headers-only"
    _mirror(REAL.include_dirs[0], headers / "include")
    monkeypatch.setenv("CUDA_HOME", str(headers))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    path = Path(
        cpp.build_inline(
            "headers_only", cpp_sources=WRAPPER, functions=["launcher_answer"],
            embed_cubin={"kernels": PTX},
        )
    )  # fmt: skip
    ninja = _ninja_of(path)
    assert _cuda_includes(path) == {f"{headers}/include"}
    assert "nvcc" not in ninja and "-lcudart" not in ninja
    assert tvm_ffi.load_module(path).launcher_answer() == 7
    # The same tree cannot build CUDA sources, and says what it lacks.
    with pytest.raises(RuntimeError) as info:
        cpp.build_inline("headers_only_cu", cuda_sources=KERNEL)
    assert str(info.value) == (
        f"CUDA_HOME={headers} is not a usable CUDA toolkit (no bin/nvcc, no libcudart.so* in "
        "lib64 or lib); this build needs nvcc, the CUDA headers, libcudart"
    )
    # CUDA sources without device code need no nvcc: the host compiler builds them.
    path = Path(
        cpp.build_inline(
            "headers_only_host", cuda_sources=WRAPPER, functions=["launcher_answer"],
            embed_cubin={"kernels": PTX},
        )
    )  # fmt: skip
    assert tvm_ffi.load_module(path).launcher_answer() == 7
    ninjas = [p.read_text() for p in path.parent.parent.glob("*/build.ninja")]
    assert any("rule cudahost" in text for text in ninjas)
    assert not any("nvcc =" in text or "-lcudart" in text for text in ninjas)


def _needed(library) -> str:
    return subprocess.run(["readelf", "-d", library], capture_output=True, text=True).stdout


@needs_cuda
def test_runtime_call_in_a_launcher_wrapper_links_cudart_as_needed():
    # C++ that uses CUDA may call the runtime too (FlashInfer's host shims call
    # cudaGetDevice): cudart is linked, and loaded only by a library that calls it.
    source = WRAPPER + "int wrapper_sync() { return cudaDeviceSynchronize() == 0 ? 0 : 1; }\n"
    calls = cpp.build_inline(
        "wrapper_sync", cpp_sources=source, embed_cubin={"kernels": PTX},
        functions=["launcher_answer"],
    )  # fmt: skip
    assert "Shared library: [libcudart.so" in _needed(calls)
    assert tvm_ffi.load_module(calls).launcher_answer() == 7
    plain = cpp.build_inline(
        "wrapper_plain", cpp_sources=WRAPPER, embed_cubin={"kernels": PTX},
        functions=["launcher_answer"],
    )  # fmt: skip
    assert "libcudart" not in _needed(plain)


@needs_cuda
def test_runtime_call_without_a_cudart_to_link_says_so(tmp_path, monkeypatch):
    headers = tmp_path / "headers-only"
    _mirror(REAL.include_dirs[0], headers / "include")
    monkeypatch.setenv("CUDA_HOME", str(headers))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    source = WRAPPER + "void sync() { cudaDeviceSynchronize(); }\n"
    with pytest.raises(cpp.BuildError) as info:
        cpp.build_inline("wrapper_sync_nolib", cpp_sources=source, embed_cubin={"kernels": PTX})
    assert str(info.value).splitlines()[0] == (
        "undefined symbol cudaDeviceSynchronize (referenced from main.cpp): a CUDA runtime "
        "function, and the CUDA this build uses has no libcudart: install one (pip install "
        "nvidia-cuda-runtime) or link it yourself "
        "(extra_ldflags=['-L<dir of libcudart.so>', '-lcudart'])"
    )


def test_fatbin_without_nvfatbin_or_fatbinary_names_both(tmp_path, monkeypatch):
    from tvm_ffi.utils import _fatbin
    from tvm_ffi.utils.embed_cubin import make_fatbin

    _hide_everything(tmp_path, monkeypatch)
    monkeypatch.setitem(sys.modules, "cuda.pathfinder", None)
    monkeypatch.setattr(_fatbin, "_nvfatbin", lambda: None)
    with pytest.raises(RuntimeError) as info:
        make_fatbin({"sm_90": PTX})
    assert str(info.value).startswith(
        "making a fatbin needs NVIDIA's nvFatbin library (pip install cuda-bindings "
        "nvidia-nvfatbin) or CUDA's 'fatbinary' program; found neither. Tried: CUDA not found: "
    )
    assert str(info.value).endswith(f"{tmp_path}/cuda-* (none); 'fatbinary' on PATH")


def test_plain_cpp_never_looks_for_cuda(monkeypatch):
    def refuse(**kwargs):
        raise AssertionError("a C++ module looked for CUDA")

    monkeypatch.setattr(_cuda_toolkit, "find_cuda", refuse)
    mod = cpp.load_inline("plain_cpp", cpp_sources="int one() { return 1; }", functions="one")
    assert mod.one() == 1


@needs_cuda
def test_cpp_that_includes_a_cuda_header_gets_the_headers():
    source = "#include <cuda_runtime.h>\nint size() { return sizeof(cudaStream_t); }\n"
    mod = cpp.load_inline("cpp_cuda_header", cpp_sources=source, functions="size")
    assert mod.size() == 8


def test_cpp_that_includes_a_cuda_header_without_cuda_fails_naming_it(monkeypatch):
    def absent(**kwargs):
        raise RuntimeError("CUDA not found")

    monkeypatch.setattr(_cuda_toolkit, "find_cuda", absent)
    source = "#include <cuda_runtime.h>\nint size() { return sizeof(cudaStream_t); }\n"
    with pytest.raises(cpp.BuildError, match=r"^main\.cpp:1:10: fatal error: cuda_runtime\.h: "):
        cpp.load_inline("cpp_no_cuda_header", cpp_sources=source, functions="size")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("#include <cuda.h>", True),
        ("  #  include <cuda_runtime.h>", True),
        ("#include <tvm/ffi/extra/cuda/cubin_launcher.h>", True),
        ("#include <cuda/std/span>", True),
        ("#include <cublas_v2.h>", True),
        ('#include "cuda.h"', False),  # the user's own header
        ("#include <cuchar>", False),
        ("// #include <cuda.h>", False),
    ],
)
def test_which_includes_count_as_cuda(text, expected):
    assert _cuda_toolkit.includes_cuda_header(text + "\n", [], []) is expected


def _hide_everything(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(_cuda_toolkit, "_SYSTEM_ROOTS", (str(tmp_path / "none"),))
    monkeypatch.setattr(_cuda_toolkit, "_VERSIONED_ROOTS", str(tmp_path / "cuda-*"))


def test_missing_cuda_lists_every_place_tried(tmp_path, monkeypatch):
    _hide_everything(tmp_path, monkeypatch)
    monkeypatch.setitem(sys.modules, "cuda.pathfinder", None)  # not installed
    with pytest.raises(RuntimeError) as info:
        _cuda_toolkit.find_cuda(nvcc=True, cudart=True)
    assert str(info.value) == (
        "CUDA not found: this build needs nvcc, the CUDA headers, libcudart, and no CUDA has "
        "all the headers; set CUDA_HOME to a CUDA toolkit, or `pip install "
        "cuda-toolkit[cudart,crt,nvcc,nvvm]` (the wheels nvidia-cuda-runtime, nvidia-cuda-crt, "
        "nvidia-cuda-nvcc, nvidia-nvvm). Tried: "
        "CUDA_HOME (unset), CUDA_PATH (unset), nvcc on PATH (not found), cuda-pathfinder "
        f"(not installed: pip install cuda-pathfinder), {tmp_path}/none (absent), "
        f"{tmp_path}/cuda-* (none)"
    )


def test_missing_cuda_names_what_pathfinder_searched(tmp_path, monkeypatch):
    import cuda.pathfinder as pathfinder

    _hide_everything(tmp_path, monkeypatch)
    monkeypatch.setattr(pathfinder, "locate_nvidia_header_directory", lambda name: None)
    monkeypatch.setattr(pathfinder, "find_nvidia_binary_utility", lambda name: None)
    with pytest.raises(RuntimeError) as info:
        _cuda_toolkit.find_cuda(nvcc=False, cudart=False)
    sites = ", ".join(_cuda_toolkit._site_dirs())
    assert str(info.value) == (
        "CUDA not found: this build needs the CUDA headers, and no CUDA has all the headers; "
        "set CUDA_HOME to a CUDA toolkit, or `pip install cuda-toolkit[cudart,crt,nvcc,nvvm]` "
        "(the wheels nvidia-cuda-runtime, nvidia-cuda-crt, nvidia-cuda-nvcc, nvidia-nvvm). "
        "Tried: CUDA_HOME (unset), "
        "CUDA_PATH (unset), nvcc on PATH (not found), cuda-pathfinder (pip wheels under "
        f"{sites}; conda: CONDA_PREFIX unset; the toolkit of the libcudart the dynamic loader "
        f"finds): no nvcc, no cuda_runtime.h, {tmp_path}/none (absent), {tmp_path}/cuda-* (none)"
    )


def test_a_failing_pathfinder_is_reported_and_passed_over(tmp_path, monkeypatch):
    import cuda.pathfinder as pathfinder

    _hide_everything(tmp_path, monkeypatch)

    def broken(name):
        raise OSError("probe failed")

    monkeypatch.setattr(pathfinder, "find_nvidia_binary_utility", broken)
    with pytest.raises(RuntimeError) as info:
        _cuda_toolkit.find_cuda(nvcc=True, cudart=False)
    assert str(info.value).endswith(
        "nvcc on PATH (not found), cuda-pathfinder (failed: OSError: probe failed), "
        f"{tmp_path}/none (absent), {tmp_path}/cuda-* (none)"
    )


@needs_cuda
def test_what_pathfinder_found_is_remembered_in_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no nvcc on PATH: cuda-pathfinder is asked
    root = tmp_path / "root"
    first = _cuda_toolkit.find_cuda(nvcc=True, cudart=True, cache_root=root)
    assert first.how.startswith("cuda-pathfinder: ")
    (record,) = (root / "toolchain").glob("cuda-*.json")
    assert json.loads(record.read_text())["nvcc"] == str(first.nvcc)
    # A new process: nothing in memory, and cuda-pathfinder cannot even be imported.
    _cuda_toolkit._search.cache_clear()
    monkeypatch.setitem(sys.modules, "cuda.pathfinder", None)
    assert _cuda_toolkit.find_cuda(nvcc=True, cudart=True, cache_root=root) == first
    # A remembered install that is gone is searched for again (and not found here).
    record.write_text(record.read_text().replace(str(first.nvcc), str(tmp_path / "gone")))
    _cuda_toolkit._search.cache_clear()
    _hide_everything(tmp_path, monkeypatch)
    with pytest.raises(RuntimeError, match=r"^CUDA not found: "):
        _cuda_toolkit.find_cuda(nvcc=True, cudart=True, cache_root=root)


@needs_cuda
def test_cache_hit_in_a_new_process_does_not_import_pathfinder(tmp_path):
    script = textwrap.dedent(
        f"""
        import sys
        from tvm_ffi import cpp
        cpp.build_inline("hit", cpp_sources={WRAPPER!r}, embed_cubin={{"kernels": {PTX!r}}})
        print("cuda.pathfinder" in sys.modules)
        """
    )
    env = dict(os.environ, PATH="/usr/bin:/bin", TVM_FFI_CACHE_DIR=str(tmp_path / "c"))
    runs = [
        subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
        ).stdout.strip()
        for _ in range(2)
    ]
    assert runs == ["True", "False"]


def test_import_looks_for_nothing():
    code = (
        "import sys, tvm_ffi, tvm_ffi.cpp, tvm_ffi.cpp.nvrtc\n"
        "assert 'cuda.pathfinder' not in sys.modules and 'cuda' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
