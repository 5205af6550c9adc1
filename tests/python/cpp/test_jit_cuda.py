"""tvm_ffi.cpp with CUDA: nvcc builds, target archs, embedded images. No GPU needed."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from tvm_ffi import _cuda_toolkit, cpp
from tvm_ffi.cpp import _toolchain


def _cuda_home() -> Path | None:
    try:
        return _toolchain.find_cuda_home()
    except RuntimeError:
        return None


pytestmark = pytest.mark.skipif(_cuda_home() is None, reason="needs the CUDA toolkit (nvcc)")

KERNEL = textwrap.dedent(
    """
    #include <tvm/ffi/function.h>
    __global__ void scale_kernel(float* x, float k, int n) {
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) x[i] *= k;
    }
    int cuda_answer() { return 40 + 2; }
    """
)

# Reads an embedded image back through the symbols the embed step defines.
EMBED_READER = textwrap.dedent(
    """
    #include <tvm/ffi/function.h>
    #include <tvm/ffi/string.h>
    extern "C" const char __tvm_ffi__cubin_blob[];
    extern "C" const char __tvm_ffi__cubin_blob_end[];
    tvm::ffi::Bytes blob() {
      const char* begin = __tvm_ffi__cubin_blob;
      return tvm::ffi::Bytes(begin, __tvm_ffi__cubin_blob_end - begin);
    }
    """
)


@pytest.fixture(autouse=True)
def one_cuda_arch(monkeypatch):
    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", "9.0")  # one arch keeps nvcc fast


def test_cuda_sources_build_load_and_call():
    mod = cpp.load_inline("jit_cuda", cuda_sources=KERNEL, functions=["cuda_answer"])
    assert mod.cuda_answer() == 42


def test_cuda_library_links_cudart_with_rpath():
    path = cpp.build_inline("jit_cuda_deps", cuda_sources=KERNEL, functions=["cuda_answer"])
    dynamic = subprocess.run(
        ["readelf", "-d", path], capture_output=True, text=True, check=True
    ).stdout
    assert "libcudart.so" in dynamic
    cudart = _cuda_toolkit.find_cuda(nvcc=True, cudart=True).cudart
    assert f"[{cudart.parent}]" in dynamic  # the rpath
    assert "libcuda.so" not in dynamic


def test_cpp_and_cuda_sources_together():
    cuda = KERNEL + "int from_cuda() { return cuda_answer() + 1; }\n"
    cpp_src = "int from_cuda();\nint both() { return from_cuda() * 2; }\n"
    mod = cpp.load_inline("jit_mixed", cpp_sources=cpp_src, cuda_sources=cuda, functions=["both"])
    assert mod.both() == 86


def test_arch_list_selects_gencode_and_changes_the_key(monkeypatch):
    first = Path(cpp.build_inline("jit_arch", cuda_sources=KERNEL))
    ninja = (first.parent / "build.ninja").read_text()
    assert "-gencode=arch=compute_90,code=sm_90" in ninja
    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", "8.0 9.0+PTX")
    second = Path(cpp.build_inline("jit_arch", cuda_sources=KERNEL))
    assert second != first
    ninja = (second.parent / "build.ninja").read_text()
    for flag in (
        "-gencode=arch=compute_80,code=sm_80",
        "-gencode=arch=compute_90,code=sm_90",
        "-gencode=arch=compute_90,code=compute_90",
    ):
        assert flag in ninja


def test_arch_list_does_not_key_cpu_modules(monkeypatch):
    first = cpp.build_inline("jit_cpu_only", cpp_sources="int f() { return 1; }")
    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", "8.0")
    assert cpp.build_inline("jit_cpu_only", cpp_sources="int f() { return 1; }") == first


def test_bad_arch_list_is_a_value_error(monkeypatch):
    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", "9.x")
    with pytest.raises(ValueError, match=r"^TVM_FFI_CUDA_ARCH_LIST: cannot parse '9\.x'"):
        cpp.build_inline("jit_bad_arch", cuda_sources=KERNEL)


def test_nvcc_error_first_line():
    source = "__global__ void k(float* x) {\n  x[0] = undeclared_thing;\n}\n"
    with pytest.raises(cpp.BuildError) as info:
        cpp.build_inline("jit_cuda_broken", cuda_sources=source)
    assert (
        str(info.value).splitlines()[0]
        == 'cuda.cu(2): error: identifier "undeclared_thing" is undefined'
    )
    assert "nvcc" in info.value.command


def _ptx(tag: str) -> bytes:
    # The embed step checks that an image is CUBIN, PTX or fatbin; PTX text needs no nvcc.
    return f"// {tag}\n.version 8.0\n.target sm_90\n.address_size 64\n".encode()


def test_embed_cubin_bytes_round_trip_and_rekey():
    image = _ptx("first")
    kwargs = {"cpp_sources": EMBED_READER, "functions": ["blob"]}
    mod = cpp.load_inline("jit_embed", embed_cubin={"blob": image}, **kwargs)
    assert bytes(mod.blob()) == image
    first = cpp.build_inline("jit_embed", embed_cubin={"blob": image}, **kwargs)
    second = cpp.build_inline("jit_embed", embed_cubin={"blob": _ptx("second")}, **kwargs)
    assert first != second
    assert bytes(
        cpp.load_inline("jit_embed", embed_cubin={"blob": _ptx("second")}, **kwargs).blob()
    ) == _ptx("second")


def test_embed_cubin_in_build_directory_rebuilds_on_new_bytes(tmp_path):
    build_dir = tmp_path / "build"
    kwargs = {"cpp_sources": EMBED_READER, "functions": ["blob"], "build_directory": build_dir}
    first = cpp.load_inline("jit_embed_dir", embed_cubin={"blob": _ptx("one")}, **kwargs)
    assert bytes(first.blob()) == _ptx("one")
    second = cpp.load_inline("jit_embed_dir", embed_cubin={"blob": _ptx("two!")}, **kwargs)
    assert bytes(second.blob()) == _ptx("two!")
    assert (build_dir / "embed" / "blob.bin").read_bytes() == _ptx("two!")


def test_embedded_symbols_are_local(tmp_path):
    path = cpp.build_inline(
        "jit_embed_local",
        cpp_sources=EMBED_READER,
        functions=["blob"],
        embed_cubin={"blob": _ptx("x")},
    )
    dynsym = subprocess.run(["nm", "-D", path], capture_output=True, text=True, check=True).stdout
    assert "__tvm_ffi__cubin_blob" not in dynsym
    assert "__tvm_ffi_blob" in dynsym


def test_embed_invalid_image_is_a_build_error():
    with pytest.raises(cpp.BuildError, match=r"not a CUBIN, PTX or fatbin image"):
        cpp.build_inline(
            "jit_embed_bad", cpp_sources=EMBED_READER, embed_cubin={"blob": b"\x01\x02junk"}
        )


def test_embed_per_arch_images_become_one_fatbin(tmp_path):
    kernel = tmp_path / "k.cu"
    kernel.write_text('extern "C" __global__ void k(float* x) { x[0] = 1.0f; }\n')
    nvcc = str(_toolchain.find_cuda_tool("nvcc"))
    images = {}
    for arch in ("sm_80", "sm_90"):
        out = tmp_path / f"k_{arch}.cubin"
        subprocess.run([nvcc, "--cubin", f"-arch={arch}", str(kernel), "-o", str(out)], check=True)
        images[arch] = out.read_bytes()
    mod = cpp.load_inline(
        "jit_fatbin", cpp_sources=EMBED_READER, functions=["blob"], embed_cubin={"blob": images}
    )
    # A fatbin starts with its magic number 0xBA55ED50 (little endian).
    assert bytes(mod.blob())[:4] == b"\x50\xed\x55\xba"


def test_apache_style_cuda_sources_need_no_includes():
    from helpers.apache_sources import ADD_ONE_CUDA, BOTH_CPP

    path = cpp.build_inline("hello_cuda", cuda_sources=ADD_ONE_CUDA, functions=["add_one_cuda"])
    symbols = subprocess.run(["nm", "-D", path], capture_output=True, text=True).stdout
    assert "__tvm_ffi_add_one_cuda" in symbols
    both = cpp.build_inline(
        "hello_both",
        cpp_sources=BOTH_CPP,
        cuda_sources=ADD_ONE_CUDA,
        functions=["add_one_cpu", "add_one_cuda"],
    )
    symbols = subprocess.run(["nm", "-D", both], capture_output=True, text=True).stdout
    assert "__tvm_ffi_add_one_cpu" in symbols and "__tvm_ffi_add_one_cuda" in symbols


def test_output_object_keeps_embedded_images_local(tmp_path):
    obj = tmp_path / "reader.o"
    cpp.build_inline(
        "jit_embed_obj",
        cpp_sources=EMBED_READER,
        functions=["blob"],
        embed_cubin={"blob": _ptx("as object")},
        output=obj,
    )
    table = subprocess.run(["nm", str(obj)], capture_output=True, text=True, check=True).stdout
    kinds = {line.split()[-1]: line.split()[-2] for line in table.splitlines()}
    assert kinds["__tvm_ffi__cubin_blob"] == "r"  # local: two such objects never clash
    assert kinds["__tvm_ffi_blob"] == "T"
    lib = tmp_path / "libreader.so"
    import tvm_ffi.libinfo

    # The object calls the runtime: the user's link names it, as the JIT's own does.
    runtime = ["-L", os.path.dirname(tvm_ffi.libinfo.find_libtvm_ffi()), "-ltvm_ffi"]
    subprocess.run(["c++", "-shared", str(obj), *runtime, "-o", str(lib)], check=True)

    assert bytes(tvm_ffi.load_module(lib).blob()) == _ptx("as object")


def _needed(path: str) -> str:
    return subprocess.run(
        ["readelf", "-d", path], capture_output=True, text=True, check=True
    ).stdout


def test_cudart_is_loaded_only_by_code_that_calls_it():
    # Host-only CUDA sources link cudart as needed: a wrapper that launches through the
    # driver does not load it; one that calls the runtime does.
    quiet = "int plain() { return 1; }\n"
    path = cpp.build_inline("jit_cuda_quiet", cuda_sources=quiet, functions=["plain"])
    assert "libcudart" not in _needed(path)
    calling = (
        "#include <cuda_runtime.h>\nint count() { int n = 0; cudaGetDeviceCount(&n); return n; }\n"
    )
    path = cpp.build_inline("jit_cuda_calling", cuda_sources=calling, functions=["count"])
    assert "Shared library: [libcudart.so" in _needed(path)
