"""tvm_ffi.cpp cache: keys, warm hits, locking, concurrent and killed builds."""

from __future__ import annotations

import fcntl
import functools
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import tvm_ffi
from tvm_ffi import cpp
from tvm_ffi.cpp import _toolchain

PLAIN = 'extern "C" int plain_answer() { return 42; }\n'
EXPORTED = textwrap.dedent(
    """
    #include <tvm/ffi/function.h>
    int answer() { return 42; }
    TVM_FFI_DLL_EXPORT_TYPED_FUNC(answer, answer);
    """
)

# A C++ compiler that logs each compile/link to $JIT_LOG and can misbehave on request:
# JIT_SLEEP=s sleeps before compiling; JIT_HANG=1 writes a truncated object and hangs.
FAKE_CXX = textwrap.dedent(
    """\
    #!/bin/sh
    for arg in "$@"; do [ "$arg" = --version ] && exec c++ --version; done
    echo "$$ $*" >> "$JIT_LOG"
    if [ -n "$JIT_HANG" ]; then
      out=""; prev=""
      for arg in "$@"; do [ "$prev" = -o ] && out="$arg"; prev="$arg"; done
      printf 'truncated' > "$out"
      echo "hung $$" >> "$JIT_LOG"
      exec sleep 60  # exec: killing the logged pid ends it, no orphan holds ninja's pipe
    fi
    [ -n "$JIT_SLEEP" ] && sleep "$JIT_SLEEP"
    exec c++ "$@"
    """
)


@pytest.fixture
def fake_cxx(install_cxx):
    """Install FAKE_CXX as $CXX; returns the log path (one line per compile or link)."""
    return install_cxx("fake-c++", FAKE_CXX)


def _compiles(log: Path) -> list[str]:
    return [line for line in log.read_text().splitlines() if " -c " in line]


# ---------------------------------------------------------------- key invalidation


@pytest.mark.parametrize(
    "change",
    [
        {"cpp_sources": PLAIN.replace("42", "43")},
        {"cpp_sources": [PLAIN, "// a second string"]},
        {"extra_cflags": ["-DJIT_FLAG=1"]},
        {"extra_cflags": "-O1"},
        {"extra_ldflags": ["-Wl,-O1"]},
        {"extra_include_paths": ["/usr/include"]},
    ],
    ids=["source", "source-list", "cflag", "cflag-str", "ldflag", "include"],
)
def test_each_input_changes_the_key(change):
    base = {"cpp_sources": PLAIN}
    first = cpp.build_inline("jit_key", **base)
    second = cpp.build_inline("jit_key", **{**base, **change})
    assert first != second
    assert cpp.build_inline("jit_key", **base) == first  # and the old entry is still valid


def test_package_version_changes_the_key(monkeypatch):
    first = cpp.build_inline("jit_ver", cpp_sources=PLAIN)
    monkeypatch.setattr(tvm_ffi, "__version__", "999.0.0")
    assert cpp.build_inline("jit_ver", cpp_sources=PLAIN) != first


def test_compiler_path_and_version_change_the_key(tmp_path, monkeypatch):
    first = cpp.build_inline("jit_cc", cpp_sources=PLAIN)
    script = tmp_path / "cc" / "c++"
    script.parent.mkdir()
    script.write_text(
        '#!/bin/sh\n[ "$1" = --version ] && { echo "fake 1.0"; exit 0; }\nexec c++ "$@"\n'
    )
    script.chmod(0o755)
    monkeypatch.setenv("CXX", str(script))
    second = cpp.build_inline("jit_cc", cpp_sources=PLAIN)
    assert second != first
    # Same path, new binary reporting another version: the identity is re-read.
    script.write_text(
        '#!/bin/sh\n[ "$1" = --version ] && { echo "fake 2.00"; exit 0; }\nexec c++ "$@"\n'
    )
    assert cpp.build_inline("jit_cc", cpp_sources=PLAIN) not in (first, second)


WRAPPER = '#!/bin/sh\n[ "$1" = --version ] && exec c++ --version\nexec c++ {flag} "$@"\n'


def _fresh_process_call(name: str, source: str, function: str, **kwargs) -> str:
    """What ``load_inline(name, ...).function()`` prints in a fresh process (the hit index's
    path, not this process's loaded libraries)."""
    code = (
        "from tvm_ffi import cpp; print(cpp.load_inline("
        f"{name!r}, cpp_sources={source!r}, functions=[{function!r}], **{kwargs!r}).{function}())"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_edited_compiler_script_changes_the_key(tmp_path, monkeypatch):
    """Issue 20, item 6: a CXX wrapper script edited without its --version changing kept
    the old key, and the old library kept loading."""
    script = tmp_path / "cc" / "c++"
    script.parent.mkdir()
    script.write_text(WRAPPER.format(flag="-DANSWER=1"))
    script.chmod(0o755)
    monkeypatch.setenv("CXX", str(script))
    source = "int answer() { return ANSWER; }"
    assert cpp.load_inline("jit_script", cpp_sources=source, functions=["answer"]).answer() == 1
    script.write_text(WRAPPER.format(flag="-DANSWER=2"))
    assert cpp.load_inline("jit_script", cpp_sources=source, functions=["answer"]).answer() == 2
    assert _fresh_process_call("jit_script", source, "answer") == "2"


def test_rebuilt_archive_in_extra_ldflags_changes_the_key(tmp_path):
    """Issue 20, item 6: a static archive named in extra_ldflags, rebuilt with new code,
    kept the old key (also through the hit index of a fresh process)."""
    cxx = os.environ.get("CXX", "c++")
    lib = tmp_path / "libvalue.a"

    def archive(value: int) -> None:
        src = tmp_path / "value.cc"
        src.write_text(f'extern "C" int value() {{ return {value}; }}\n')
        obj = tmp_path / "value.o"
        subprocess.run([cxx, "-fPIC", "-c", str(src), "-o", str(obj)], check=True)
        lib.unlink(missing_ok=True)
        subprocess.run(["ar", "rcs", str(lib), str(obj)], check=True)

    source = 'extern "C" int value();\nint get() { return value(); }'
    load = functools.partial(
        cpp.load_inline, "jit_ldflag_archive", cpp_sources=source, functions=["get"],
        extra_ldflags=[str(lib)],
    )  # fmt: skip
    archive(1)
    assert load().get() == 1
    archive(2)
    assert load().get() == 2
    assert _fresh_process_call("jit_ldflag_archive", source, "get", extra_ldflags=[str(lib)]) == "2"


def test_cuda_home_switched_to_another_toolkit_changes_the_key(tmp_path, monkeypatch):
    """Issue 20, item 6: C++ that includes a CUDA header, CUDA_HOME a link switched to
    another toolkit: the path text is the same, the old library kept loading."""
    for version in (1, 2):
        include = tmp_path / f"cuda-{version}" / "include"
        (include / "crt").mkdir(parents=True)
        (include / "cuda_runtime.h").write_text(f"#define FAKE_CUDA_VERSION {version}\n")
        # The rest of what makes a headers tree complete for the CUDA search.
        (include / "cuda.h").write_text("")
        (include / "crt" / "host_defines.h").write_text("")
    home = tmp_path / "cuda"
    home.symlink_to(tmp_path / "cuda-1")
    monkeypatch.setenv("CUDA_HOME", str(home))
    source = "#include <cuda_runtime.h>\nint version() { return FAKE_CUDA_VERSION; }"
    load = functools.partial(
        cpp.load_inline, "jit_cuda_switch", cpp_sources=source, functions=["version"]
    )
    assert load().version() == 1
    home.unlink()
    home.symlink_to(tmp_path / "cuda-2")
    assert load().version() == 2
    assert _fresh_process_call("jit_cuda_switch", source, "version") == "2"


def test_cache_layout(cache_dir):
    path = Path(cpp.build_inline("jit_layout", cpp_sources=PLAIN))
    entry = path.parent
    assert entry.parent == cache_dir
    assert entry.name.startswith("jit_layout_") and len(entry.name) == len("jit_layout_") + 32
    assert (entry / "main.cpp").read_text() == PLAIN
    assert (entry / "build.ninja").is_file() and (entry / "lock").is_file()
    assert stat.S_IMODE(cache_dir.stat().st_mode) == 0o700
    assert list((cache_dir / "toolchain").glob("*.json"))


# ---------------------------------------------------------------- warm hit


def _forbid_processes(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a warm cache hit started a process")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system", "execv", "execve"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, refuse)


def _forget_process_state():
    # Start like a fresh process: only what is on disk may be reused.
    _toolchain._identity_memo.clear()
    for func in vars(_toolchain).values():
        if isinstance(func, functools._lru_cache_wrapper):
            func.cache_clear()


def test_warm_build_inline_spawns_no_process(monkeypatch):
    path = cpp.build_inline("jit_warm", cpp_sources=PLAIN)
    _forget_process_state()
    _forbid_processes(monkeypatch)
    assert cpp.build_inline("jit_warm", cpp_sources=PLAIN) == path


def test_warm_load_inline_spawns_no_process(monkeypatch):
    assert cpp.load_inline("jit_warm_load", cpp_sources=EXPORTED).answer() == 42
    _forget_process_state()
    _forbid_processes(monkeypatch)
    assert cpp.load_inline("jit_warm_load", cpp_sources=EXPORTED).answer() == 42


# ---------------------------------------------------------------- cache directory checks


def test_cache_dir_writable_by_others_is_refused(cache_dir):
    cache_dir.mkdir()
    cache_dir.chmod(0o777)
    # No `chmod go-w` advice: for a directory others share (/tmp) that would break them.
    message = (
        f"refusing cache directory {cache_dir}: writable by group or others (mode 777); "
        "set TVM_FFI_CACHE_DIR to a private directory (e.g. TVM_FFI_CACHE_DIR=~/.cache/tvm-ffi)"
    )
    with pytest.raises(PermissionError) as info:
        cpp.build_inline("jit_refused", cpp_sources=PLAIN)
    assert str(info.value) == message


def test_cache_dir_owned_by_another_user_is_refused(cache_dir):
    cache_dir.mkdir(mode=0o700)
    try:
        os.chown(cache_dir, os.geteuid() + 4242, -1)
    except PermissionError:
        pytest.skip("needs root to give a directory to another user")
    with pytest.raises(
        PermissionError, match=r"^refusing cache directory .*: owned by uid \d+, not by you"
    ):
        cpp.build_inline("jit_refused", cpp_sources=PLAIN)


def test_missing_cache_dir_is_created_private(tmp_path, monkeypatch):
    root = tmp_path / "deep" / "er" / "cache"
    monkeypatch.setenv("TVM_FFI_CACHE_DIR", str(root))
    cpp.build_inline("jit_new_root", cpp_sources=PLAIN)
    assert stat.S_IMODE(root.stat().st_mode) == 0o700


def test_default_cache_dir_honours_xdg_cache_home(tmp_path, monkeypatch):
    monkeypatch.delenv("TVM_FFI_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    path = Path(cpp.build_inline("jit_xdg", cpp_sources=PLAIN))
    assert path.parent.parent == tmp_path / "xdg" / "tvm-ffi"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # invalid by the XDG spec: ignored
    path = Path(cpp.build_inline("jit_xdg", cpp_sources=PLAIN))
    assert path.parent.parent == tmp_path / "home" / ".cache" / "tvm-ffi"


def test_relative_cache_dir_is_resolved_once(tmp_path, monkeypatch):
    """Issue 28, item 15: a relative TVM_FFI_CACHE_DIR was resolved at each call, so a
    process that changed directory used a second cache."""
    from tvm_ffi.cpp import _cache

    monkeypatch.setattr(_cache, "_configured", {}, raising=False)  # a fresh process
    monkeypatch.setenv("TVM_FFI_CACHE_DIR", "relative-cache")
    for name in ("first", "second"):
        (tmp_path / name).mkdir()
    monkeypatch.chdir(tmp_path / "first")
    first = Path(cpp.build_inline("jit_relative", cpp_sources=PLAIN))
    assert first.parent.parent == tmp_path / "first" / "relative-cache"
    monkeypatch.chdir(tmp_path / "second")
    assert Path(cpp.build_inline("jit_relative", cpp_sources=PLAIN)) == first
    assert Path(cpp.build_inline("jit_relative_2", cpp_sources=PLAIN)).parent.parent == (
        tmp_path / "first" / "relative-cache"
    )
    assert list((tmp_path / "second").iterdir()) == []


def test_tilde_in_cache_dir_is_the_home_directory(tmp_path, monkeypatch):
    """Issue 28, item 15: TVM_FFI_CACHE_DIR=~/... (quoted, so no shell expanded it) made a
    directory named "~" in the working directory."""
    from tvm_ffi.cpp import _cache

    monkeypatch.setattr(_cache, "_configured", {}, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TVM_FFI_CACHE_DIR", "~/jit-cache")
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    path = Path(cpp.build_inline("jit_tilde", cpp_sources=PLAIN))
    assert path.parent.parent == tmp_path / "home" / "jit-cache"
    assert list((tmp_path / "work").iterdir()) == []
    monkeypatch.setenv("TVM_FFI_CACHE_DIR", "~no-such-user-here/jit-cache")
    with pytest.raises(ValueError) as info:
        cpp.build_inline("jit_tilde", cpp_sources=PLAIN)
    assert str(info.value) == (
        "TVM_FFI_CACHE_DIR='~no-such-user-here/jit-cache': cannot expand '~no-such-user-here' "
        "(no such user, or HOME is not set); give an absolute path"
    )


# ---------------------------------------------------------------- locking and concurrency


def test_lock_timeout_names_the_lock_file(monkeypatch):
    with pytest.raises(cpp.BuildError) as info:
        cpp.build_inline("jit_locked", cpp_sources="int f() { return nope; }")
    lock = info.value.build_dir / "lock"
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # stands for another process building this module
        monkeypatch.setenv("TVM_FFI_BUILD_LOCK_TIMEOUT", "0.2")
        start = time.monotonic()
        with pytest.raises(TimeoutError) as timeout:
            cpp.build_inline("jit_locked", cpp_sources="int f() { return nope; }")
        assert time.monotonic() - start < 5
        assert str(timeout.value).startswith(
            f"timed out after 0.2 s waiting for the build lock {lock} "
        )
    finally:
        os.close(fd)


def test_bad_lock_timeout_value(monkeypatch):
    monkeypatch.setenv("TVM_FFI_BUILD_LOCK_TIMEOUT", "soon")
    with pytest.raises(ValueError, match=r"^TVM_FFI_BUILD_LOCK_TIMEOUT must be a number"):
        cpp.build_inline("jit_lock_env", cpp_sources=PLAIN)


CHILD = textwrap.dedent(
    """
    import sys
    from tvm_ffi import cpp
    source = sys.argv[1]
    path = cpp.build_inline("jit_concurrent", cpp_sources=source)
    mod = cpp.load_inline("jit_concurrent", cpp_sources=source)
    print(path, mod.answer())
    """
)


def test_concurrent_processes_build_once(fake_cxx, monkeypatch):
    monkeypatch.setenv("JIT_SLEEP", "0.5")  # keep the build open while the others arrive
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, EXPORTED],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(8)
    ]
    results = [proc.communicate(timeout=300) for proc in procs]
    for proc, (_, err) in zip(procs, results):
        assert proc.returncode == 0, err
    lines = {out.strip() for out, _ in results}
    assert len(lines) == 1, lines
    path, answer = lines.pop().split()
    assert answer == "42" and os.path.isfile(path)
    assert len(_compiles(fake_cxx)) == 1
    assert len([ln for ln in fake_cxx.read_text().splitlines() if " -shared " in ln]) == 1


KILLED_CHILD = textwrap.dedent(
    """
    from tvm_ffi import cpp
    cpp.build_inline("jit_killed", cpp_sources={source!r})
    """
)


def _wait_for_hung_compiler(log: Path, timeout: float = 60) -> int:
    """Wait until FAKE_CXX has written its truncated object and hangs; return its pid."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in log.read_text().splitlines():
            if line.startswith("hung "):
                return int(line.split()[1])
        time.sleep(0.05)
    raise AssertionError("the compiler never started")


def _entry(cache_dir: Path, name: str) -> Path:
    (entry,) = [p for p in cache_dir.iterdir() if p.name.startswith(name + "_")]
    return entry


def test_killed_build_leaves_nothing_loadable_and_rebuilds(fake_cxx, monkeypatch, cache_dir):
    monkeypatch.setenv("JIT_HANG", "1")
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_CHILD.format(source=EXPORTED)], start_new_session=True
    )
    compiler = None
    try:
        compiler = _wait_for_hung_compiler(fake_cxx)
    finally:
        # Python and ninja share a process group; ninja starts each step in a group of its
        # own, so the compiler is killed separately (as an OOM killer or a reboot would).
        os.killpg(proc.pid, signal.SIGKILL)
        if compiler is not None:
            os.kill(compiler, signal.SIGKILL)
        proc.wait()
    entry = _entry(cache_dir, "jit_killed")
    assert not (entry / "jit_killed.so").exists()
    assert not (entry / "obj" / "main.o").exists()  # only main.o.tmp holds the truncated output
    assert (entry / "obj" / "main.o.tmp").read_text() == "truncated"

    monkeypatch.delenv("JIT_HANG")
    monkeypatch.setenv("TVM_FFI_BUILD_LOCK_TIMEOUT", "10")  # the dead holder's lock is gone
    mod = cpp.load_inline("jit_killed", cpp_sources=EXPORTED)
    assert mod.answer() == 42
    assert not (entry / "obj" / "main.o.tmp").exists()


def test_killed_compiler_gives_build_error_then_rebuild(fake_cxx, monkeypatch, cache_dir):
    import threading

    monkeypatch.setenv("JIT_HANG", "1")
    errors = []

    def build():
        try:
            cpp.build_inline("jit_killed_cc", cpp_sources=PLAIN)
        except cpp.BuildError as err:
            errors.append(err)

    thread = threading.Thread(target=build)
    thread.start()
    os.kill(_wait_for_hung_compiler(fake_cxx), signal.SIGKILL)
    thread.join(timeout=60)
    assert len(errors) == 1
    assert "building module 'jit_killed_cc'" in str(errors[0])
    entry = _entry(cache_dir, "jit_killed_cc")
    assert not (entry / "jit_killed_cc.so").exists()
    monkeypatch.delenv("JIT_HANG")
    path = cpp.build_inline("jit_killed_cc", cpp_sources=PLAIN)
    assert Path(path) == entry / "jit_killed_cc.so" and os.path.isfile(path)


def test_threads_of_one_process_build_once(fake_cxx, monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setenv("JIT_SLEEP", "0.3")
    with ThreadPoolExecutor(4) as pool:
        paths = set(
            pool.map(lambda _: cpp.build_inline("jit_threads", cpp_sources=PLAIN), range(4))
        )
    assert len(paths) == 1
    assert len(_compiles(fake_cxx)) == 1


def test_import_runs_nothing():
    # Importing tvm_ffi.cpp must not look for tools or start processes: that is the first
    # build's job.
    code = (
        "import os, subprocess\n"
        "def refuse(*a, **k): raise AssertionError('process started at import')\n"
        "subprocess.Popen = os.posix_spawn = os.fork = refuse\n"
        "import tvm_ffi.cpp, tvm_ffi._cuda_driver\n"
        "from tvm_ffi.cpp import _toolchain\n"
        "assert _toolchain._find_cxx.cache_info().currsize == 0\n"
        "assert tvm_ffi._cuda_driver._query.cache_info().currsize == 0\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
