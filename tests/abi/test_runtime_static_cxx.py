"""setup.py refuses a library of the package that carries its own C++ runtime: one linked with
a static libstdc++ (what a compiler without libstdc++.so does, here forced by -static-libstdc++)
or one that exports C++ runtime or unique symbols. Loaded RTLD_GLOBAL, such a runtime made a
later `import torch` end the process (docs/dev/cxx_runtime.md). The refused library is not left
where the next build would take it for up to date."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCE = '#include <string>\nextern "C" __attribute__((visibility("default"))) int demo(int n) {\n'
SOURCE += "  return static_cast<int>(std::string(n, 'x').size());\n}\n"


@pytest.fixture(scope="module")
def setup_module():
    pytest.importorskip("pybind11")  # setup.py's own import
    if shutil.which("c++") is None:
        pytest.skip("needs a C++ compiler (c++)")
    spec = importlib.util.spec_from_file_location("tvm_ffi_setup_for_cxx_check", REPO / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # setup() runs only under __main__
    return module


def build(setup_module, tmp_path: Path, link_args: list[str]) -> Path:
    from setuptools import Distribution

    (tmp_path / "demo.cc").write_text(SOURCE)
    library = setup_module.SharedLibrary(
        "pkg.lib.demo", ["demo.cc"], language="c++", extra_link_args=link_args
    )
    dist = Distribution({"name": "demo", "ext_modules": [library]})
    dist.script_name = "setup.py"
    cmd = setup_module.BuildExt(dist)
    cmd.build_lib, cmd.build_temp = str(tmp_path / "lib"), str(tmp_path / "temp")
    cmd.ensure_finalized()
    cmd.run()
    return tmp_path / "lib" / "pkg" / "lib" / "libdemo.so"


def test_static_libstdcxx_is_refused_and_not_kept(setup_module, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TVM_FFI_ZIG", raising=False)
    with pytest.raises(RuntimeError) as info:
        build(setup_module, tmp_path, ["-static-libstdc++"])
    message = str(info.value)
    assert message.startswith(
        "libdemo.so links the C++ runtime statically (no libstdc++.so or libc++.so among its "
        "DT_NEEDED: "
    )
    tail = (
        ": the compiler has no shared libstdc++. Loaded into a process that also has "
        "libstdc++.so.6 (torch does), such a library can crash it (docs/dev/cxx_runtime.md). "
        "Build with a compiler that links the shared libstdc++ (CXX=/usr/bin/g++, or one whose "
        "`$CXX -print-file-name=libstdc++.so` is a file; "
    )
    assert re.search(re.escape(tail) + r"[\w+./-]+ was used\)$", message), message
    assert not list(tmp_path.rglob("libdemo.so"))
    # The same library linked against libstdc++.so.6 builds and loads.
    import ctypes

    assert ctypes.CDLL(str(build(setup_module, tmp_path, []))).demo(5) == 5


def test_exported_runtime_and_unique_symbols_are_named(setup_module, tmp_path):
    # A static local of an inline function is a unique symbol; an explicit instantiation of a
    # std:: template exports it. Neither is hidden by default visibility.
    source = tmp_path / "leaky.cc"
    source.write_text(
        "#include <vector>\ntemplate class std::vector<int>;\n"
        "inline int& counter() { static int c = 0; return c; }\n"
        'extern "C" int bump() { return ++counter(); }\n'
    )
    lib = tmp_path / "libleaky.so"
    subprocess.run(["c++", "-shared", "-fPIC", str(source), "-o", str(lib)], check=True)
    problem = setup_module.cxx_runtime_problem(str(lib), "c++")
    assert problem.startswith(
        "libleaky.so exports C++ runtime or unique symbols: _ZZ7countervE1c, "
    )
    assert "_ZNKSt12_Vector_baseIiSaIiEE13get_allocatorEv" in problem


def test_the_package_libraries_pass(setup_module):
    import tvm_ffi

    package = Path(tvm_ffi.__file__).parent
    libraries = [package / "lib" / "libtvm_ffi.so", *package.glob("_core*.so")]
    assert len(libraries) == 2
    for lib in libraries:
        assert setup_module.cxx_runtime_problem(str(lib), "c++") is None, lib


def test_a_library_that_uses_no_cxx_runtime_passes_unless_stripped(setup_module, tmp_path):
    # --as-needed drops libstdc++.so from a C++ library that calls nothing of it: no runtime
    # in it, nothing to refuse. Stripped of .symtab, nothing tells: refused as static.
    source = tmp_path / "plain.cc"
    source.write_text(
        'extern "C" __attribute__((visibility("default"))) int plain() { return 7; }\n'
    )
    plain = tmp_path / "libplain.so"
    flags = ["-shared", "-fPIC", "-Wl,--as-needed"]
    subprocess.run(["c++", *flags, str(source), "-o", str(plain)], check=True)
    assert setup_module.cxx_runtime_problem(str(plain), "c++") is None
    static = tmp_path / "libstatic.so"
    source = tmp_path / "static.cc"
    source.write_text(SOURCE)
    subprocess.run(
        ["c++", *flags, "-s", "-static-libstdc++", str(source), "-o", str(static)], check=True
    )
    assert setup_module.cxx_runtime_problem(str(static), "c++").startswith(
        "libstatic.so links the C++ runtime statically"
    )


def test_the_test_runtime_is_checked_before_it_is_cached(tmp_path, monkeypatch):
    # tests/helpers link their own libtvm_ffi.so (and _core_next): one carrying a static C++
    # runtime is refused as the package build refuses it, and not left in the cache.
    from helpers import next_runtime

    real_objects = next_runtime.cache_dir() / "objects"
    next_runtime.build()  # the objects, compiled once
    monkeypatch.setenv("TVM_FFI_NEXT_RUNTIME_CACHE", str(tmp_path))
    (tmp_path / "objects").symlink_to(real_objects)
    monkeypatch.setattr(next_runtime, "LDFLAGS", [*next_runtime.LDFLAGS, "-static-libstdc++"])
    with pytest.raises(RuntimeError) as info:
        next_runtime.build.__wrapped__()
    cxx = os.environ.get("CXX", "c++")
    assert str(info.value).startswith(
        f"the test runtime linked by {cxx} was refused: libtvm_ffi.so links the C++ runtime "
        "statically (no libstdc++.so or libc++.so among its DT_NEEDED: "
    )
    assert str(info.value).endswith(
        "tests would run a library that can crash a later `import torch` "
        "(docs/dev/cxx_runtime.md). Build with a compiler that links the shared libstdc++ "
        "(CXX=/usr/bin/g++)"
    )
    assert not [p for p in tmp_path.rglob("*") if p.name != "objects" and not p.is_dir()]
