"""Habits of the JIT build: string flags split like a shell, MAX_JOBS, the tvm_ffi
logger, and a clear error on platforms other than Linux."""

from __future__ import annotations

import logging
import re
import subprocess
import sys

import pytest

from tvm_ffi import cpp
from tvm_ffi.cpp import _env

SOURCE = "int value() { return VALUE; }\n"


# ---- flags ----------------------------------------------------------------------------------


def test_string_flags_split_like_a_shell():
    mod = cpp.load_inline(
        "flags_split",
        cpp_sources=SOURCE,
        functions="value",
        extra_cflags="-O0 -g -DVALUE='40 + 2'",  # three flags, the quoted one with spaces
        extra_ldflags="-lm  -Wl,--as-needed",
    )
    assert mod.value() == 42


def test_string_flags_reach_the_compiler_as_separate_words(tmp_path):
    cpp.build_inline(
        "flags_words",
        cpp_sources=SOURCE,
        extra_cflags="-O0 -g -DVALUE='40 + 2'",
        extra_ldflags="-lm",
        build_directory=tmp_path / "b",
    )
    text = (tmp_path / "b" / "build.ninja").read_text()
    assert "-O0 -g '-DVALUE=40 + 2'\n" in text  # quoted for the shell as one word
    assert re.search(
        r"^ldflags = .* -lm -Llib/tvm_ffi -Wl,--no-as-needed -ltvm_ffi -ldl -pthread$", text, re.M
    )


def test_list_flags_are_taken_as_they_are(tmp_path):
    mod = cpp.load_inline(
        "flags_list", cpp_sources=SOURCE, functions="value", extra_cflags=["-DVALUE=7 + 1"]
    )
    assert mod.value() == 8


@pytest.mark.parametrize("label", ["extra_cflags", "extra_cuda_cflags", "extra_ldflags"])
def test_unbalanced_quote_is_an_error(label):
    with pytest.raises(
        ValueError,
        match=rf"^load_inline: {label} cannot be split like a shell would: "
        r"No closing quotation$",
    ):
        cpp.load_inline("flags_bad", cpp_sources=SOURCE, **{label: "-DX='a b"})


# ---- MAX_JOBS -------------------------------------------------------------------------------

# A compiler that refuses to run next to another compile of this build.
ALONE_CXX = """#!/bin/sh
case " $* " in *" -c "*)
  mkdir "$JIT_LOG.running" 2>/dev/null || { echo "error: two compiles at once"; exit 1; }
  sleep 0.2; c++ "$@"; rc=$?; rmdir "$JIT_LOG.running"; exit $rc;;
esac
exec c++ "$@"
"""


def test_max_jobs_limits_parallel_compiles(install_cxx, tmp_path, monkeypatch):
    install_cxx("alone-c++", ALONE_CXX)
    sources = []
    for index in range(3):
        sources.append(tmp_path / f"s{index}.cc")
        sources[-1].write_text(f"int f{index}() {{ return {index}; }}\n")
    monkeypatch.setenv("MAX_JOBS", "1")
    spawned: list[list[str]] = []
    real_popen = subprocess.Popen

    def spy(args, *rest, **kwargs):
        spawned.append(list(args))
        return real_popen(args, *rest, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", spy)
    cpp.build("jobs", sources)
    (ninja,) = [args for args in spawned if "-j" in args]
    assert ninja[-2:] == ["-j", "1"]


def test_max_jobs_helper(monkeypatch):
    assert _env.max_jobs() is None
    assert _env.max_jobs(8) == 8
    monkeypatch.setenv("MAX_JOBS", " 3 ")
    assert _env.max_jobs(8) == 3


@pytest.mark.parametrize("value", ["0", "-2", "four", "1.5"])
def test_bad_max_jobs(value, monkeypatch):
    monkeypatch.setenv("MAX_JOBS", value)
    with pytest.raises(
        ValueError, match=rf"^MAX_JOBS must be a positive integer \(got '{value}'\)$"
    ):
        cpp.build_inline("jobs_bad", cpp_sources="int f() { return 0; }\n")


@pytest.mark.parametrize("value", ["2147483648", "99999999999999999999"])
def test_max_jobs_too_large_for_ninja(value, monkeypatch):
    monkeypatch.setenv("MAX_JOBS", value)
    with pytest.raises(
        ValueError,
        match=rf"^MAX_JOBS is too large \(got '{value}'; ninja takes at most 2147483647\)$",
    ):
        cpp.build_inline("jobs_huge", cpp_sources="int f() { return 0; }\n")
    monkeypatch.delenv("MAX_JOBS")
    with pytest.raises(
        ValueError,
        match=r"^build_inline_many: max_jobs is too large \(got 2147483648; ninja takes at most "
        r"2147483647\)$",
    ):
        cpp.build_inline_many([{"name": "jobs_huge", "cpp_sources": ""}], max_jobs=2**31)


# ---- the interpreter for build steps ----------------------------------------------------------

HOST_APP = """#!/bin/sh
echo "$0 $*" >> "$HOST_LOG"
exit 3
"""


@pytest.mark.parametrize("executable", ["host-app", ""], ids=["host-application", "empty"])
def test_embedded_interpreter_builds_with_a_real_python(executable, tmp_path, monkeypatch):
    """Issue 20, item 16: in an embedded interpreter sys.executable is the host application
    (or empty); a build ran it with Python's arguments, then failed with an unrelated error."""
    log = tmp_path / "host.log"
    if executable:
        app = tmp_path / executable
        app.write_text(HOST_APP)
        app.chmod(0o755)
        executable = str(app)
    monkeypatch.setenv("HOST_LOG", str(log))
    monkeypatch.setattr(sys, "executable", executable)
    found = _env.python_executable()
    assert re.fullmatch(r"python[\d.]*", found.rsplit("/", 1)[-1]), found
    mod = cpp.load_inline("jit_embedded", cpp_sources="int f() { return 5; }", functions=["f"])
    assert mod.f() == 5
    assert not log.exists()  # the host application never ran


def test_embedded_interpreter_without_python_says_how_to_name_one(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "executable", "")
    monkeypatch.setattr(sys, "exec_prefix", str(tmp_path))
    monkeypatch.setattr(sys, "base_exec_prefix", str(tmp_path))
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    with pytest.raises(RuntimeError) as info:
        cpp.build_inline("jit_no_python", cpp_sources="int f() { return 5; }")
    assert str(info.value) == (
        "tvm_ffi.cpp: no Python interpreter to run build steps: sys.executable is '' (an "
        f"embedded interpreter?) and {tmp_path}/bin holds no python{version}; set "
        "TVM_FFI_PYTHON to the path of a python executable"
    )
    real = sys.base_prefix + f"/bin/python{version}"
    monkeypatch.setenv("TVM_FFI_PYTHON", real)
    assert _env.python_executable() == real


# ---- logging --------------------------------------------------------------------------------


def test_builds_are_logged(caplog, tmp_path):
    caplog.set_level(logging.DEBUG, logger="tvm_ffi")
    code = "int f() { return 0; }\n"
    path = cpp.build_inline("logged", cpp_sources=code)
    line = sys._getframe().f_lineno - 1
    cpp.build_inline("logged", cpp_sources=code)  # a hit
    cpp.build_inline("logged_dir", cpp_sources=code, build_directory=tmp_path / "b")
    records = [(r.name, r.levelname, r.getMessage()) for r in caplog.records]
    entry = path.rsplit("/", 1)[0]
    assert records[0] == (
        "tvm_ffi.cpp",
        "INFO",
        f"build_inline 'logged': building C++ source strings in {entry} (not in the cache), "
        f"called from {__file__}:{line}",
    )
    assert re.fullmatch(r"build_inline 'logged': built in \d+\.\d\d s", records[1][2])
    assert records[2] == ("tvm_ffi.cpp", "DEBUG", f"build_inline 'logged': cached {path}")
    assert records[3][2].startswith(
        f"build_inline 'logged_dir': building C++ source strings in {tmp_path / 'b'} "
        "(build_directory given: ninja rebuilds what changed)"
    )
    assert len(records) == 5


def test_failed_build_is_logged(caplog, tmp_path):
    caplog.set_level(logging.INFO, logger="tvm_ffi")
    source = tmp_path / "broken.cc"
    source.write_text("int f() { return oops; }\n")
    with pytest.raises(cpp.BuildError):
        cpp.build("logged_broken", [source])
    building, failed = (r.getMessage() for r in caplog.records)
    assert building.startswith(f"build 'logged_broken': building {source} in ")
    assert re.fullmatch(
        r"build 'logged_broken': build failed after \d+\.\d\d s \(BuildError\)", failed
    )


def test_library_adds_no_handler():
    cpp.build_inline("no_handler", cpp_sources="int f() { return 0; }\n")
    for name in ("tvm_ffi", "tvm_ffi.cpp"):
        logger = logging.getLogger(name)
        assert logger.handlers == [] and logger.propagate and logger.level == logging.NOTSET


def test_cache_hit_does_not_import_logging(cache_dir):
    code = "int f() { return 0; }\n"
    cpp.build_inline("hit_quiet", cpp_sources=code)
    script = (
        "import sys\n"
        "from tvm_ffi import cpp\n"
        f"cpp.build_inline('hit_quiet', cpp_sources={code!r})\n"
        "assert 'logging' not in sys.modules, 'a cache hit imported logging'\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)


# ---- platforms ------------------------------------------------------------------------------


@pytest.mark.parametrize("api", ["load_inline", "build_inline", "load", "build"])
def test_other_platforms_get_a_clear_error(api, tmp_path, monkeypatch):
    source = tmp_path / "s.cc"
    source.write_text("int f() { return 0; }\n")
    monkeypatch.setenv("CXX", "no-such-compiler")  # the platform is checked first
    monkeypatch.setattr(sys, "platform", "darwin")
    func = getattr(cpp, api)
    kwargs = {"cpp_sources": "int f();"} if api.endswith("inline") else {"sources": [source]}
    with pytest.raises(
        RuntimeError,
        match=rf"^{api}: tvm_ffi.cpp builds libraries on Linux only \(this platform is 'darwin'\)$",
    ):
        func("elsewhere", **kwargs)


def test_no_fcntl_still_imports_and_says_why():
    # Where the build machinery cannot even be imported (no fcntl: Windows), importing
    # tvm_ffi.cpp works and a build gets the platform message, not an ImportError.
    script = (
        "import sys\n"
        "sys.modules['fcntl'] = None\n"
        "sys.platform = 'win32'\n"
        "from tvm_ffi import cpp\n"
        "try:\n"
        "    cpp.load_inline('x', cpp_sources='int f();')\n"
        "except RuntimeError as err:\n"
        "    print(err)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    assert out == (
        "load_inline: tvm_ffi.cpp builds libraries on Linux only (this platform is 'win32')\n"
    )
