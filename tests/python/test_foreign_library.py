"""load_module on a library built against apache-tvm-ffi's binary ABI says exactly that,
whether the dynamic loader would refuse it or not."""

from __future__ import annotations

import re

import pytest

import tvm_ffi
from tvm_ffi import _apache_abi

# What apache-tvm-ffi's export macro leaves behind: an entry with its signature that
# reports errors through its runtime library.
APACHE_STYLE = r"""
extern "C" int TVMFFIErrorSetRaisedFromCStr(const char* kind, const char* message);
extern "C" __attribute__((visibility("default")))
int __tvm_ffi_add_one(void* self, const void* args, int num_args, void* result) {
  if (num_args != 1) return TVMFFIErrorSetRaisedFromCStr("TypeError", "wrong arity");
  return 0;
}
"""

# A stand-in for apache-tvm-ffi's libtvm_ffi.so.
RUNTIME = r"""
extern "C" __attribute__((visibility("default")))
int TVMFFIErrorSetRaisedFromCStr(const char*, const char*) { return -1; }
"""


def _message(path, evidence: str) -> str:
    return re.escape(
        f"cannot load library '{path}': it was built against apache-tvm-ffi's binary ABI "
        f"({evidence}). tvm-ffi-cubin runs apache-tvm-ffi's source code, not its binaries: "
        "rebuild the library from its sources with this package (tvm_ffi.cpp.load / "
        "tvm_ffi.cpp.build, or CMake's find_package(tvm_ffi))"
    )


@pytest.fixture
def runtime_dir(build_library, tmp_path):
    folder = tmp_path / "apache_lib"
    folder.mkdir()
    build_library("fake_runtime", RUNTIME, out=folder / "libtvm_ffi.so")
    return folder


def test_linked_against_libtvm_ffi_and_loadable(build_library, runtime_dir, tmp_path):
    # The runtime is found through its rpath; the check comes before the dynamic loader.
    lib = build_library(
        "apache_linked",
        APACHE_STYLE,
        out=tmp_path / "libapache_linked.so",
        # --no-as-needed: the fixture puts flags before the source, where -l would be dropped.
        flags=[f"-L{runtime_dir}", "-Wl,--no-as-needed", "-ltvm_ffi", f"-Wl,-rpath,{runtime_dir}"],
    )
    evidence = (
        "it links libtvm_ffi.so and it calls TVMFFIErrorSetRaisedFromCStr from "
        "apache-tvm-ffi's runtime"
    )
    with pytest.raises(OSError, match=f"^{_message(lib, evidence)}$"):
        tvm_ffi.load_module(lib)
    with pytest.raises(OSError, match=f"^{_message(lib, evidence)}$"):
        tvm_ffi.load_module(str(lib), keep_module_alive=False)
    # The loader alone fails obscurely: our libtvm_ffi.so, loaded first, has the same soname,
    # so it stands for the needed runtime, and it lacks apache's functions.
    from tvm_ffi import _core

    with pytest.raises(OSError, match=r"undefined symbol: TVMFFIErrorSetRaisedFromCStr$"):
        _core.load_module(str(lib))


def test_only_calling_into_the_runtime(build_library, tmp_path):
    # No DT_NEEDED (as when libtvm_ffi.so was preloaded): dlopen refuses the undefined symbol.
    lib = build_library("apache_unlinked", APACHE_STYLE, out=tmp_path / "libapache.so")
    evidence = "it calls TVMFFIErrorSetRaisedFromCStr from apache-tvm-ffi's runtime"
    with pytest.raises(OSError, match=f"^{_message(lib, evidence)}$"):
        tvm_ffi.load_module(lib)


def test_a_library_replaced_in_place_is_checked_again(build_library, tmp_path):
    path = tmp_path / "libswap.so"
    build_library("ours", '#include <tvm/ffi/function.h>\nint v() { return 1; }\n'
                  "TVM_FFI_DLL_EXPORT_TYPED_FUNC(v, v);\n", out=path)  # fmt: skip
    assert tvm_ffi.load_module(path).v() == 1
    build_library("apache_swap", APACHE_STYLE, out=path)
    evidence = "it calls TVMFFIErrorSetRaisedFromCStr from apache-tvm-ffi's runtime"
    with pytest.raises(OSError, match=f"^{_message(path, evidence)}$"):
        tvm_ffi.load_module(path)


def test_our_own_libraries_and_other_files_show_no_evidence(build_library, tmp_path):
    ours = build_library(
        "ours_plain",
        "#include <tvm/ffi/container/tensor.h>\n#include <tvm/ffi/extra/c_env_api.h>\n"
        "#include <tvm/ffi/function.h>\n"
        "int64_t n(tvm::ffi::TensorView x) { return x.numel(); }\n"
        "TVM_FFI_DLL_EXPORT_TYPED_FUNC(n, n);\n",
        out=tmp_path / "libours.so",
    )
    assert _apache_abi.apache_evidence(str(ours)) is None
    (tmp_path / "text.so").write_text("not a library")
    assert _apache_abi.apache_evidence(str(tmp_path / "text.so")) is None
    with pytest.raises(OSError, match=r"^cannot load library '.*text\.so': "):
        tvm_ffi.load_module(tmp_path / "text.so")  # the loader's own reason, unchanged
