"""A process that waits on another's build says so: who holds the lock (pid and host, which
the holder records in the lock file), after a second or two and then periodically; and
every cache hit is a DEBUG record."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tvm_ffi import cpp
from tvm_ffi.cpp import _cache

BROKEN = "int f() { return nope; }"

# Holds the entry's build lock through the package's own build_lock, as a building process
# does, until its stdin closes.
HOLDER = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from tvm_ffi.cpp import _cache
    entry = Path(sys.argv[1])
    fd = os.open(entry, os.O_RDONLY | os.O_DIRECTORY)
    with _cache.build_lock(fd, entry, 10):
        print("held", flush=True)
        sys.stdin.read()
    """
)


@pytest.fixture
def held_entry():
    """(entry directory, holder pid): a cache entry whose lock another process holds."""
    with pytest.raises(cpp.BuildError) as info:
        cpp.build_inline("lock_wait", cpp_sources=BROKEN)
    entry = Path(info.value.build_dir)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(entry)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline() == "held\n"
        yield entry, holder
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)


def test_waiting_on_a_build_logs_who_holds_the_lock(held_entry, caplog, monkeypatch):
    entry, holder = held_entry
    monkeypatch.setattr(_cache, "_WAIT_LOG_AFTER", 0.3)
    monkeypatch.setattr(_cache, "_WAIT_LOG_EVERY", 0.4)
    monkeypatch.setenv("TVM_FFI_BUILD_LOCK_TIMEOUT", "1.5")
    caplog.set_level(logging.INFO, logger="tvm_ffi")
    with pytest.raises(TimeoutError) as info:
        cpp.build_inline("lock_wait", cpp_sources=BROKEN)
    who = f"another process (pid {holder.pid} on {os.uname().nodename})"
    assert str(info.value) == (
        f"timed out after 1.5 s waiting for the build lock {entry / 'lock'} ({who} is "
        "building the same module; raise TVM_FFI_BUILD_LOCK_TIMEOUT to wait longer)"
    )
    waits = [r for r in caplog.records if r.getMessage().startswith("waiting for")]
    assert len(waits) >= 2  # after 0.3 s, then every 0.4 s until the timeout
    for record in waits:
        assert (record.name, record.levelname) == ("tvm_ffi.cpp", "INFO")
        assert re.fullmatch(
            rf"waiting for the build lock {re.escape(str(entry / 'lock'))}: {re.escape(who)} "
            r"is building the same module \(waited \d+ s; timeout 1\.5 s\)",
            record.getMessage(),
        )


@pytest.mark.usefixtures("held_entry")
def test_a_short_wait_logs_nothing(caplog, monkeypatch):
    monkeypatch.setenv("TVM_FFI_BUILD_LOCK_TIMEOUT", "0.3")  # under _WAIT_LOG_AFTER
    caplog.set_level(logging.INFO, logger="tvm_ffi")
    with pytest.raises(TimeoutError):
        cpp.build_inline("lock_wait", cpp_sources=BROKEN)
    assert [r.getMessage() for r in caplog.records if "waiting" in r.getMessage()] == []


def test_cache_hit_without_its_hit_record_is_a_debug_record(caplog, cache_dir):
    code = "int f() { return 0; }\n"
    path = cpp.build_inline("hit_logged", cpp_sources=code)
    for record in (cache_dir / "hits").rglob("*"):  # as in a cache from another version
        if record.is_file():
            record.unlink()
    caplog.set_level(logging.DEBUG, logger="tvm_ffi")
    assert cpp.build_inline("hit_logged", cpp_sources=code) == path
    records = [(r.name, r.levelname, r.getMessage()) for r in caplog.records]
    assert records == [("tvm_ffi.cpp", "DEBUG", f"cached {path} (found in its cache entry)")]
