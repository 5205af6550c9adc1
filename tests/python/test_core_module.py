"""tvm_ffi.load_module and Module: loading, listing, lookup, the ABI check, reloading.

These use hand-written entries against c_api.h (no export macro), so they pin down the
loader's side of the ABI on its own, including libraries that break it.
"""

from __future__ import annotations

import os
import re
import shutil

import pytest

import tvm_ffi

RAW = r"""
#include <tvm/ffi/c_api.h>

#define EXPORT extern "C" __attribute__((visibility("default")))

// An entry that answers the info query with `info` and otherwise returns VALUE.
#define ENTRY(NAME, ABI, SIGNATURE, VALUE)                                               \
  static TVMFFIFunctionInfo info_##NAME = {ABI, 0, #NAME, SIGNATURE};                    \
  EXPORT int __tvm_ffi_##NAME(const TVMFFICallContext*, const TVMFFIAny*, int32_t n,     \
                              TVMFFIResult* r) {                                         \
    r->owner = 0;                                                                        \
    if (n == TVM_FFI_QUERY_INFO) {                                                       \
      r->value.type_code = kTVMFFIOpaquePtr;                                             \
      r->value.v_ptr = &info_##NAME;                                                     \
      return 0;                                                                          \
    }                                                                                    \
    r->value.type_code = kTVMFFIInt;                                                     \
    r->value.v_int64 = VALUE;                                                            \
    return 0;                                                                            \
  }

ENTRY(version, TVM_FFI_ABI_VERSION, "version() -> int", VERSION)
ENTRY(answer, TVM_FFI_ABI_VERSION, "answer() -> int", 42)
ENTRY(from_the_future, 99, "from_the_future() -> int", 0)

// Does not answer the info query.
EXPORT int __tvm_ffi_mute(const TVMFFICallContext*, const TVMFFIAny*, int32_t,
                          TVMFFIResult* r) {
  r->owner = 0;
  r->value.type_code = kTVMFFINone;
  return -1;
}

// Not listed: embedded CUBIN symbols, hidden functions, other names, data.
EXPORT int __tvm_ffi__cubin_kernels(void) { return 0; }
extern "C" __attribute__((visibility("hidden"))) int __tvm_ffi_hidden(void) { return 0; }
EXPORT int unrelated(void) { return 0; }
EXPORT int __tvm_ffi_data = 1;
"""


@pytest.fixture(scope="module")
def raw_lib(build_library):
    return build_library("raw", RAW, flags=["-DVERSION=1"])


def test_functions_lists_exports_from_dynsym(raw_lib):
    mod = tvm_ffi.load_module(raw_lib)
    assert mod.functions == ["answer", "from_the_future", "mute", "version"]
    assert set(mod.functions) <= set(dir(mod))
    assert mod.path == str(raw_lib.resolve())
    assert repr(mod) == f"<tvm_ffi.Module '{raw_lib.resolve()}'>"


def test_attribute_and_item_give_the_same_function(raw_lib):
    mod = tvm_ffi.load_module(str(raw_lib))
    f = mod.answer
    assert isinstance(f, tvm_ffi.Function)
    assert mod["answer"] is f
    assert f() == 42
    assert f.__name__ == "answer"
    assert f.__doc__ == f.signature == "answer() -> int"
    assert repr(f) == "<tvm_ffi.Function answer() -> int>"
    assert "answer" in mod
    assert "nope" not in mod


def test_unknown_function_raises_attribute_and_key_error(raw_lib):
    mod = tvm_ffi.load_module(raw_lib)
    expected = (
        f"module '{raw_lib.resolve()}' has no function 'nope'; "
        "functions in this module: answer, from_the_future, mute, version"
    )
    with pytest.raises(AttributeError, match=f"^{re.escape(expected)}$"):
        mod.nope  # noqa: B018
    with pytest.raises(KeyError) as info:
        mod["nope"]
    assert info.value.args == (expected,)
    with pytest.raises(TypeError, match=r"^module function names are str, not int$"):
        mod[0]


def test_names_with_a_nul_byte_name_nothing(raw_lib):
    """Issue 28, item 13: dlsym would look the name up cut at the NUL ('answer')."""
    mod = tvm_ffi.load_module(raw_lib)
    expected = (
        f"module '{raw_lib.resolve()}' has no function 'answer\\x00zzz' (the name holds a NUL byte)"
    )
    with pytest.raises(KeyError) as info:
        mod["answer\0zzz"]
    assert info.value.args == (expected,)
    with pytest.raises(AttributeError, match=f"^{re.escape(expected)}$"):
        getattr(mod, "answer\0zzz")
    assert "answer\0zzz" not in mod


def test_unlisted_symbols_are_not_functions(raw_lib):
    mod = tvm_ffi.load_module(raw_lib)
    for name in ("_cubin_kernels", "hidden", "unrelated", "data"):
        assert name not in mod
    with pytest.raises(AttributeError):
        mod.__tvm_ffi_data  # noqa: B018


def test_abi_version_mismatch_is_a_clear_error(raw_lib):
    mod = tvm_ffi.load_module(raw_lib)
    message = (
        f"function 'from_the_future' in '{raw_lib.resolve()}' was built for TVM-FFI ABI "
        f"version 99, but this tvm_ffi speaks ABI version {tvm_ffi._core.ABI_VERSION}; "
        "rebuild the library against this tvm_ffi's headers"
    )
    with pytest.raises(RuntimeError, match=f"^{re.escape(message)}$"):
        mod.from_the_future  # noqa: B018


@pytest.mark.parametrize("abi", [1, 2, 3])
def test_every_abi_version_up_to_ours_loads(build_library, abi):
    # Each version only adds to the one before, so older libraries keep working.
    source = RAW.split("ENTRY(version")[0] + f'ENTRY(old, {abi}, "old() -> int", {abi})\n'
    assert tvm_ffi.load_module(build_library(f"abi_v{abi}", source)).old() == abi


def test_entry_without_info_is_rejected(raw_lib):
    mod = tvm_ffi.load_module(raw_lib)
    with pytest.raises(RuntimeError, match=r"^function 'mute' in .* did not answer the TVM-FFI"):
        mod["mute"]


def test_loading_twice_shares_functions(raw_lib):
    a = tvm_ffi.load_module(raw_lib)
    b = tvm_ffi.load_module(os.fspath(raw_lib))
    assert a["answer"] is b["answer"]


def test_missing_file_raises_file_not_found(tmp_path):
    missing = tmp_path / "libmissing.so"
    with pytest.raises(FileNotFoundError, match=r"libmissing\.so"):
        tvm_ffi.load_module(missing)


def test_not_a_library_raises_os_error_with_loader_reason(tmp_path):
    bogus = tmp_path / "libbogus.so"
    bogus.write_text("not an ELF file")
    with pytest.raises(OSError, match=f"^cannot load library '{re.escape(str(bogus))}': .+"):
        tvm_ffi.load_module(bogus)


def test_rebuilt_library_is_reloaded(build_library, tmp_path):
    path = tmp_path / "libversioned.so"
    build_library("v1", RAW, out=path, flags=["-DVERSION=1"])
    first = tvm_ffi.load_module(path)
    old = first.version
    assert old() == 1
    assert tvm_ffi.load_module(path).version is old  # unchanged file: same library

    build_library("v2", RAW, out=path, flags=["-DVERSION=2"])
    second = tvm_ffi.load_module(path)
    assert second.version() == 2
    assert second.path == first.path
    assert old() == 1  # the first image stays loaded: functions never dangle

    # Replacing the file by another one (new inode) also counts as a rebuild.
    staged = build_library("v3", RAW, out=tmp_path / "staged.so", flags=["-DVERSION=3"])
    shutil.copystat(path, staged)
    os.replace(staged, path)
    assert tvm_ffi.load_module(path).version() == 3
    assert not list(tmp_path.glob("tvm_ffi_reload_*"))


def test_private_copies_are_cleaned_up(build_library, tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    path = tmp_path / "libclean.so"
    build_library("c1", RAW, out=path, flags=["-DVERSION=1"])
    tvm_ffi.load_module(path)
    build_library("c2", RAW, out=path, flags=["-DVERSION=2"])
    assert tvm_ffi.load_module(path).version() == 2
    assert list((tmp_path / "tmp").iterdir()) == []


def test_function_is_not_constructible_or_subclassable():
    with pytest.raises(TypeError):
        tvm_ffi.Function()
    with pytest.raises(TypeError):
        type("Sub", (tvm_ffi.Function,), {})
