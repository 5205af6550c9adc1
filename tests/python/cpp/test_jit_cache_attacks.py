"""tvm_ffi.cpp cache under attack: other users, swapped directories, planted links.

The promise (docs/guides/jit.md, "Safety"): no other user can make a JIT build load code
they wrote. The two-user tests need root (to act as uid 65534); the one-user ones run
everywhere and plant symbolic links where the cache has directories and files.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

import tvm_ffi
from tvm_ffi import cpp

ATTACKER = 65534  # "nobody"
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as a second user")

SOURCE = textwrap.dedent(
    """
    #include <tvm/ffi/function.h>
    int answer() { return 42; }
    TVM_FFI_DLL_EXPORT_TYPED_FUNC(answer, answer);
    """
)

# The attacker's library: loading it is enough to run its constructor.
EVIL = textwrap.dedent(
    """
    #include <cstdio>
    #include <unistd.h>
    __attribute__((constructor)) static void attack() {
      FILE* f = std::fopen(MARKER, "w");
      if (f == nullptr) return;
      std::fprintf(f, "ATTACKER CODE RUNNING AS uid %d\\n", (int)getuid());
      std::fclose(f);
    }
    extern "C" int answer() { return 666; }
    """
)

# Logs each compile to $JIT_LOG, then takes $JIT_SLEEP seconds: the window of a cold build.
SLOW_CXX = textwrap.dedent(
    """\
    #!/bin/sh
    for arg in "$@"; do [ "$arg" = --version ] && exec c++ --version; done
    case " $* " in *" -c "*) echo compiling >> "$JIT_LOG"; sleep "${JIT_SLEEP:-0}";; esac
    exec c++ "$@"
    """
)

VICTIM = textwrap.dedent(
    """
    from tvm_ffi import cpp
    try:
        mod = cpp.load_inline("jit_victim", cpp_sources={source!r})
    except PermissionError as err:
        print("refused:", err)
    else:
        print("loaded", mod.path)
    """
)


@pytest.fixture
def evil_library(build_library, tmp_path):
    """(library path, marker path): the library writes the marker when loaded."""
    marker = tmp_path / "pwned"
    lib = build_library("evil", EVIL, flags=[f'-DMARKER="{marker}"'])
    return lib, marker


@pytest.fixture
def world(tmp_path):
    """A directory under /tmp that uid 65534 can reach (pytest's tmp_path is root-only)."""
    base = Path(tempfile.mkdtemp(prefix="tvm_ffi_attack_", dir="/tmp"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def _victim_env(base: Path, cache: Path, cxx: Path, log: Path, sleep: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(TVM_FFI_CACHE_DIR=str(cache), CXX=str(cxx), JIT_LOG=str(log), JIT_SLEEP=sleep)
    return env


def _run_victim(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """VICTIM (a cold load_inline of SOURCE) in its own process, under env."""
    return subprocess.run(
        [sys.executable, "-c", VICTIM.format(source=SOURCE)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _slow_cxx(base: Path) -> tuple[Path, Path]:
    cxx = base / "slow-c++"
    cxx.write_text(SLOW_CXX)
    cxx.chmod(0o755)
    log = base / "compile.log"
    log.touch()
    log.chmod(0o644)
    return cxx, log


def _entry_name(base: Path, cxx: Path, log: Path) -> str:
    """The cache entry name the victim will use: the key does not depend on the root."""
    env = _victim_env(base, base / "dry-run-cache", cxx, log, "0")
    code = f"from tvm_ffi import cpp; print(cpp.build_inline('jit_victim', cpp_sources={SOURCE!r}))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    shutil.rmtree(base / "dry-run-cache")
    log.write_text("")
    return Path(out.stdout.strip()).parent.name


@needs_root
def test_cache_swap_by_writer_of_parent_is_refused(world, evil_library):
    """Issue 9, item 1: a user who can write the cache's parent swaps the cache for a link
    to their own during the victim's cold build. The victim must refuse that cache up
    front (its parent is not the victim's) and never run the attacker's library."""
    evil_lib, marker = evil_library
    cxx, log = _slow_cxx(world)
    entry = _entry_name(world, cxx, log)
    shared = world / "shared"  # the attacker's directory, holding the victim's cache
    shared.mkdir()
    cache = shared / "cache"
    cache.mkdir(mode=0o700)  # private, owned by the victim: the old check passed it
    planted = shared / "evil" / entry
    planted.mkdir(parents=True)
    shutil.copy(evil_lib, planted / "jit_victim.so")
    for path in (shared, shared / "evil", planted, planted / "jit_victim.so"):
        os.chown(path, ATTACKER, ATTACKER)
    # Waits for the victim's compiler, then swaps the cache for a link to its own.
    attack = (
        f'i=0; while ! grep -q compiling "{log}"; do i=$((i+1)); [ $i -gt 600 ] && exit 1; '
        f"sleep 0.05; done; "
        f'mv "{cache}" "{shared}/old" && ln -s "{shared}/evil" "{cache}"'
    )
    attacker = subprocess.Popen(
        ["/bin/sh", "-c", attack], user=ATTACKER, group=ATTACKER, extra_groups=[]
    )
    try:
        victim = _run_victim(_victim_env(world, cache, cxx, log, "2"))
    finally:
        attacker.kill()
        attacker.wait()
    assert victim.returncode == 0, victim.stderr
    assert victim.stdout == (
        f"refused: refusing cache directory {cache}: {shared} above it is owned by uid "
        f"{ATTACKER} (neither you nor root), who could swap what lies under it; set "
        "TVM_FFI_CACHE_DIR to a directory you own\n"
    )
    assert not marker.exists()
    assert log.read_text() == ""  # refused before any compiler ran


@needs_root
def test_cache_link_planted_in_sticky_dir_is_refused(world, evil_library):
    """A sticky shared directory (like /tmp): another user plants the victim's cache path
    as a link to a directory of theirs holding a library. The link is resolved once and
    the directory it leads to, owned by the attacker, is refused."""
    evil_lib, marker = evil_library
    cxx, log = _slow_cxx(world)
    entry = _entry_name(world, cxx, log)
    sticky = world / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)
    shutil.copy(evil_lib, world / "evil.so")
    (world / "evil.so").chmod(0o644)
    plant = (
        f'mkdir -p "{sticky}/theirs/{entry}" && '
        f'cp "{world}/evil.so" "{sticky}/theirs/{entry}/jit_victim.so" && '
        f'ln -s "{sticky}/theirs" "{sticky}/cache"'
    )
    subprocess.run(
        ["/bin/sh", "-c", plant], user=ATTACKER, group=ATTACKER, extra_groups=[], check=True
    )
    victim = _run_victim(_victim_env(world, sticky / "cache", cxx, log, "0"))
    assert victim.returncode == 0, victim.stderr
    assert victim.stdout == (
        f"refused: refusing cache directory {sticky}/cache: {sticky}/cache is a symbolic link "
        f"owned by uid {ATTACKER} (neither you nor root), who could point it anywhere, even at "
        "a directory of yours; set TVM_FFI_CACHE_DIR to a directory you own\n"
    )
    assert not marker.exists()


@needs_root
def test_build_directory_link_to_victims_own_dir_is_refused(world):
    """Issue 20, item 2: in a sticky shared directory another user plants the name the
    victim will pass as build_directory, as a link to one of the victim's private
    directories. The directory it leads to is the victim's own, so only the link's owner
    tells the attack apart: it is refused and nothing is written there."""
    sticky = world / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)
    private = world / "private"
    private.mkdir(mode=0o700)
    (private / "main.cpp").write_text("// the victim's own file\n")
    planted = sticky / "build"
    subprocess.run(
        ["ln", "-s", str(private), str(planted)],
        user=ATTACKER,
        group=ATTACKER,
        extra_groups=[],
        check=True,
    )
    with pytest.raises(PermissionError) as info:
        cpp.load_inline("jit_victim", cpp_sources=SOURCE, build_directory=planted)
    assert str(info.value) == (
        f"refusing build_directory {planted}: {planted} is a symbolic link owned by uid "
        f"{ATTACKER} (neither you nor root), who could point it anywhere, even at a directory "
        "of yours; choose a build_directory that you own"
    )
    assert sorted(p.name for p in private.iterdir()) == ["main.cpp"]
    assert (private / "main.cpp").read_text() == "// the victim's own file\n"


def test_build_directory_own_link_in_sticky_dir_is_followed(tmp_path):
    """A link of one's own in a sticky directory is one nobody else can change: followed."""
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)
    target = tmp_path / "target"
    (sticky / "build").symlink_to(target)
    mod = cpp.load_inline("jit_own_link", cpp_sources=SOURCE, build_directory=sticky / "build")
    assert mod.answer() == 42
    assert Path(mod.path).parent == target
    assert (target / "build.ninja").is_file()


def test_cache_parent_writable_by_others_is_refused(tmp_path, monkeypatch):
    parent = tmp_path / "open"
    parent.mkdir()
    parent.chmod(0o777)
    monkeypatch.setenv("TVM_FFI_CACHE_DIR", str(parent / "cache"))
    with pytest.raises(PermissionError) as info:
        cpp.build_inline("jit_open_parent", cpp_sources=SOURCE)
    assert str(info.value) == (
        f"refusing cache directory {parent}/cache: {parent} above it is writable by group "
        "or others (mode 777), who could swap what lies under it; set TVM_FFI_CACHE_DIR to "
        "a directory you own"
    )
    assert not (parent / "cache").exists()


def test_entry_replaced_by_link_is_refused_not_followed(tmp_path, evil_library):
    """One user: the entry directory becomes a link to a directory holding another
    library. The cache never follows a link inside it: the call fails, naming the entry."""
    evil_lib, marker = evil_library
    entry = Path(cpp.build_inline("jit_linked_entry", cpp_sources=SOURCE)).parent
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(evil_lib, elsewhere / "jit_linked_entry.so")
    shutil.rmtree(entry)
    entry.symlink_to(elsewhere)
    with pytest.raises(PermissionError) as info:
        cpp.load_inline("jit_linked_entry", cpp_sources=SOURCE)
    assert str(info.value) == (
        f"refusing cache entry {entry}: not a directory (a symbolic link or a file where "
        "the entry should be); remove it"
    )
    assert not marker.exists()


def test_library_replaced_by_link_is_rebuilt_not_followed(tmp_path, evil_library):
    """One user: the published library becomes a link to another library. It is treated
    as a damaged entry (warned, removed, rebuilt); the link target is left alone."""
    evil_lib, marker = evil_library
    path = Path(cpp.build_inline("jit_linked_lib", cpp_sources=SOURCE))
    path.unlink()
    path.symlink_to(evil_lib)
    with pytest.warns(RuntimeWarning) as warned:
        mod = cpp.load_inline("jit_linked_lib", cpp_sources=SOURCE)
    assert [str(w.message) for w in warned] == [
        f"tvm_ffi.cpp: the cached library {path} is damaged (a symbolic link, never "
        "followed); rebuilding it"
    ]
    assert mod.answer() == 42
    assert not marker.exists()
    assert evil_lib.is_file() and not path.is_symlink()


def test_build_directory_writable_by_others_is_refused(tmp_path):
    """Issue 9, item 1: another user could replace the library between build and load."""
    build_dir = tmp_path / "build"
    build_dir.mkdir()
    build_dir.chmod(0o777)
    with pytest.raises(PermissionError) as info:
        cpp.load_inline("jit_open_dir", cpp_sources=SOURCE, build_directory=build_dir)
    assert str(info.value) == (
        f"refusing build_directory {build_dir}: writable by group or others (mode 777); "
        "choose a build_directory that only you can write"
    )
    assert list(build_dir.iterdir()) == []


def test_build_directory_lock_is_held_until_loaded(tmp_path, monkeypatch):
    """Between the build and the load no other process may relink the library."""
    build_dir = tmp_path / "build"
    seen = []
    real_load = tvm_ffi.load_module

    def load_while_probing_lock(path):
        fd = os.open(build_dir / "lock", os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            seen.append("unlocked")
        except BlockingIOError:
            seen.append("locked")
        finally:
            os.close(fd)
        return real_load(path)

    monkeypatch.setattr(tvm_ffi, "load_module", load_while_probing_lock)
    mod = cpp.load_inline("jit_locked_load", cpp_sources=SOURCE, build_directory=build_dir)
    assert mod.answer() == 42
    assert seen == ["locked"]


def test_build_directory_lock_is_held_until_loaded_by_load_inline_many(tmp_path, monkeypatch):
    """Issue 20, item 4: load_inline_many loaded after all builds, with the locks let go:
    a process that built v=1 in a shared build_directory got another's v=2."""
    dirs = [tmp_path / "build0", tmp_path / "build1"]
    seen = []
    real_load = tvm_ffi.load_module

    def load_while_probing_lock(path):
        fd = os.open(Path(path).parent / "lock", os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            seen.append((Path(path).parent, "unlocked"))
        except BlockingIOError:
            seen.append((Path(path).parent, "locked"))
        finally:
            os.close(fd)
        return real_load(path)

    monkeypatch.setattr(tvm_ffi, "load_module", load_while_probing_lock)
    modules = [
        {"name": f"jit_many_locked_{i}", "build_directory": d,
         "cpp_sources": f"int f() {{ return {i}; }}", "functions": ["f"]}
        for i, d in enumerate(dirs)
    ]  # fmt: skip
    assert [m.f() for m in cpp.load_inline_many(modules, max_jobs=2)] == [0, 1]
    assert sorted(seen) == [(dirs[0], "locked"), (dirs[1], "locked")]


def test_build_directory_that_is_a_file_is_named(tmp_path):
    target = tmp_path / "not_a_dir"
    target.write_text("x")
    with pytest.raises(NotADirectoryError) as info:
        cpp.build_inline("jit_file_dir", cpp_sources=SOURCE, build_directory=target)
    assert str(info.value) == f"build_directory {target} is not a directory (it is a regular file)"
    assert target.read_text() == "x"


def test_shared_sticky_cache_dir_suggests_a_private_one(tmp_path, monkeypatch):
    """A /tmp-like directory: `chmod go-w` would break its other users; say what to use."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    monkeypatch.setenv("TVM_FFI_CACHE_DIR", str(shared))
    with pytest.raises(PermissionError) as info:
        cpp.build_inline("jit_shared", cpp_sources=SOURCE)
    assert str(info.value) == (
        f"refusing cache directory {shared}: a shared directory (mode 1777) where other "
        "users can create files; set TVM_FFI_CACHE_DIR to a private directory (e.g. "
        "TVM_FFI_CACHE_DIR=~/.cache/tvm-ffi)"
    )


def test_default_cache_under_unusable_home_names_path_and_variable(tmp_path, monkeypatch):
    home = tmp_path / "home_is_a_file"
    home.write_text("")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("TVM_FFI_CACHE_DIR")
    with pytest.raises(NotADirectoryError) as info:
        cpp.build_inline("jit_no_home", cpp_sources=SOURCE)
    assert str(info.value) == (
        f"cache directory {home}/.cache/tvm-ffi is not a directory ({home} is a regular "
        f"file); it is the default cache directory, under HOME={home}: set "
        "TVM_FFI_CACHE_DIR to a directory you own"
    )


def test_created_directories_are_private_whatever_the_umask(tmp_path, monkeypatch):
    root = tmp_path / "a" / "b" / "cache"
    monkeypatch.setenv("TVM_FFI_CACHE_DIR", str(root))
    old = os.umask(0)
    try:
        path = Path(cpp.build_inline("jit_umask", cpp_sources=SOURCE))
    finally:
        os.umask(old)
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o755
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    # and a second call, which reuses the checked root, still finds them acceptable
    assert cpp.build_inline("jit_umask", cpp_sources=SOURCE) == str(path)
