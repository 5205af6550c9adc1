"""tvm_ffi.load_module and Module: loading, listing, lookup, the ABI check, reloading.

These use hand-written safe-call entries against c_api.h (no export macro), so they pin down
the loader's side of the ABI on its own, including libraries of the previous ABI.
"""

from __future__ import annotations

import gc
import os
import re
import shutil
import subprocess

import pytest

import tvm_ffi

RAW = r"""
#include <tvm/ffi/c_api.h>

#define EXPORT extern "C" __attribute__((visibility("default")))

// A safe-call entry returning VALUE. It fails through the runtime when given arguments, so a
// library of these imports the runtime's error functions, as every library of the C ABI does.
#define ENTRY(NAME, VALUE)                                                               \
  EXPORT int __tvm_ffi_##NAME(void*, const TVMFFIAny*, int32_t n, TVMFFIAny* r) {       \
    if (n != 0) {                                                                        \
      TVMFFIErrorSetRaisedFromCStr("TypeError", #NAME "() takes no arguments");          \
      return -1;                                                                         \
    }                                                                                    \
    r->type_index = kTVMFFIInt;                                                          \
    r->zero_padding = 0;                                                                 \
    r->v_int64 = VALUE;                                                                  \
    return 0;                                                                            \
  }

// Its metadata export: the signature NAME() -> int.
#define METADATA(NAME)                                                                   \
  EXPORT int __tvm_ffi__metadata_##NAME(void*, const TVMFFIAny*, int32_t, TVMFFIAny* r) { \
    static const char text[] = R"({"type_schema":"{\"type\":\"ffi.Function\",)"       \
        R"(\"named_args\":{\"return\":[{\"type\":\"int\"}],\"params\":[]}}"})";       \
    TVMFFIByteArray bytes = {text, sizeof(text) - 1};                                     \
    return TVMFFIStringFromByteArray(&bytes, r);                                         \
  }

ENTRY(version, VERSION)
METADATA(version)
ENTRY(answer, 42)
METADATA(answer)
ENTRY(bare, 7)  // no metadata: no signature stated

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
    assert mod.functions == ["answer", "bare", "version"]
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
        "functions in this module: answer, bare, version"
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


def test_a_function_without_metadata_states_no_signature(raw_lib):
    f = tvm_ffi.load_module(raw_lib).bare
    assert f() == 7
    assert f.signature == f.__doc__ == "bare"
    assert f.num_args == -1
    assert str(f.__signature__) == "(*args)"
    assert repr(f) == "<tvm_ffi.Function bare>"


def test_errors_name_function_and_library(raw_lib):
    with pytest.raises(TypeError) as info:
        tvm_ffi.load_module(raw_lib).answer(1)
    # The message is the callee's; a note names where it came from (tracebacks print it).
    assert str(info.value) == "answer() takes no arguments"
    assert info.value.__notes__ == [f"in function 'answer' of library '{raw_lib.resolve()}'"]


# What a library of ABI v3 exported (the previous core's library.cc read it): entries answering
# an info query, and weak references to the v3 registry when it used it.
V3_LIBRARY = r"""
#define EXPORT extern "C" __attribute__((visibility("default")))
struct Info { int abi_version, num_args; const char *name, *signature; };
EXPORT int __tvm_ffi_answer(const void*, const void*, int n, void* r) { return n == -1 ? 0 : 42; }
#ifdef USES_REGISTRY
extern "C" __attribute__((weak)) int TVMFFIFunctionSetGlobal(const char*, void*, int);
extern "C" __attribute__((weak)) void* TVMFFITypeGetMember(const char*, const char*);
EXPORT int __tvm_ffi_registers(const void*, const void*, int, void*) {
  return TVMFFITypeGetMember ? TVMFFIFunctionSetGlobal("x", TVMFFITypeGetMember("t", "m"), 0) : 0;
}
#endif
"""


@pytest.mark.parametrize("registry", [False, True], ids=["plain", "registry"])
def test_a_library_of_abi_v3_is_refused_with_a_rebuild_message(tmp_path, registry):
    # Built without the runtime, as v3 libraries were (-ltvm_ffi was optional).
    src = tmp_path / "v3.cc"
    src.write_text(V3_LIBRARY)
    lib = tmp_path / "libv3.so"
    flags = ["-DUSES_REGISTRY"] if registry else []
    cmd = [os.environ.get("CXX", "c++"), "-shared", "-fPIC", *flags, str(src), "-o", str(lib)]
    subprocess.run(cmd, check=True)
    evidence = (
        "it imports TVMFFITypeGetMember, which only ABI v3 had"
        if registry
        else "it exports TVM-FFI functions (answer) but neither links libtvm_ffi.so nor calls "
        "into it, as every library built with the tvm-ffi C ABI headers does"
    )
    with pytest.raises(OSError) as info:
        tvm_ffi.load_module(lib)
    assert str(info.value) == (
        f"cannot load library '{lib}': it was built for tvm_ffi's previous ABI (ABI v3, before "
        f"the switch to the tvm-ffi C ABI of apache-tvm-ffi 0.1: {evidence}); rebuild it from "
        "its sources with this package (tvm_ffi.cpp.load / tvm_ffi.cpp.build, or CMake's "
        "find_package(tvm_ffi)), which links libtvm_ffi.so"
    )


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


# Registers two global functions the way a rebuilt library registers them again.
GLOBALS = r"""
#include <tvm/ffi/function.h>
#include <tvm/ffi/reflection/registry.h>

#include <cstdint>

int64_t Version() { return VERSION; }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(version, Version);
TVM_FFI_STATIC_INIT_BLOCK() {
  tvm::ffi::Function::SetGlobal("test.core_module.replaced",
                                tvm::ffi::Function::FromTyped(Version), /*can_override=*/true);
}
TVM_FFI_STATIC_INIT_BLOCK() {
  tvm::ffi::reflection::GlobalDef().def("test.core_module.kept", Version);
}
"""


def test_a_rebuilt_library_wins_where_apache_tvm_ffi_lets_it(build_library, tmp_path, capfd):
    """Its exported functions and the globals it registers with override are the new build's.
    GlobalDef registers without override: apache-tvm-ffi's runtime throws inside dlopen there
    (the process aborts); here the block's failure is printed and the first build's global stays.
    The first build stays loaded, so its functions still run."""
    first = tvm_ffi.load_module(build_library("g1", GLOBALS, flags=["-DVERSION=1"]))
    replaced = tvm_ffi.get_global_func("test.core_module.replaced")
    capfd.readouterr()
    second = tvm_ffi.load_module(build_library("g2", GLOBALS, flags=["-DVERSION=2"]))
    stderr = capfd.readouterr().err
    assert (first.version(), second.version()) == (1, 2)
    assert tvm_ffi.get_global_func("test.core_module.replaced")() == 2
    assert replaced() == 1  # fetched before: the first build's code, still loaded
    assert tvm_ffi.get_global_func("test.core_module.kept")() == 1
    assert stderr.endswith(
        ": TVM_FFI_STATIC_INIT_BLOCK failed: RuntimeError: global function "
        "'test.core_module.kept' is already registered (by another library, or by an earlier "
        "build of this one); a registration with override (Function::SetGlobal(name, f, true)) "
        "replaces it\n"
    )
    del first, replaced
    gc.collect()
    assert tvm_ffi.get_global_func("test.core_module.kept")() == 1


def test_private_copies_are_cleaned_up(build_library, tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    path = tmp_path / "libclean.so"
    build_library("c1", RAW, out=path, flags=["-DVERSION=1"])
    tvm_ffi.load_module(path)
    build_library("c2", RAW, out=path, flags=["-DVERSION=2"])
    assert tvm_ffi.load_module(path).version() == 2
    assert list((tmp_path / "tmp").iterdir()) == []


def test_function_constructs_empty_and_is_subclassable():
    # apache-tvm-ffi's Function is both (the CuTe DSL derives from it): an empty one has no
    # handle and refuses to be called.
    with pytest.raises(TypeError, match=r"^Function\(\) takes no arguments$"):
        tvm_ffi.Function(1)
    empty = type("Sub", (tvm_ffi.Function,), {})()
    assert repr(empty) == "<tvm_ffi.Function (empty)>"
    with pytest.raises(ValueError, match=r"^cannot call an empty Function \(it has no handle\)$"):
        empty()
