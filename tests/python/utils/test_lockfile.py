"""tvm_ffi.utils.FileLock: apache-tvm-ffi's advisory lock, between processes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from tvm_ffi.utils import FileLock

# Holds the lock given as argv[1] until stdin closes; says "held" once it has it.
HOLDER = textwrap.dedent(
    """
    import sys
    from tvm_ffi.utils import FileLock
    lock = FileLock(sys.argv[1])
    assert lock.acquire()
    print("held", flush=True)
    sys.stdin.read()
    """
)


@pytest.fixture
def held(tmp_path):
    """A lock file held by another process for the duration of the test."""
    path = tmp_path / "lock"
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
    )  # fmt: skip
    assert proc.stdout.readline() == "held\n"
    yield path
    proc.stdin.close()
    proc.wait()


def test_context_manager_acquires_and_releases(tmp_path):
    path = tmp_path / "lock"
    with FileLock(path) as lock:
        assert lock.is_locked
        assert FileLock(path).acquire() is False  # a second holder is turned away
    assert not lock.is_locked
    other = FileLock(str(path))
    assert other.acquire() is True
    other.release()
    other.release()  # releasing twice is harmless
    assert path.exists()  # the lock file stays: deleting it would break the exclusion


def test_another_process_holds_it(held):
    lock = FileLock(held)
    assert lock.acquire() is False
    with pytest.raises(
        TimeoutError, match=rf"^could not lock '{held}' within 0.2 s \(another process holds it\)$"
    ):
        lock.blocking_acquire(timeout=0.2, poll_interval=0.05)
    assert not lock.is_locked


def test_released_when_the_holder_exits(tmp_path):
    path = tmp_path / "lock"
    code = f"from tvm_ffi.utils import FileLock; assert FileLock({str(path)!r}).acquire()"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
    assert FileLock(path).blocking_acquire(timeout=0) is True


def test_misuse_is_reported(tmp_path):
    lock = FileLock(tmp_path / "lock")
    assert lock.acquire()
    with pytest.raises(RuntimeError, match=r"is already held by this object$"):
        lock.acquire()
    lock.release()
    for bad in (float("nan"), -1, "10"):
        with pytest.raises(ValueError, match=r"^timeout must be None or a number of seconds >= 0"):
            lock.blocking_acquire(timeout=bad)
    with pytest.raises(ValueError, match=r"^poll_interval must be a number of seconds > 0"):
        lock.blocking_acquire(poll_interval=0)
    with pytest.raises(FileNotFoundError, match=r"no_such_dir"):
        FileLock(tmp_path / "no_such_dir" / "lock").acquire()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a link to another user")
def test_link_owned_by_another_user_is_refused(tmp_path):
    """Issue 20, item 15: another user's link in a shared directory names the lock file;
    following it would create (or lock) the file it points at, with our rights."""
    target = tmp_path / "victim_file"
    link = tmp_path / "lock"
    link.symlink_to(target)
    os.lchown(link, 65534, 65534)
    with pytest.raises(PermissionError) as info:
        FileLock(link).acquire()
    assert str(info.value) == (
        f"[Errno 1] refusing lock file '{link}': it is a symbolic link owned by uid 65534 "
        "(neither you nor root), who could point it at any file; remove it or choose another path"
    )
    assert not target.exists()


def test_own_link_is_followed(tmp_path):
    target = tmp_path / "real_lock"
    link = tmp_path / "lock"
    link.symlink_to(target)
    with FileLock(link) as lock:
        assert lock.is_locked
        assert FileLock(target).acquire() is False  # the same file
    assert target.is_file()
