"""The compiled core builds the same everywhere: no CUDA toolkit is looked for, the driver
names it uses come from src/python/cuda_decls (checked here against the real toolkit headers),
and every build has tvm_ffi.cuda's launcher. The setup.py mechanics (objects kept per build
settings) are checked on its own functions."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tvm_ffi import _core

REPO = Path(__file__).resolve().parents[2]
DECLS = REPO / "src" / "python" / "cuda_decls"
# The toolkit headers the launcher headers include; the core must get every one from DECLS.
TOOLKIT_HEADERS = {"cuda.h", "cuda_runtime.h", "driver_types.h"}


def _setup_module():
    import pybind11  # noqa: F401 (setup.py's own import; in the test extra)

    spec = importlib.util.spec_from_file_location("tvm_ffi_setup_under_test", REPO / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # setup() runs only under __main__
    return module


def _cxx() -> str:
    cxx = os.environ.get("CXX", "c++").split()[0]
    if shutil.which(cxx) is None:
        pytest.skip(f"needs a C++ compiler ({cxx})")
    return cxx


def _find_toolkit_include() -> Path | None:
    from tvm_ffi.cpp._toolchain import find_cuda_home

    try:
        include = find_cuda_home() / "include"
    except RuntimeError:
        return None
    return include if (include / "cuda.h").is_file() else None


def _toolkit_include() -> Path:
    include = _find_toolkit_include()
    if include is None:
        pytest.skip("needs the CUDA toolkit headers (cuda.h)")
    return include


def _core_flags(setup_module) -> list[str]:
    core = setup_module.CORE
    import pybind11

    flags = [f"-I{REPO / d}" for d in core.include_dirs]
    flags += [f"-I{pybind11.get_include()}", f"-I{sysconfig.get_paths()['include']}"]
    flags += [f"-D{name}={value}" for name, value in core.define_macros]
    return [*flags, "-std=c++17"]


def test_core_sources_never_see_a_cuda_toolkit():
    """Every core source, preprocessed with setup.py's flags in an environment that offers a
    toolkit (CPATH), takes each CUDA header from cuda_decls and nothing from the toolkit."""
    setup_module = _setup_module()
    cxx = _cxx()
    env = dict(os.environ)
    # No toolkit on this machine: nothing to shadow, and the check still runs.
    offered = [str(p) for p in [_find_toolkit_include()] if p is not None]
    env["CPATH"] = os.pathsep.join(offered)
    assert setup_module.CORE.sources, "setup.py lists no core sources"
    for source in setup_module.CORE.sources:
        proc = subprocess.run(
            [cxx, "-M", *_core_flags(setup_module), str(REPO / source)],
            capture_output=True,
            text=True,
            env=env,
            cwd=REPO,
            check=False,
        )
        assert proc.returncode == 0, f"{source}: {proc.stderr}"
        deps = [Path(d) for d in proc.stdout.replace("\\\n", " ").split()[1:]]
        from_toolkit = [d for d in deps if any(str(d).startswith(o + os.sep) for o in offered)]
        assert from_toolkit == [], f"{source} includes toolkit headers"
        cuda = {d.name: d.resolve().parent for d in deps if d.name in TOOLKIT_HEADERS}
        assert set(cuda.values()) <= {DECLS}, f"{source}: {cuda}"
    # The launcher's two sources do include them (else this test checks nothing).
    proc = subprocess.run(
        [cxx, "-M", *_core_flags(setup_module), str(REPO / "src/python/cuda/cuda_launch.cc")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert str(DECLS / "cuda.h") in proc.stdout
    assert str(DECLS / "cuda_runtime.h") in proc.stdout


# The probe prints one line per fact; built once against cuda_decls, once against the toolkit.
def _probe_source() -> tuple[str, int]:
    text = "\n".join((DECLS / name).read_text() for name in sorted(TOOLKIT_HEADERS))
    constants = re.findall(r"^\s+((?:CU|CUDA_|cuda)\w+) = ", text, re.M)
    functions = re.findall(r"^CUresult (cu\w+)\(", text, re.M)
    lines = []
    for name in constants:
        lines.append(f'  std::printf("%s %lld\\n", "{name}", (long long){name});')
    for name in functions:
        lines.append(f'  std::printf("%s %s\\n", "{name}", typeid(decltype(&::{name})).name());')
    aggregates = {
        "CUlaunchConfig": re.search(r"struct CUlaunchConfig_st \{(.*?)\}", text, re.S),
        "CUlaunchAttribute": re.search(r"struct CUlaunchAttribute_st \{(.*?)\}", text, re.S),
        "CUlaunchAttributeValue": re.search(
            r"union CUlaunchAttributeValue_union \{(.*?)\} CU", text, re.S
        ),
        "dim3": re.search(r"struct dim3 \{\s*unsigned int (x, y, z);", text, re.S),
    }
    for type_name, match in aggregates.items():
        assert match, type_name
        lines.append(f'  std::printf("sizeof({type_name}) %zu\\n", sizeof({type_name}));')
        lines.append(f'  std::printf("alignof({type_name}) %zu\\n", alignof({type_name}));')
        body = re.sub(r"struct \{[^}]*\}", "", match.group(1))  # nested: checked below
        members = re.findall(r"(\w+)(?:\[[^\]]*\])?;", body)
        members += re.findall(r"\}\s*(\w+);", match.group(1))
        if type_name == "dim3":
            members = ["x", "y", "z"]
        for member in members:
            if member == "align_":  # ours only: keeps the union pointer-aligned
                continue
            lines.append(
                f'  std::printf("offsetof({type_name}.{member}) %zu\\n", '
                f"offsetof({type_name}, {member}));"
            )
    lines.append(
        '  std::printf("clusterDim.z %zu\\n", offsetof(CUlaunchAttributeValue, clusterDim.z));'
    )
    body = "\n".join(lines)
    source = (
        "#include <cuda.h>\n#include <cuda_runtime.h>\n#include <cstddef>\n#include <cstdio>\n"
        f"#include <typeinfo>\nint main() {{\n{body}\n  return 0;\n}}\n"
    )
    return source, len(constants) + len(functions)


def test_cuda_decls_match_the_toolkit_headers(tmp_path):
    """Each constant's value, each entry point's type (enum and struct tags included, through
    its mangled name) and each struct's size, alignment and member offsets are the toolkit's."""
    include = _toolkit_include()
    cxx = _cxx()
    source, checked = _probe_source()
    assert checked > 40  # every declaration was found, not a regex that matched nothing
    probe = tmp_path / "probe.cc"
    probe.write_text(source)
    outputs = {}
    for label, folder in (("ours", DECLS), ("toolkit", include)):
        exe = tmp_path / label
        subprocess.run(
            [cxx, "-std=c++17", f"-I{folder}", str(probe), "-o", str(exe)],
            check=True,
            capture_output=True,
        )
        outputs[label] = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
    ours = outputs["ours"].splitlines()
    theirs = outputs["toolkit"].splitlines()
    assert [a for a, b in zip(ours, theirs) if a != b] == []
    assert len(ours) == len(theirs)


def test_installed_core_has_the_launcher():
    from tvm_ffi import cuda

    assert cuda.CubinKernel is _core.CubinKernel
    assert _core.CubinKernel.__name__ == "CubinKernel"
    assert callable(_core._CubinModule.from_bytes)
    assert not hasattr(_core, "_cuda_available")  # no build without it any more


def test_launcher_without_a_usable_driver(tmp_path):
    """The launcher is there on a machine without a driver: loading says what is missing
    (here a libcuda.so.1 stand-in that has no entry points)."""
    cc = os.environ.get("CC", "cc")
    if shutil.which(cc) is None:
        pytest.skip(f"needs a C compiler ({cc})")
    (tmp_path / "empty.c").write_text("int tvm_ffi_not_a_driver;\n")
    subprocess.run(
        [cc, "-shared", "-fPIC", str(tmp_path / "empty.c"), "-o", str(tmp_path / "libcuda.so.1")],
        check=True,
    )
    code = (
        "from tvm_ffi import cuda\n"
        "try:\n    cuda.CubinModule(b'.version 8.0\\n.target sm_90\\n.address_size 64\\n')\n"
        "except RuntimeError as e:\n    print(e)\n"
    )
    env = dict(os.environ, LD_LIBRARY_PATH=str(tmp_path))
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith(
        "libcuda.so.1 has no cuGetProcAddress: the CUDA driver is too old (CUDA 12.0 or newer "
        "is needed)"
    )


def test_settings_key_changes_with_every_setting(monkeypatch):
    setup_module = _setup_module()
    from setuptools import Extension

    class Compiler:
        def __init__(self) -> None:
            self.compiler_so = ["c++", "-fPIC"]
            self.compiler_cxx = ["c++"]
            self.linker_so = ["c++", "-shared"]

    def key(ext=None, **compiler):
        c = Compiler()
        for name, value in compiler.items():
            setattr(c, name, value)
        return setup_module.settings_key(c, ext or Extension("m", ["a.cc"]))

    base = key()
    assert key() == base
    assert key(compiler_so=["g++-12", "-fPIC"]) != base
    assert key(Extension("m", ["a.cc"], extra_compile_args=["-O0"])) != base
    assert key(Extension("m", ["a.cc"], define_macros=[("X", "1")])) != base
    assert key(Extension("m", ["a.cc", "b.cc"])) != base
    monkeypatch.setenv("CXXFLAGS", "-g")
    assert key() != base


def _build_shared_library(
    setup_module, tmp_path: Path, flags: list[str], *, inplace: bool = False
) -> tuple[Path, Path]:
    """Build SharedLibrary("pkg.lib.demo") with setup.py's BuildExt; (library, build_temp).
    ``inplace``: as an editable install does, into the source tree (``src/pkg``)."""
    from setuptools import Distribution

    library = setup_module.SharedLibrary(
        "pkg.lib.demo", ["demo.cc"], extra_compile_args=flags, language="c++"
    )
    attrs = {"name": "demo", "ext_modules": [library]}
    if inplace:
        attrs.update(packages=["pkg"], package_dir={"": "src"})
    dist = Distribution(attrs)
    dist.script_name = "setup.py"
    cmd = setup_module.BuildExt(dist)
    cmd.build_lib = str(tmp_path / "lib")
    cmd.build_temp = str(tmp_path / "temp")
    cmd.inplace = inplace
    cmd.ensure_finalized()
    cmd.run()
    root = tmp_path / ("src" if inplace else "lib")
    return root / "pkg" / "lib" / "libdemo.so", tmp_path / "temp"


def test_shared_library_lands_in_the_source_tree_for_an_editable_install(tmp_path, monkeypatch):
    """`pip install -e .` builds in place: the library's folder (pkg/lib, not a package in
    the sources) is made, and the library is there."""
    import ctypes

    setup_module = _setup_module()
    _cxx()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "__init__.py").write_text("")
    (tmp_path / "demo.cc").write_text(
        'extern "C" __attribute__((visibility("default"))) int demo_answer() { return 7; }\n'
    )
    lib, _ = _build_shared_library(setup_module, tmp_path, ["-O1"], inplace=True)
    assert ctypes.CDLL(str(lib)).demo_answer() == 7


def test_shared_library_and_per_settings_objects(tmp_path, monkeypatch):
    """A SharedLibrary lands as <package>/lib<name>.so and loads; objects live under a folder
    per settings, so a build with other flags compiles afresh and the same flags reuse."""
    import ctypes

    setup_module = _setup_module()
    _cxx()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "demo.cc").write_text(
        'extern "C" __attribute__((visibility("default"))) int demo_answer() { return 42; }\n'
    )
    lib, temp = _build_shared_library(setup_module, tmp_path, ["-O1"])
    assert ctypes.CDLL(str(lib)).demo_answer() == 42
    (first,) = temp.iterdir()
    built = first / "out" / "libdemo.so"
    stamp = built.stat().st_mtime_ns
    _build_shared_library(setup_module, tmp_path, ["-O1"])  # same settings: up to date
    assert built.stat().st_mtime_ns == stamp
    _build_shared_library(setup_module, tmp_path, ["-O2"])  # other flags: another folder
    (second,) = [p for p in temp.iterdir() if p != first]
    assert (second / "out" / "libdemo.so").is_file()
    assert built.stat().st_mtime_ns == stamp  # the -O1 objects were left alone


def _nm_defined(obj: Path) -> str:
    if shutil.which("nm") is None:
        pytest.skip("needs binutils (nm)")
    return subprocess.run(
        ["nm", "-C", "--defined-only", str(obj)], capture_output=True, text=True, check=True
    ).stdout


@pytest.mark.parametrize("pch", ["1", "0"])
def test_build_jit_prebuilt(tmp_path, monkeypatch, pch):
    """What the package build leaves for the JIT (tvm_ffi/lib/jit): the launcher's run-once
    code defined (hidden) in one object, the prelude header (precompiled with GCC unless
    TVM_FFI_PREBUILT_PCH=0, and no stale .gch left then), ninja_launch, and the stamp."""
    setup_module = _setup_module()
    _cxx()
    from tvm_ffi.cpp import _prebuilt

    monkeypatch.setenv("TVM_FFI_PREBUILT_PCH", pch)
    out = tmp_path / "jit"
    out.mkdir()
    (out / "prelude.h.gch").write_text("left by an earlier build")
    written = setup_module.build_jit_prebuilt(str(out), str(tmp_path / "work"))
    names = sorted(Path(p).name for p in written)
    gcc = setup_module._is_gcc(setup_module._jit_compiler()[1])
    with_pch = pch == "1" and gcc
    assert names == sorted(
        ["cuda_launcher.o", "ninja_launch", "prebuilt.json", "prelude.h"]
        + (["prelude.h.gch"] if with_pch else [])
    )
    assert (out / "prelude.h.gch").exists() is with_pch
    defined = _nm_defined(out / "cuda_launcher.o")
    for name in ("CubinModule::Load(", "details::DriverApi::Load()", "details::InspectImage("):
        assert f" T tvm::ffi::{name}" in defined, name
    stamp = _prebuilt.read_stamp(out)
    assert stamp["headers"] == _prebuilt.headers_digest(REPO / "include")
    assert stamp["pch"] is with_pch
    assert stamp["flags"] == list(_prebuilt.BASE_FLAGS)
    # The linker recorded is one that linked the launcher object with this compiler.
    names = [name for name, _ in _prebuilt.LINKERS]
    assert stamp["linker"] is None or stamp["linker"] in names
    if stamp["linker"] is not None:
        cmd = [
            setup_module._jit_compiler()[1],
            "-shared",
            f"-fuse-ld={stamp['linker']}",
            str(out / "cuda_launcher.o"),
            "-ldl",
            "-pthread",
            "-o",
            str(tmp_path / "x.so"),
        ]
        assert subprocess.run(cmd, capture_output=True, check=False).returncode == 0


def test_a_linker_that_fails_is_not_recorded(tmp_path):
    """A linker the compiler cannot use (here one it does not know) is passed over."""
    setup_module = _setup_module()
    _cxx()
    compiler = setup_module._jit_compiler()[1]
    (tmp_path / "x.cc").write_text("int x() { return 1; }\n")
    obj = tmp_path / "x.o"
    subprocess.run([compiler, "-fPIC", "-c", str(tmp_path / "x.cc"), "-o", str(obj)], check=True)
    fake = (("nosuch", "sh"),)  # a binary that exists; -fuse-ld=nosuch fails
    assert setup_module._working_linker(fake, compiler, str(obj), str(tmp_path)) is None
    real = (*fake, ("gold", "ld.gold"))
    expected = "gold" if shutil.which("ld.gold") else None
    assert setup_module._working_linker(real, compiler, str(obj), str(tmp_path)) == expected


def test_ninja_launch_runs_the_tool_in_the_directory_given(tmp_path):
    launch = _prebuilt_launch()
    (tmp_path / "here").mkdir()
    fd = os.open(tmp_path / "here", os.O_RDONLY | os.O_DIRECTORY)
    try:
        proc = subprocess.run(
            [launch, str(os.getpid()), str(fd), "/bin/pwd"],
            capture_output=True, text=True, pass_fds=(fd,), check=False,
        )  # fmt: skip
    finally:
        os.close(fd)
    assert (proc.returncode, proc.stdout.strip()) == (0, str(tmp_path / "here"))
    # Not started by the process it names: that process is gone, nobody would wait.
    proc = subprocess.run([launch, "1", "0", "/bin/true"], capture_output=True, check=False)
    assert proc.returncode == 1
    proc = subprocess.run([launch], capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and "usage:" in proc.stderr


def _prebuilt_launch() -> str:
    from tvm_ffi.cpp import _prebuilt

    launch = _prebuilt.ninja_launch()
    assert launch is not None, "the installed package has no tvm_ffi/lib/jit/ninja_launch"
    return launch
