"""tvm_ffi.cpp cache under faults: damaged entries, killed builders, bad settings, long names.

Each test guards one promise of docs/guides/jit.md ("Safety") and names it.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tvm_ffi import cpp

SOURCE = textwrap.dedent(
    """
    #include <tvm/ffi/function.h>
    #ifndef ANSWER
    #define ANSWER 42
    #endif
    int answer() { return ANSWER; }
    TVM_FFI_DLL_EXPORT_TYPED_FUNC(answer, answer);
    """
)

# A compiler that logs to $JIT_LOG; with $JIT_STALL it announces "stalled <pid>", waits
# that long, then compiles a different library (ANSWER=666), as a step of a killed
# builder that lived on would.
STALLING_CXX = textwrap.dedent(
    """\
    #!/bin/sh
    for arg in "$@"; do [ "$arg" = --version ] && exec c++ --version; done
    echo "$$ $*" >> "$JIT_LOG"
    case " $* " in *" -c "*)
      if [ -n "$JIT_STALL" ]; then
        echo "stalled $$" >> "$JIT_LOG"
        sleep "$JIT_STALL"
        exec c++ "$@" -DANSWER=666
      fi;;
    esac
    exec c++ "$@"
    """
)

LOAD = textwrap.dedent(
    """
    import sys
    from tvm_ffi import cpp
    print(cpp.load_inline("jit_damaged", cpp_sources=sys.argv[1]).answer())
    """
)


@pytest.fixture
def stalling_cxx(install_cxx):
    return install_cxx("stalling-c++", STALLING_CXX)


# ---------------------------------------------------------------- item 2: damaged entry


@pytest.mark.parametrize("size", [0, 100, 1000, 12000])
def test_truncated_cached_library_is_rebuilt_not_a_crash(size):
    """A library cut short (a crash or a full disk mid-copy) once crashed dlopen with
    SIGBUS, or failed every later load. Now the load checks it first: warned, rebuilt."""
    path = Path(cpp.build_inline("jit_damaged", cpp_sources=SOURCE))
    full_size = path.stat().st_size
    assert full_size > 12000  # the last cut lands inside the file (about 19 KB)
    os.truncate(path, size)
    child = subprocess.run(
        [sys.executable, "-c", LOAD, SOURCE], capture_output=True, text=True, timeout=300
    )
    assert child.returncode == 0, child.stderr
    assert child.stdout == "42\n"
    reason = (
        "the file is empty"
        if size == 0
        else rf"truncated: the file has {size} bytes but its headers and segments need "
        r"\d+ \(a write or copy was cut short\)"
    )
    warnings = [line for line in child.stderr.splitlines() if "RuntimeWarning" in line]
    assert len(warnings) == 1, child.stderr
    expected = (
        rf"<string>:4: RuntimeWarning: tvm_ffi.cpp: the cached library {re.escape(str(path))} "
        rf"is damaged \({reason}\); rebuilding it"
    )
    assert re.fullmatch(expected, warnings[0]), warnings[0]
    assert path.stat().st_size == full_size


def test_published_library_is_synced_before_it_appears(monkeypatch):
    """The library's data reaches the disk before its name does: fsync of the file,
    then the link into place, then fsync of the directory."""
    from tvm_ffi.cpp import _cache

    events = []
    real_fsync, real_link = os.fsync, os.link

    def fsync(fd):
        events.append(("fsync", Path(f"/proc/self/fd/{fd}").resolve().name))
        return real_fsync(fd)

    def link(src, dst, **kwargs):
        events.append(("link", dst))
        return real_link(src, dst, **kwargs)

    monkeypatch.setattr(_cache.os, "fsync", fsync)
    monkeypatch.setattr(_cache.os, "link", link)
    path = Path(cpp.build_inline("jit_synced", cpp_sources=SOURCE))
    published = events[events.index(("link", "jit_synced.so")) - 1 :]
    assert published == [
        ("fsync", "jit_synced.so"),  # obj/jit_synced.so, ninja's output
        ("link", "jit_synced.so"),
        ("fsync", path.parent.name),
    ]


def test_input_write_on_full_disk_names_the_file_and_leaves_no_temp(monkeypatch, cache_dir):
    """A full disk while writing the sources: an OSError naming the file (os.write alone
    names none), no temp file left, and no library."""
    import errno

    from tvm_ffi.cpp import _cache

    def full(fd, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    cpp.build_inline("jit_no_space", cpp_sources=SOURCE)  # the compiler identity is on disk
    monkeypatch.setattr(_cache.os, "write", full)
    source = SOURCE.replace("42", "43")
    with pytest.raises(OSError) as info:
        cpp.build_inline("jit_no_space", cpp_sources=source)
    (entry,) = [p for p in cache_dir.glob("jit_no_space_*") if not list(p.glob("*.so"))]
    assert str(info.value) == f"[Errno 28] No space left on device: '{entry}/main.cpp'"
    assert sorted(p.name for p in entry.iterdir()) == ["lock"]


# ---------------------------------------------------------------- item 6: killed builder


def _wait_for(predicate, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie waiting for its parent is gone for our purpose
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _processes_in(directory: Path) -> list[int]:
    """Processes whose working directory is ``directory`` (ninja and its steps)."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if os.readlink(proc / "cwd") == str(directory):
                    found.append(int(proc.name))
            except OSError:
                continue
    return found


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_killed_builder_ends_its_build_and_never_replaces_a_newer_library(
    stalling_cxx, monkeypatch, cache_dir, sig
):
    """kill -9 (or SIGTERM) of a builder mid-build: its ninja and compiler end with it
    (they once lived on), and a step that did live on could not replace the library a
    new builder published, because ninja never writes the published name."""
    monkeypatch.setenv("JIT_STALL", "600")
    builder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"from tvm_ffi import cpp; cpp.build_inline('jit_orphan', cpp_sources={SOURCE!r})",
        ]
    )
    try:
        _wait_for(lambda: "stalled " in stalling_cxx.read_text(), "the compiler to start")
    finally:
        builder.send_signal(sig)  # to the builder alone, not to its process group
        builder.wait()
    (stalled,) = [
        int(line.split()[1])
        for line in stalling_cxx.read_text().splitlines()
        if line.startswith("stalled ")
    ]
    _wait_for(lambda: not _alive(stalled), "the killed builder's compiler to end")
    (entry,) = cache_dir.glob("jit_orphan_*")
    _wait_for(lambda: not _processes_in(entry), "the killed builder's ninja to end")

    monkeypatch.delenv("JIT_STALL")
    path = Path(cpp.build_inline("jit_orphan", cpp_sources=SOURCE))
    published = path.read_bytes()
    # What a link step outliving its builder does: rename its output onto ninja's target.
    staged = entry / "obj" / "jit_orphan.so.tmp"
    staged.write_bytes(b"\x7fELF from a step of the killed build")
    os.rename(staged, entry / "obj" / "jit_orphan.so")
    assert path.read_bytes() == published
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import tvm_ffi; print(tvm_ffi.load_module({str(path)!r}).answer())",
        ],
        capture_output=True,
        text=True,
    )
    assert (child.returncode, child.stdout) == (0, "42\n"), child.stderr


def test_interrupted_build_stops_ninja_and_its_steps(stalling_cxx, monkeypatch):
    """Ctrl-C (KeyboardInterrupt) in the builder ends ninja's whole process group."""
    import threading

    from tvm_ffi.cpp import _build

    monkeypatch.setenv("JIT_STALL", "600")
    ninja = []

    def press_ctrl_c():
        _wait_for(lambda: "stalled " in stalling_cxx.read_text(), "the compiler to start")
        ninja.extend(_build._running)
        os.kill(os.getpid(), signal.SIGINT)

    thread = threading.Thread(target=press_ctrl_c)
    thread.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            cpp.build_inline("jit_interrupted", cpp_sources=SOURCE)
    finally:
        thread.join()
    (stalled,) = [
        int(line.split()[1])
        for line in stalling_cxx.read_text().splitlines()
        if line.startswith("stalled ")
    ]
    assert len(ninja) == 1
    assert not _alive(ninja[0])
    _wait_for(lambda: not _alive(stalled), "the compiler to end")
    assert _build._running == set()


INTERRUPT_MANY = textwrap.dedent(
    """
    import os, signal, sys, threading, time
    from tvm_ffi import cpp

    def press_ctrl_c():
        while "stalled " not in open(os.environ["JIT_LOG"]).read():
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=press_ctrl_c, daemon=True).start()
    modules = [{"name": f"jit_many_stopped_{i}", "cpp_sources": sys.argv[1] + f"// {i}"}
               for i in range(3)]
    try:
        cpp.build_inline_many(modules, max_jobs=2)
    except KeyboardInterrupt:
        print("interrupted")
    """
)


def test_interrupted_many_stops_running_builds_at_once(stalling_cxx, monkeypatch):
    """Issue 20, item 5: Ctrl-C during load_inline_many took effect only once every
    running build had finished; now the builds are stopped and the rest never start."""
    monkeypatch.setenv("JIT_STALL", "600")
    proc = subprocess.run(
        [sys.executable, "-c", INTERRUPT_MANY, SOURCE], capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert (proc.returncode, proc.stdout) == (0, "interrupted\n"), proc.stderr
    stalled = [
        int(line.split()[1])
        for line in stalling_cxx.read_text().splitlines()
        if line.startswith("stalled ")
    ]
    assert 1 <= len(stalled) <= 2  # the third module never started
    for pid in stalled:
        _wait_for(lambda pid=pid: not _alive(pid), "the compiler to end")


EXIT_DURING_BUILD = textwrap.dedent(
    """
    import os, sys, threading, time
    from tvm_ffi import cpp
    threading.Thread(
        target=cpp.build_inline, args=("jit_exiting",), kwargs={"cpp_sources": sys.argv[1]},
        daemon=True,
    ).start()
    while "stalled " not in open(os.environ["JIT_LOG"]).read():
        time.sleep(0.05)
    """
)


def test_interpreter_exit_during_build_ends_ninja(stalling_cxx, monkeypatch, cache_dir):
    """A build in a daemon thread when the interpreter exits: ninja and its steps end."""
    monkeypatch.setenv("JIT_STALL", "600")
    subprocess.run([sys.executable, "-c", EXIT_DURING_BUILD, SOURCE], check=True, timeout=300)
    (stalled,) = [
        int(line.split()[1])
        for line in stalling_cxx.read_text().splitlines()
        if line.startswith("stalled ")
    ]
    _wait_for(lambda: not _alive(stalled), "the compiler to end")
    (entry,) = cache_dir.glob("jit_exiting_*")
    _wait_for(lambda: not _processes_in(entry), "ninja to end")
    assert not (entry / "jit_exiting.so").exists()


# ---------------------------------------------------------------- item 7: lock timeout


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e400", "-1", "soon", "NaN "])
def test_lock_timeout_must_be_finite_and_not_negative(monkeypatch, value):
    """A wait that can never end (nan, inf) or makes no sense is refused on every call."""
    cpp.build_inline("jit_lock_value", cpp_sources=SOURCE)
    monkeypatch.setenv("TVM_FFI_BUILD_LOCK_TIMEOUT", value)
    message = (
        "TVM_FFI_BUILD_LOCK_TIMEOUT must be a number of seconds, finite and >= 0 "
        f"(got {value.strip()!r})"
    )
    with pytest.raises(ValueError) as info:
        cpp.build_inline("jit_lock_value", cpp_sources=SOURCE)  # a warm hit, too
    assert str(info.value) == message


# ---------------------------------------------------------------- item 11: long names


def test_long_module_name_is_hashed_into_the_file_names(tmp_path):
    """A 300-character name once gave `OSError: File name too long`."""
    from tvm_ffi.cpp._spec import file_stem

    name = "m" + "x" * 299
    stem = file_stem(name)
    digest = hashlib.sha256(name.encode()).hexdigest()[:10]
    assert stem == f"{name[:40]}_{digest}"
    mod = cpp.load_inline(name, cpp_sources=SOURCE)
    assert mod.answer() == 42
    path = Path(mod.path)
    assert path.name == f"{stem}.so"
    assert path.parent.name.startswith(f"{stem}_") and len(path.parent.name) == len(stem) + 33
    build_dir = tmp_path / "build"
    path = cpp.build_inline(name, cpp_sources=SOURCE, build_directory=build_dir)
    assert path == str(build_dir / f"{stem}.so")


# ---------------------------------------------------------------- read-only cache


def _run_with_read_only(directory: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    """argv with ``directory`` bind-mounted read-only over itself (a private mount
    namespace: nothing outlives the call)."""
    unshare = shutil.which("unshare")
    if unshare is None or os.geteuid() != 0:
        pytest.skip("needs root and unshare(1) to mount a directory read-only")
    script = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"'
    return subprocess.run(
        [unshare, "-m", "sh", "-c", script, "sh", str(directory), *argv],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip


@pytest.mark.parametrize("without_hits", [True, False], ids=["no-hits-dir", "hits-dir"])
def test_read_only_cache_loads_what_it_holds(cache_dir, without_hits):
    """Issue 20, item 3: a cache on a read-only file system, without hits/ (a cache copied
    or made by an older version), failed with "Read-only file system: 'hits'"."""
    assert cpp.load_inline("jit_damaged", cpp_sources=SOURCE).answer() == 42
    if without_hits:
        shutil.rmtree(cache_dir / "hits")
    before = sorted(str(p.relative_to(cache_dir)) for p in cache_dir.rglob("*"))
    proc = _run_with_read_only(cache_dir, [sys.executable, "-c", LOAD, SOURCE])
    assert (proc.returncode, proc.stdout) == (0, "42\n"), proc.stderr
    assert sorted(str(p.relative_to(cache_dir)) for p in cache_dir.rglob("*")) == before


# A child that loads the launcher wrapper with image argv[1] (or, with "plain", a module new
# to the cache) and prints whether the library holds the image and where it was loaded from.
LOAD_NEW = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from helpers.launcher_cases import PTX, WRAPPER
    from tvm_ffi import cpp
    if sys.argv[1] == "plain":
        mod = cpp.load_inline("jit_new", cpp_sources="int one() { return 1; }", functions="one")
        print(mod.one(), mod.path)
    else:
        image = PTX.replace(b"// jit", sys.argv[1].encode())
        mod = cpp.load_inline("jit_ro", cpp_sources=WRAPPER, embed_cubin={"kernels": image})
        print(image in Path(mod.path).read_bytes(), mod.path)
    """
)


@pytest.mark.parametrize("what", ["new image", "plain"])
def test_read_only_cache_builds_what_it_lacks_privately(cache_dir, what, monkeypatch):
    """Issue 28, item 12: a read-only cache holding the wrapper could not take a new image
    (`Read-only file system`), nor a module it did not hold. The missing entries are built
    in a private directory of the process, loaded from there and removed at its exit."""
    from helpers.launcher_cases import PTX, WRAPPER, has_cuda_headers

    if not has_cuda_headers():
        pytest.skip("needs the CUDA headers")
    cpp.load_inline("jit_ro", cpp_sources=WRAPPER, embed_cubin={"kernels": PTX})
    before = sorted(str(p.relative_to(cache_dir)) for p in cache_dir.rglob("*"))
    argv = [sys.executable, "-c", LOAD_NEW, "plain" if what == "plain" else "// second image"]
    tests = str(Path(__file__).resolve().parents[2])  # the child imports helpers from there
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [tests, os.getenv("PYTHONPATH")]))
    )
    proc = _run_with_read_only(cache_dir, argv)
    assert proc.returncode == 0, proc.stderr
    answer, path = proc.stdout.split()
    assert answer == ("1" if what == "plain" else "True")
    assert not path.startswith(str(cache_dir)) and not Path(path).exists()
    assert sorted(str(p.relative_to(cache_dir)) for p in cache_dir.rglob("*")) == before


# ---------------------------------------------------------------- out of descriptors


def test_cached_library_check_out_of_descriptors_is_not_damage(cache_dir):
    """Issue 20, item 10: EMFILE while checking a cached library was reported as "the
    cached library ... is damaged; rebuilding it"."""
    import resource

    from tvm_ffi.cpp import _hit_index

    path = Path(cpp.build_inline("jit_damaged", cpp_sources=SOURCE))
    dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    lowest_free = os.dup(0)
    os.close(lowest_free)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (lowest_free, hard))
        with pytest.raises(OSError) as info:
            _hit_index.library_problem(dir_fd, path.name)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        os.close(dir_fd)
    assert info.value.errno == errno.EMFILE
    assert str(info.value) == (
        f"[Errno 24] cannot check the cached library {path.name}: Too many open files (a "
        "limit of this process or system, e.g. ulimit -n, not damage to the library)"
    )


MANY = textwrap.dedent(
    """
    from tvm_ffi import cpp
    modules = [{"name": f"jit_fds_{i}", "cpp_sources": f"int f() {{ return {i}; }}",
                "functions": ["f"]} for i in range(6)]
    print([m.f() for m in cpp.load_inline_many(modules, max_jobs=6)])
    """
)


def test_many_builds_wait_for_descriptors_instead_of_failing():
    """Issue 20, item 10: with ulimit -n 32, load_inline_many of 16 modules failed 13 of
    them with EMFILE; builds at once are now capped by the descriptors left."""
    import resource

    def limit() -> None:
        resource.setrlimit(
            resource.RLIMIT_NOFILE, (32, resource.getrlimit(resource.RLIMIT_NOFILE)[1])
        )

    proc = subprocess.run(
        [sys.executable, "-c", MANY], capture_output=True, text=True, timeout=300,
        preexec_fn=limit,
    )  # fmt: skip
    assert (proc.returncode, proc.stdout) == (0, "[0, 1, 2, 3, 4, 5]\n"), proc.stderr


def test_cache_without_flock_says_why(monkeypatch, cache_dir):
    """Issue 20, item 11: a file system without flock (NFS mounted nolock) gave a bare
    "[Errno 37] No locks available"."""
    import fcntl

    def no_locks(fd, operation):
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(fcntl, "flock", no_locks)
    with pytest.raises(OSError) as info:
        cpp.build_inline("jit_no_flock", cpp_sources=SOURCE)
    assert info.value.errno == errno.ENOLCK
    (entry,) = cache_dir.glob("jit_no_flock_*")
    assert str(info.value) == (
        f"[Errno 37] cannot lock {entry}/lock: No locks available: the file system holding it "
        "has no flock (NFS mounted nolock?), which builds need to exclude each other; set "
        "TVM_FFI_CACHE_DIR (or build_directory) to a local directory"
    )
