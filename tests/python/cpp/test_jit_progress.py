"""What a script that configures no logging sees on stderr while it waits: one line when a
build will take long, one line when it waits on another process's build (naming it), each
long step's start when verbose, and nothing for a cache hit. Every build runs in a child
process, as a newcomer's script would (pytest's own logging handlers would otherwise count
as configured logging)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

SOURCE = "int f() { return 1; }"

# A compiler whose compile steps take $SLOW seconds.
SLOW_CXX = """#!/bin/sh
case " $* " in *" -c "*) sleep "${SLOW:-0}";; esac
exec c++ "$@"
"""


def script(name: str, *, prelude: str = "", **kwargs: object) -> str:
    """A newcomer's script: build ``name`` (C++ unless kwargs say otherwise), print its path."""
    kwargs.setdefault("cpp_sources", SOURCE)
    return textwrap.dedent(
        f"""
        {prelude}
        import sys
        from tvm_ffi import cpp
        print(cpp.build_inline({name!r}, functions="f", **{kwargs!r}))
        print("built", file=sys.stderr)
        """
    )


def run(capfd, code: str, **env: str) -> tuple[str, str]:
    """Run ``code`` in a child process (its stderr is the terminal's: fd 2); its stdout and
    stderr, less the script's own last line."""
    subprocess.run([sys.executable, "-c", code], env={**os.environ, **env}, check=True)
    out, err = capfd.readouterr()
    assert err.endswith("built\n"), err
    return out, err[: -len("built\n")]


def test_a_cache_hit_says_nothing(capfd, cache_dir):
    code = script("quiet_hit")
    out, _ = run(capfd, code)  # the cold build: fast, maybe quiet (a loaded host is slow)
    assert run(capfd, code) == (out, "")  # found through the hit index
    for record in (cache_dir / "hits").iterdir():
        record.unlink()
    assert run(capfd, code) == (out, "")  # found by the full lookup


def test_a_cold_build_of_device_code_says_so_at_once(capfd, fake_nvcc, tmp_path):
    kernel = "__global__ void k() {}\nint f() { k<<<1, 1>>>(); return 1; }"
    out, err = run(capfd, script("quiet_kernel", cuda_sources=kernel, cpp_sources=None))
    entry = Path(out.strip()).parent  # the fake nvcc is quick: the line came at the start
    assert err == f"tvm_ffi.cpp: building 'quiet_kernel' (cuda.cu with nvcc) in {entry}\n"
    # Into a build_directory that is up to date, ninja has nothing to do: nothing is said.
    code = script(
        "quiet_kernel", cuda_sources=kernel, cpp_sources=None, build_directory=str(tmp_path / "b")
    )
    run(capfd, code)
    assert run(capfd, code)[1] == ""


def test_a_slow_build_says_so_once_it_runs_two_seconds(capfd, install_cxx):
    install_cxx("slow-c++", SLOW_CXX)
    out, err = run(capfd, script("quiet_slow"), SLOW="3")
    entry = Path(out.strip()).parent
    assert err == f"tvm_ffi.cpp: building 'quiet_slow' (main.cpp) in {entry}\n"


@pytest.mark.parametrize(
    ("case", "prelude", "env"),
    [
        ("quiet", "", {"TVM_FFI_BUILD_QUIET": "1"}),
        ("logging at WARNING", "import logging; logging.basicConfig()", {}),
        ("logging at INFO", "import logging; logging.basicConfig(level=logging.INFO)", {}),
    ],
)
def test_the_lines_are_silenced_by_quiet_or_by_configured_logging(
    capfd, install_cxx, case, prelude, env
):
    install_cxx("slow-c++", SLOW_CXX)
    out, err = run(capfd, script("quiet_off", prelude=prelude), SLOW="2.5", **env)
    lines = err.splitlines()
    if case == "logging at INFO":  # the application's records say it, at its level
        entry = Path(out.strip()).parent
        assert lines[0].startswith(
            f"INFO:tvm_ffi.cpp:build_inline 'quiet_off': building C++ source strings in {entry} "
        )
        assert all(line.startswith("INFO:tvm_ffi.cpp:") for line in lines)
    else:
        assert lines == []


def test_a_process_waiting_on_another_names_it_once(capfd, install_cxx, cache_dir):
    install_cxx("slow-c++", SLOW_CXX)
    code = script("quiet_race")
    first = subprocess.Popen(
        [sys.executable, "-c", code], env={**os.environ, "SLOW": "5"}, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        lock = _held_lock(cache_dir, "quiet_race_*", first.pid)
        since = time.strftime("%H:%M:%S", time.localtime(lock.stat().st_mtime))
        _, err = run(capfd, code)  # waits for the first one's build, then loads it
    finally:
        _, first_err = first.communicate(timeout=120)
    host = os.uname().nodename
    assert err == (
        f"tvm_ffi.cpp: waiting for another process (pid {first.pid} on {host}) building "
        f"'quiet_race' since {since} (lock {lock})\n"
    )
    assert first_err == f"tvm_ffi.cpp: building 'quiet_race' (main.cpp) in {lock.parent}\nbuilt\n"


def _held_lock(cache_dir: Path, pattern: str, pid: int) -> Path:
    """The lock file of the entry that process ``pid`` builds, once it holds it."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for lock in cache_dir.glob(f"{pattern}/lock"):
            if lock.read_text().startswith(f"pid {pid} "):
                return lock
        time.sleep(0.05)
    raise AssertionError(f"process {pid} did not take a build lock under {cache_dir}")


def test_verbose_says_a_long_step_as_it_starts_and_streams_ninja(install_cxx):
    install_cxx("slow-c++", SLOW_CXX)
    child = subprocess.Popen(
        [sys.executable, "-c", script("quiet_stream")],
        env={**os.environ, "SLOW": "3", "TVM_FFI_BUILD_VERBOSE": "1"},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    lines = []  # (seconds since start, line) as they arrive
    start = time.monotonic()
    for line in child.stderr:
        lines.append((time.monotonic() - start, line.rstrip("\n")))
    entry = Path(child.stdout.read().strip()).parent
    assert child.wait() == 0
    (t_head, head), (t_step, step), (t_done, done), (_, link), (t_end, end) = lines
    assert head == f"tvm_ffi.cpp: building 'quiet_stream' (main.cpp) in {entry}"
    assert step == "tvm_ffi.cpp: [1/2] compiling main.cpp"
    assert re.match(r"\[1/2\] \S*slow-c\+\+ .* -c main\.cpp -o obj/main\.o\.tmp ", done)
    assert re.match(r"\[2/2\] \S*slow-c\+\+ -shared ", link)
    assert end == "built"
    # The step's line came about a second into its 3 s, long before ninja's own line at
    # its end; ninja's lines came as ninja wrote them, before the build was over.
    assert t_step - t_head >= 0.8
    assert t_done - t_step >= 1.0
    assert t_done < t_end
