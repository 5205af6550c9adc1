"""What the new runtime's libtvm_ffi.so shows the dynamic linker: exactly the 50 C functions
that include/ declares (apache-tvm-ffi 0.1.15.post2 exports the same 50) plus our
private TVMFFICubin* entries, unversioned, under the soname libtvm_ffi.so, and nothing of its
C++ internals or of libstdc++ (which stays a shared dependency); the only C++ names are the
out-of-line members of ModuleObj and Module and ModuleObj's vtable and typeinfo, which libraries
built with apache's headers or ours import."""

from __future__ import annotations

import re
import subprocess

from helpers import apache_wheel, next_runtime

HEADERS = [
    next_runtime.INCLUDE / "tvm" / "ffi" / "c_api.h",
    next_runtime.INCLUDE / "tvm" / "ffi" / "extra" / "c_env_api.h",
]
PRIVATE = {"TVMFFICubinEnvPushFrame", "TVMFFICubinEnvPopFrame", "TVMFFICubinEnvThreadFrames"}
#: The ModuleObj and Module members both header sets call out of line (module.cc,
#: cxx_module.cc), and ModuleObj's vtable and typeinfo (a module class defined in a library).
MODULE_MEMBERS = {
    "_ZN3tvm3ffi9ModuleObj11GetFunctionERKNS0_6StringEb",
    "_ZN3tvm3ffi9ModuleObj18ImplementsFunctionERKNS0_6StringEb",
    "_ZN3tvm3ffi9ModuleObj14GetFunctionDocERKNS0_6StringEb",
    "_ZN3tvm3ffi9ModuleObj19GetFunctionMetadataERKNS0_6StringEb",
    "_ZN3tvm3ffi9ModuleObj12ClearImportsEv",
    "_ZN3tvm3ffi9ModuleObj12ImportModuleERKNS0_6ModuleE",
    "_ZN3tvm3ffi6Module12LoadFromFileERKNS0_6StringE",
    "_ZN3tvm3ffi6Module19VisitContextSymbolsERKNS0_13TypedFunctionIFvNS0_6StringEPvEEE",
    "_ZTVN3tvm3ffi9ModuleObjE",
    "_ZTIN3tvm3ffi9ModuleObjE",
    "_ZTSN3tvm3ffi9ModuleObjE",
}


def declared() -> set[str]:
    text = "".join(h.read_text() for h in HEADERS)
    return set(re.findall(r"TVM_FFI_DLL\b[^;(]*?\b(TVMFFI\w+)\s*\(", text))


def dynamic_symbols(lib) -> list[str]:
    out = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return [line.split()[-1] for line in out.stdout.splitlines() if line.strip()]


def test_exports_are_the_c_abi_and_nothing_else():
    assert len(declared()) == 50
    assert set(dynamic_symbols(next_runtime.build())) == declared() | PRIVATE | MODULE_MEMBERS


def test_same_c_functions_as_apache():
    wheel = apache_wheel.require_wheel()
    apache = {
        s for s in dynamic_symbols(apache_wheel.runtime_path(wheel)) if s.startswith("TVMFFI")
    }
    assert apache == declared()


def test_unversioned_with_soname():
    lib = next_runtime.build()
    names = dynamic_symbols(lib)
    assert not [n for n in names if "@" in n]
    dyn = subprocess.run(["readelf", "-d", "-W", str(lib)], capture_output=True, text=True).stdout
    assert "(SONAME)             Library soname: [libtvm_ffi.so]" in dyn
    assert "Shared library: [libstdc++.so.6]" in dyn
    sections = subprocess.run(["readelf", "-S", "-W", str(lib)], capture_output=True, text=True)
    assert ".gnu.version_d" not in sections.stdout  # no version definitions of its own
