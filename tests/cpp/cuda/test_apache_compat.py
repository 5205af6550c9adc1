"""The apache-tvm-ffi names of the CUDA headers, without a GPU: wrapper code written for
apache-tvm-ffi compiles (g++ and nvcc, -Wall -Wextra -Werror), ConstructLaunchConfig and the
embed macros behave as documented, TVM_FFI_CUBIN_LAUNCHER_USE_DRIVER_API=0 is refused with a
clear error, embedded modules stay private to their library, and the headers' thread-locals
fit in a shared object built without -fPIC."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]


@pytest.mark.slow_compile
@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_apache_style_code_compiles_with_gxx(toolchain, opt, tmp_path):
    proc = toolchain.gxx(HERE / "apache_style.cc", tmp_path / "out.o", "-c", opt)
    assert proc.returncode == 0, proc.stderr


def test_apache_style_code_compiles_with_nvcc(toolchain, tmp_path):
    proc = toolchain.nvcc_compile(HERE / "apache_style.cc", tmp_path / "out.o")
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow_compile
@pytest.mark.parametrize(
    "header",
    [
        "tvm/ffi/extra/cuda/base.h",
        "tvm/ffi/extra/cuda/device_guard.h",
        "tvm/ffi/extra/cuda/internal/unified_api.h",
        "tvm/ffi/extra/cuda/launch_config.h",
        "tvm/ffi/extra/cuda/embed_cubin.h",
    ],
)
def test_each_header_compiles_alone(toolchain, header, tmp_path):
    source = tmp_path / "one.cc"
    source.write_text(f"#include <{header}>\n")
    proc = toolchain.gxx(source, tmp_path / "one.o", "-c", "-Wpedantic")
    assert proc.returncode == 0, proc.stderr


def test_driver_api_macro_is_one(toolchain, tmp_path):
    source = tmp_path / "macro.cc"
    source.write_text(
        "#include <tvm/ffi/extra/cuda/cubin_launcher.h>\n"
        'static_assert(TVM_FFI_CUBIN_LAUNCHER_USE_DRIVER_API == 1, "");\n'
    )
    proc = toolchain.gxx(source, tmp_path / "macro.o", "-c")
    assert proc.returncode == 0, proc.stderr
    proc = toolchain.gxx(
        source, tmp_path / "macro.o", "-c", "-DTVM_FFI_CUBIN_LAUNCHER_USE_DRIVER_API=1"
    )
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow_compile
@pytest.mark.parametrize("compiler", ["gxx", "nvcc"])
def test_runtime_api_request_is_an_error(toolchain, compiler, tmp_path):
    source = tmp_path / "runtime.cc"
    source.write_text("#include <tvm/ffi/extra/cuda/cubin_launcher.h>\n")
    flag = "-DTVM_FFI_CUBIN_LAUNCHER_USE_DRIVER_API=0"
    if compiler == "gxx":
        proc = toolchain.gxx(source, tmp_path / "runtime.o", "-c", flag)
    else:
        proc = toolchain.nvcc_compile(source, tmp_path / "runtime.o", flag)
    assert proc.returncode != 0
    assert (
        "TVM_FFI_CUBIN_LAUNCHER_USE_DRIVER_API is 0, but this package (tvm-ffi-cubin) launches "
        "kernels through the CUDA driver API only" in proc.stderr
    ), proc.stderr
    assert "Remove the definition (or define it to 1)." in proc.stderr
    # The #error stops the compile: no cascade of errors from the rest of the header.
    assert proc.stderr.count("error") <= 3, proc.stderr


def test_compat_names_at_run_time(toolchain, has_driver, tmp_path):
    exe = tmp_path / "compat_run"
    proc = toolchain.gxx(HERE / "compat_run.cc", exe, "-ldl")
    assert proc.returncode == 0, proc.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    lines = dict(line.split(": ", 1) for line in out.splitlines())
    # ConstructLaunchConfig: a cluster above 1 is the one attribute, stored in `attr`.
    assert lines["cluster 4"] == (
        "result 0 grid 8 2 1 block 128 1 1 smem 4096 stream 0x1234 attrs 1 "
        "[id 4 cluster 4 1 1, points at attr: yes]"
    )
    assert lines["cluster 1"] == (
        "result 0 grid 8 2 1 block 128 1 1 smem 4096 stream 0x1234 attrs 0 [attrs null]"
    )
    assert lines["cluster 0"].startswith("result 1 ")  # CUDA_ERROR_INVALID_VALUE
    # LaunchEx(args, cudaLaunchConfig_t): the same launch, the caller's attributes in place.
    assert lines["runtime config"] == (
        "grid 6 1 1 block 64 2 1 smem 512 stream 0x1234 attrs 2 [id 2 cooperative 1] "
        "[id 4 cluster 2] shared: yes"
    )
    assert lines["runtime config on an empty kernel"] == "400"  # CUDA_ERROR_INVALID_HANDLE
    # FROM_BYTES: the array's size is sizeof(array), whatever its element type; the label is
    # the embed name. Validation runs before the driver is needed, so this holds everywhere.
    for case, name in [
        ("bytes", "truncated_bytes"),
        ("bytes again", "truncated_bytes"),
        ("words", "truncated_words"),
    ]:
        assert re.fullmatch(
            rf'ValueError: cannot load embedded module "{name}": truncated or corrupt CUBIN '
            r"image: .*\b1000 bytes",
            lines[case],
        ), lines[case]
    assert lines["unsized"] == (
        'ValueError: cannot load embedded module "not_an_image": not a CUBIN, PTX or fatbin '
        "image (first bytes: 12 34 56 78)"
    )
    assert lines["check success"] == "no error"
    if has_driver:
        return
    assert lines["guard"].startswith(
        "RuntimeError: cannot load the CUDA driver library libcuda.so.1 ("
    )
    assert lines["check"] == (
        "RuntimeError: CUDA driver error (1): no description (the CUDA driver could not be loaded)"
    )
    assert lines["error string"] == (
        "CUDA driver error: no description (the CUDA driver could not be loaded)"
    )


def _dynamic_symbols(lib: Path) -> str:
    return subprocess.run(
        ["readelf", "--dyn-syms", "-W", str(lib)], capture_output=True, text=True, check=True
    ).stdout


def test_embedded_modules_stay_in_their_library(toolchain, tmp_path):
    """Both macros' structs, singletons and symbols are hidden: a second library embedding the
    same name cannot bind to (or interpose) this one's module."""
    if shutil.which("readelf") is None:
        pytest.skip("needs binutils")
    source = tmp_path / "embeds.cc"
    source.write_text(
        "#include <tvm/ffi/extra/cuda/cubin_launcher.h>\n"
        "static const unsigned char image[] = {1, 2, 3, 4};\n"
        "TVM_FFI_EMBED_CUBIN(shared_name);\n"
        "TVM_FFI_EMBED_CUBIN_FROM_BYTES(other_name, image);\n"
        'extern "C" const char __tvm_ffi__cubin_shared_name[] = "x";\n'
        'extern "C" const char __tvm_ffi__cubin_shared_name_end[] = "";\n'
        'extern "C" __attribute__((visibility("default"))) const void* Touch() {\n'
        "  return &EmbedCubinModule_shared_name::Global()->mod;\n"
        "}\n"
        'extern "C" __attribute__((visibility("default"))) const void* TouchOther() {\n'
        "  return &TVM_FFI_EMBED_CUBIN_GET_MODULE(other_name);\n"
        "}\n"
    )
    lib = tmp_path / "libembeds.so"
    proc = toolchain.gxx(source, lib, "-shared", "-ldl")
    assert proc.returncode == 0, proc.stderr
    symbols = _dynamic_symbols(lib)
    assert " Touch" in symbols and " TouchOther" in symbols  # the check can see exports
    leaked = [
        line
        for line in symbols.splitlines()
        if "EmbedCubinModule" in line or "__tvm_ffi__cubin" in line
    ]
    assert not leaked, "\n".join(leaked)


# ---- thread-locals in a shared object built without -fPIC --------------------------------


def _tls_relocations(obj: Path) -> list[tuple[str, str]]:
    """(relocation type, demangled symbol) of every TLS relocation in `obj`."""
    out = subprocess.run(
        ["readelf", "-rW", str(obj)], capture_output=True, text=True, check=True
    ).stdout
    found = []
    for line in out.splitlines():
        match = re.search(r"\b(R_X86_64_\w*(?:TPOFF|TLS|DTPOFF)\w*)\s+\w+\s+(\S+)", line)
        if match:
            found.append((match[1], match[2]))
    return found


@pytest.mark.slow_compile
@pytest.mark.parametrize("mode", ["-fPIE", "-fno-pic", "nvcc"])
def test_launch_failure_record_uses_a_shared_object_tls_model(toolchain, mode, tmp_path):
    """The per-thread record of the last failed launch is reached through __tls_get_addr
    (TLSGD) however the code is compiled, never local-exec (TPOFF32), which a shared object
    cannot hold: g++ without -fPIC on a default-PIE compiler is -fPIE."""
    if shutil.which("readelf") is None:
        pytest.skip("needs binutils")
    obj = tmp_path / "guide.o"
    source = HERE / "guide_embedded.cc"
    if mode == "nvcc":
        proc = toolchain.nvcc_compile(source, obj, "-Xcompiler", "-fPIE")
    else:
        proc = toolchain.gxx(source, obj, "-c", mode, pic=False)
    assert proc.returncode == 0, proc.stderr
    relocations = [(kind, sym) for kind, sym in _tls_relocations(obj) if "LastLaunchFailure" in sym]
    assert relocations, "the guide's code reaches the launch failure record"
    assert {kind for kind, _ in relocations} == {"R_X86_64_TLSGD"}, relocations


def test_guide_link_line_without_fpic(toolchain, tmp_path):
    """The guide's `g++ -o mylib.so -shared mycode.cc kernel_data.o -Wl,-z,noexecstack -lcuda`
    (include paths added): no TLS relocation of ours stops the link; what remains, when the
    compiler defaults to PIE, is libstdc++'s code asking for -fPIC, and ld says so."""
    for tool in ("ld", "objcopy"):
        if shutil.which(tool) is None:
            pytest.skip("needs binutils")
    # An image by hand, as the guide makes it (content does not matter for linking).
    (tmp_path / "k.cubin").write_bytes(b"\x7fELF" + bytes(60))
    subprocess.run(
        ["ld", "-r", "-b", "binary", "-o", "kernel_data.o", "k.cubin"], cwd=tmp_path, check=True
    )
    subprocess.run(
        [
            "objcopy",
            "--rename-section",
            ".data=.rodata,alloc,load,readonly,data,contents",
            "--redefine-sym",
            "_binary_k_cubin_start=__tvm_ffi__cubin_my_kernels",
            "--redefine-sym",
            "_binary_k_cubin_end=__tvm_ffi__cubin_my_kernels_end",
            "kernel_data.o",
        ],
        cwd=tmp_path,
        check=True,
    )
    shutil.copy(HERE / "guide_embedded.cc", tmp_path / "mycode.cc")
    # -lcuda needs a libcuda.so to find; a machine without a driver gets an empty stand-in.
    stub = tmp_path / "stub"
    stub.mkdir()
    (stub / "empty.c").write_text("")
    subprocess.run(
        ["cc", "-shared", "-o", str(stub / "libcuda.so"), str(stub / "empty.c")], check=True
    )
    cmd = [toolchain.cxx, "-std=c++17", "-o", "mylib.so", "-shared", "mycode.cc", "kernel_data.o"]
    cmd += ["-Wl,-z,noexecstack", "-lcuda", f"-L{stub}"]
    cmd += [f"-I{REPO / 'include'}", f"-I{toolchain.cuda_home / 'include'}"]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
    assert "TPOFF32" not in proc.stderr, proc.stderr
    if proc.returncode != 0:
        errors = [
            line for line in proc.stderr.splitlines() if "can not be used when making" in line
        ]
        assert errors and all(line.endswith("recompile with -fPIC") for line in errors), proc.stderr
        assert not any("tvm" in line for line in errors), proc.stderr
