"""Every public function of apache-tvm-ffi 0.1.15.post2's tvm_ffi, tvm_ffi.cpp, tvm_ffi.libinfo
and tvm_ffi.utils that this package offers takes the same parameters, by the same names, with
the same defaults, at the same positions where apache's are positional (this package's own
parameters have defaults), and accepts the same values: calls written for apache run here.

apache_signatures.json is read off the wheel by apache_signatures.py (run with the wheel first
on the path); test_table_matches_the_wheel regenerates it when the wheel and a Python of its
tag are at hand. ABSENT names the functions this package does not offer, and why; the guide's
"what differs" table says the same.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
from pathlib import Path

import pytest

from helpers import apache_wheel

HERE = Path(__file__).resolve().parent
TABLE = HERE / "apache_signatures.json"

_OBJECTS = "the object system's structural comparison and mutation, outside kernel launching"
#: apache's functions that have no counterpart here -> why.
ABSENT = {
    "tvm_ffi.convert": "values convert at the call boundary; there is no Python-side FFI value",
    "tvm_ffi.convert_func": "Python callables convert at the call boundary",
    "tvm_ffi.get_first_structural_mismatch": _OBJECTS,
    "tvm_ffi.get_global_func_metadata": "functions carry a signature string, no metadata dict",
    "tvm_ffi.init_ffi_api": "no per-namespace registry of global functions to import",
    "tvm_ffi.method": "reflection of methods declared in Python is not offered",
    "tvm_ffi.remove_global_func": "the registry keeps registrations for the process's life",
    "tvm_ffi.structural_equal": _OBJECTS,
    "tvm_ffi.structural_hash": _OBJECTS,
    "tvm_ffi.structural_map": _OBJECTS,
    "tvm_ffi.structural_mutate": _OBJECTS,
    "tvm_ffi.structural_visit": _OBJECTS,
    "tvm_ffi.structural_walk": _OBJECTS,
    "tvm_ffi.system_lib": "no system library: each library exports its own functions",
    "tvm_ffi.cpp.to_cpp_dtype": "a codegen helper of apache's, not part of building",
    "tvm_ffi.libinfo.find_cython_lib": "no Cython core",
    "tvm_ffi.libinfo.find_python_helper_include_path": "no Python helper headers",
    "tvm_ffi.libinfo.find_source_path": "the wheel ships no sources (config --sourcedir)",
    "tvm_ffi.libinfo.find_windows_implib": "Linux only",
    "tvm_ffi.libinfo.load_lib_ctypes": "libraries load through tvm_ffi.load_module",
    "tvm_ffi.libinfo.load_lib_module": "libraries load through tvm_ffi.load_module",
}


def _apache() -> dict:
    return json.loads(TABLE.read_text())


def _ours(qualified: str):
    module, _, name = qualified.rpartition(".")
    return getattr(importlib.import_module(module), name, None)


def test_table_counts():
    table = _apache()
    assert (len(table), sum(len(params) for params in table.values())) == (42, 110)
    assert set(ABSENT) <= set(table)


def _differences(theirs: list, ours: list) -> list[str]:
    """What a call written for `theirs` would find different in `ours`: each parameter by
    name, its default, and (for one apache passes by position) its position and kind."""
    found = []
    by_name = {p[0]: (i, p) for i, p in enumerate(ours)}
    for index, (name, kind, default) in enumerate(theirs):
        if name not in by_name:
            found.append(f"no parameter {name}")
            continue
        position, (_, our_kind, our_default) = by_name[name]
        if our_default != default:
            found.append(f"{name}: default {our_default} (apache: {default})")
        if kind == "KEYWORD_ONLY":
            if our_kind not in ("KEYWORD_ONLY", "POSITIONAL_OR_KEYWORD"):
                found.append(f"{name}: not accepted by name ({our_kind})")
        elif (position, our_kind) != (index, kind):
            found.append(f"{name}: {our_kind} at {position} (apache: {kind} at {index})")
    for name, kind, default in ours:
        if all(name != p[0] for p in theirs) and default is None and "VAR" not in kind:
            found.append(f"{name}: required here, absent from apache's")
    return found


@pytest.mark.parametrize("qualified", sorted(_apache()))
def test_same_parameters(qualified):
    import sys

    sys.path.insert(0, str(HERE))
    from apache_signatures import describe

    obj = _ours(qualified)
    if qualified in ABSENT:
        assert obj is None, f"{qualified} exists now: take it out of ABSENT"
        return
    assert obj is not None, f"{qualified} is missing"
    assert _differences(_apache()[qualified], describe(obj)) == []


def test_table_matches_the_wheel(tmp_path):
    wheel = apache_wheel.find_wheel()
    if wheel is None:
        pytest.skip(f"no apache-tvm-ffi wheel (set {apache_wheel.WHEEL_ENV})")
    tag = apache_wheel.python_tag(wheel)
    python = apache_wheel.find_python(tag) if tag else None
    if python is None:
        pytest.skip(f"no Python {tag} to import {wheel.name}")
    # apache's package imports typing_extensions (pure Python): ours serves.
    extensions = importlib.util.find_spec("typing_extensions")
    path = [str(apache_wheel.unpacked(wheel))]
    if extensions is not None and extensions.origin:
        path.append(str(Path(extensions.origin).parent))
    proc = subprocess.run(
        [python, str(HERE / "apache_signatures.py")],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(path)},
        capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    if proc.returncode != 0 and "No module named" in proc.stderr:
        pytest.skip(f"{python} cannot import the wheel: {proc.stderr.splitlines()[-1]}")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == _apache()


# ---- values: what apache's build functions accept, each accepted here --------------------

SOURCE = 'extern "C" int answer() { return 42; }\n'


@pytest.fixture
def source_file(tmp_path) -> Path:
    path = tmp_path / "answer.cc"
    path.write_text(SOURCE)
    return path


@pytest.mark.parametrize(
    "files",
    [
        pytest.param(lambda p: {"cpp_files": [p], "cuda_files": []}, id="cuda_files=[]"),
        pytest.param(lambda p: {"cpp_files": [p], "cuda_files": None}, id="cuda_files=None"),
        pytest.param(lambda p: {"sources": [], "cpp_files": [str(p)]}, id="sources=[]"),
        pytest.param(lambda p: {"cpp_files": str(p)}, id="one str"),
        pytest.param(lambda p: {"cpp_files": p}, id="one Path"),
        pytest.param(lambda p: {"cpp_files": (str(p),)}, id="tuple"),
        pytest.param(lambda p: {"sources": [p]}, id="sources"),
    ],
)
def test_build_accepts_apache_file_arguments(source_file, files, tmp_path, monkeypatch):
    from tvm_ffi import cpp

    monkeypatch.setenv("TVM_FFI_CACHE_DIR", str(tmp_path / "cache"))
    path = cpp.build("answer", **files(source_file))
    assert Path(path).is_file()


def test_build_with_no_file_at_all(tmp_path, monkeypatch):
    from tvm_ffi import cpp

    monkeypatch.setenv("TVM_FFI_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(
        ValueError, match=r"^build: give cpp_files, cuda_files or sources \(all are empty\)$"
    ):
        cpp.build("nothing", cpp_files=[], cuda_files=[])


@pytest.mark.parametrize(
    "value", [[], None, "-O1", ["-O1", "-DANSWER_FLAG=1"]], ids=["[]", "None", "str", "list"]
)
def test_inline_accepts_apache_flag_values(value, tmp_path, monkeypatch):
    from tvm_ffi import cpp

    monkeypatch.setenv("TVM_FFI_CACHE_DIR", str(tmp_path / "cache"))
    mod = cpp.load_inline(
        "answer_flags",
        cpp_sources=["int answer() { return 42; }"],
        functions="answer",
        extra_cflags=value,
        extra_ldflags=value if value != "-O1" and value != ["-O1", "-DANSWER_FLAG=1"] else None,
        extra_include_paths=[] if value is None else None,
    )
    assert mod.answer() == 42


def test_device_and_streams_by_apache_keywords():
    import tvm_ffi

    assert tvm_ffi.device(device_type="cuda", index=1) == (2, 1)
    with tvm_ffi.use_raw_stream(device="cuda:0", stream=0x1234):
        assert tvm_ffi.get_raw_stream(device="cuda:0") == 0x1234


def test_register_object_init_false_leaves_init_alone():
    import tvm_ffi

    @tvm_ffi.register_object("test.NoInit", init=False)
    class NoInit(tvm_ffi.Object):
        pass

    assert "__init__" not in NoInit.__dict__
