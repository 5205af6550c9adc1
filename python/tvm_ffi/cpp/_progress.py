"""What a build says on stderr while its caller waits, with nothing configured.

A newcomer's script configures no logging, so the INFO records of the ``tvm_ffi.cpp``
logger show nothing, and a wait on another process's build or a cold build of device code
looked like a hang. As cargo and pip do, such waits say so, once and briefly:

- a wait on another process's build lock that passes 1.5 s: who holds it, since when
  (``_cache.build_lock``);
- a build that will take long: at its start when it compiles device code (nvcc's device
  pass alone takes seconds: 3.6 s for a one-line kernel, one architecture, on the 2-core
  test machine), else once it has run :data:`ANNOUNCE_AFTER` seconds, so that a small C++
  module (0.4-1.5 s) and a relink stay quiet;
- with verbose, each step still running after :data:`LONG_STEP` seconds, as ninja writes a
  step to a pipe only when it ends.

A cache hit says nothing. Where the application configured logging (a handler on the
``tvm_ffi.cpp`` logger's chain) the same events are its INFO records and its level
decides: these lines are not written. ``TVM_FFI_BUILD_QUIET=1`` silences them; verbose
(``verbose=True``, ``TVM_FFI_BUILD_VERBOSE=1``) always shows them.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path

from ._ninja import BuildPlan

__all__ = [
    "ANNOUNCE_AFTER",
    "LONG_STEP",
    "QUIET_ENV",
    "NinjaProgress",
    "say",
    "shown",
    "waiting",
]

QUIET_ENV = "TVM_FFI_BUILD_QUIET"
ANNOUNCE_AFTER = 2.0  # seconds a build without device code runs before it says so
LONG_STEP = 1.0  # seconds a step runs before verbose says it started
_POLL = 0.25  # how often verbose looks at the steps ninja runs


def shown(verbose: bool) -> bool:
    """Whether the lines of this module are written: always with ``verbose``; else unless
    ``TVM_FFI_BUILD_QUIET`` is set or logging is configured (then its records speak)."""
    if verbose:
        return True
    if os.environ.get(QUIET_ENV, "").strip().lower() in ("1", "true", "yes", "on"):
        return False
    logging = sys.modules.get("logging")  # not imported: nobody configured it
    return logging is None or not logging.getLogger("tvm_ffi.cpp").hasHandlers()


def say(text: str) -> None:
    """Write one line to stderr, at once."""
    sys.stderr.write(f"tvm_ffi.cpp: {text}\n")
    sys.stderr.flush()


def waiting(holder: str, lock_fd: int, what: str, lock_path: Path, verbose: bool) -> None:
    """Say that this process waits for ``holder`` (``_cache._holder``) building ``what``.
    The lock file's mtime is when the holder wrote its record, on taking the lock."""
    if not shown(verbose):
        return
    since = ""
    if holder.endswith(")"):  # the holder's record is there: the mtime is its own
        with contextlib.suppress(OSError):
            stamp = time.localtime(os.fstat(lock_fd).st_mtime)
            since = " since " + time.strftime("%H:%M:%S", stamp)
    say(f"waiting for {holder} building {what}{since} (lock {lock_path})")


class NinjaProgress:
    """The lines of one ninja run (see the module doc); ``run_ninja`` calls :meth:`tick`
    after each read of ninja's output and whenever :meth:`timeout` passes without one."""

    def __init__(self, name: str, plan: BuildPlan, build_dir: Path, *, verbose: bool, cold: bool):
        self._headline = f"building {name!r} ({_sources(plan)}) in {build_dir}"
        self._shown = shown(verbose)
        self._verbose = verbose
        # Device code in a cold build is long for sure; a build_directory's ninja may have
        # nothing to do, and says so only if it runs long.
        self._announce_after = 0.0 if verbose or (cold and plan.device_code) else ANNOUNCE_AFTER
        self._steps = _step_labels(plan)
        self._seen: dict[str, float] = {}  # step output -> when first seen running
        self._announced: set[str] = set()
        self._start = time.monotonic()
        self._pid = 0
        self._next_poll = 0.0

    def started(self, pid: int) -> None:
        """Ninja runs as ``pid``."""
        self._start = time.monotonic()
        self._pid = pid
        self.tick()

    def timeout(self) -> float | None:
        """Seconds until :meth:`tick` has something to do; None: nothing more, ever."""
        if not self._shown:
            return None
        due = [self._start + self._announce_after] if self._headline else []
        if self._verbose:
            due.append(self._next_poll)
        return max(0.0, min(due) - time.monotonic()) if due else None

    def tick(self) -> None:
        if not self._shown:
            return
        now = time.monotonic()
        if self._headline and now >= self._start + self._announce_after:
            say(self._headline)
            self._headline = ""
        if self._verbose and now >= self._next_poll:
            self._next_poll = now + _POLL
            self._announce_steps(now)

    def _announce_steps(self, now: float) -> None:
        running = _running_steps(self._pid, self._steps)
        for output in running:
            self._seen.setdefault(output, now)
        for number, (output, since) in enumerate(self._seen.items(), 1):
            if output in running and output not in self._announced and now - since >= LONG_STEP:
                self._announced.add(output)
                say(f"[{number}/{len(self._steps)}] {self._steps[output]}")


def _sources(plan: BuildPlan) -> str:
    """What the build compiles, for its headline: ``main.cpp, cuda.cu with nvcc``."""
    names = [_compile_label(unit.source, unit.cuda and not unit.host) for unit in plan.compiles]
    if len(names) > 3:
        device = sum(unit.cuda and not unit.host for unit in plan.compiles)
        return f"{len(names)} sources" + (f", {device} with nvcc" if device else "")
    return ", ".join(names) or "link only"


def _compile_label(source: str, device: bool) -> str:
    return os.path.basename(source) + (" with nvcc" if device else "")


def _step_labels(plan: BuildPlan) -> dict[str, str]:
    """Each step of ``build.ninja`` by its output: ``obj/cuda.o`` -> ``compiling cuda.cu``."""
    steps = {
        unit.obj: "compiling " + _compile_label(unit.source, unit.cuda and not unit.host)
        for unit in plan.compiles
    }
    if plan.embeds and plan.embed_asm is None:
        if len(plan.compiles) + len(plan.objects) > 1:
            steps[plan.inputs_obj] = "merging objects"
        steps[plan.merged_obj] = "embedding images"
    name = os.path.basename(plan.output)
    steps.setdefault(plan.output, ("merging into " if name.endswith(".o") else "linking ") + name)
    return steps


def _running_steps(pid: int, steps: dict[str, str]) -> list[str]:
    """The outputs of the steps ninja (``pid``) runs now, in the order of ``steps``: its
    children are ``sh -c <command>``, and every command writes ``<output>.tmp`` (see
    _ninja). Linux only, as the JIT is: the kernel lists a task's children in /proc."""
    commands: list[str] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as file:
                children = file.read().split()
        except OSError:
            continue
        for child in children:
            try:
                with open(f"/proc/{child}/cmdline", "rb") as file:
                    commands.append(file.read().decode("utf-8", "replace"))
            except OSError:
                continue
    return [output for output in steps if any(f"{output}.tmp" in c for c in commands)]
