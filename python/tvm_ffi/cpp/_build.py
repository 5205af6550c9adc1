"""Run ninja on a build directory and turn a failure into a readable :class:`BuildError`."""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from pathlib import Path

from .._embed_names import SYMBOL_PREFIX
from ._dir_links import DirLink, readable
from ._env import python_executable
from ._prebuilt import ninja_launch
from ._progress import NinjaProgress

__all__ = [
    "BuildError",
    "first_error_line",
    "headline_of",
    "run_ninja",
    "stop_builds",
    "stop_event",
]

# gcc/clang: "main.cpp:3:5: error: ..." (also "fatal error:"); nvcc/EDG: "cuda.cu(3): error: ...".
_GCC_ERROR = re.compile(r"^\S[^:]*:\d+(?::\d+)?: (?:fatal )?error: ")
_NVCC_ERROR = re.compile(r"^\S[^(]*\(\d+\): (?:catastrophic )?error: ")
_STEP_HEADER = re.compile(r"^\[\d+/\d+\] ")
# nvcc's own failures ("nvcc fatal   : Unsupported gpu architecture 'compute_10'").
_NVCC_FATAL = re.compile(r"^nvcc fatal\s*:")
# GNU ld: "main.cpp:(.text+0x11): undefined reference to `g(int)'"; lld: "undefined symbol: g(int)".
_UNDEFINED = re.compile(
    r"undefined reference to [`'](?P<sym>[^`']+)'|undefined symbol: (?P<lld>.+)$"
)
# Where: GNU ld "main.cpp:(.text+0x11): ..."; gold "obj/main.o:main.cpp:function f(): error:
# ..."; lld and mold on a later line, ">>> referenced by main.cpp:2".
_REFERENCED_FROM = re.compile(r"^(?P<source>[^:(\s]+):\(|^[^:\s]+\.o:(?P<gold>[^:\s]+):")
_REFERENCED_BY = re.compile(r"^>>> referenced by (?P<source>[^\s:]+)", re.MULTILINE)
_NO_SPACE = "No space left on device"


class BuildError(RuntimeError):
    """A JIT build failed.

    ``str(err)`` starts with the compiler's first error line (``file:line:col: error: msg``
    for gcc/clang, ``file(line): error: msg`` for nvcc). Attributes:

    - ``command``: the command line of the failing step (as ninja ran it);
    - ``log``: the complete build output;
    - ``build_dir``: the directory holding ``build.ninja``, the sources and the objects.
    """

    def __init__(self, message: str, *, command: str, log: str, build_dir: Path) -> None:
        super().__init__(message)
        self.command = command
        self.log = log
        self.build_dir = build_dir


def first_error_line(output: str) -> str | None:
    """The first ``error:`` line of compiler output, None when there is none."""
    lines = output.splitlines()
    for pattern in (_GCC_ERROR, _NVCC_ERROR):
        for line in lines:
            if pattern.match(line):
                return line.rstrip()
    for line in lines:  # the linker says what is missing; collect2 only that it failed
        if "undefined reference to" in line or "undefined symbol: " in line:
            return line.rstrip()
        if ": cannot find " in line:
            return line.rstrip()
    for line in lines:  # other tools: "... error ..."
        if "error" in line.lower() and not line.startswith("ninja: "):
            return line.rstrip()
    return None


def headline_of(step_output: str, log: str, embeds: Sequence[str] = ()) -> str | None:
    """The line that says why the build failed: a full disk first (whatever tool hit it,
    the rest is its consequence), then nvcc's own fatal errors, then the first compiler
    or linker error. An undefined symbol is named demangled; a missing embedded image
    with the names this build does embed."""
    for text in (step_output, log):
        for line in text.splitlines():
            if _NO_SPACE in line:
                return line.strip()
    for text in (step_output, log):
        for line in text.splitlines():
            if _NVCC_FATAL.match(line):
                return line.strip()
    line = first_error_line(step_output) or first_error_line(log)
    if line is not None:
        match = _UNDEFINED.search(line)
        if match:
            source = _REFERENCED_FROM.match(line)
            where = source and (source.group("source") or source.group("gold"))
            if where is None:
                later = _REFERENCED_BY.search(step_output) or _REFERENCED_BY.search(log)
                where = later.group("source") if later else None
            return _undefined_headline(
                match.group("sym") or match.group("lld").strip(), where, embeds
            )
    return line


def _undefined_headline(symbol: str, where: str | None, embeds: Sequence[str]) -> str:
    if symbol.startswith(SYMBOL_PREFIX):
        image = symbol[len(SYMBOL_PREFIX) :]
        image = image[: -len("_end")] if image.endswith("_end") else image
        have = ", ".join(sorted(embeds)) if embeds else "none"
        return (
            f"undefined symbol {symbol}: no image named {image!r} is embedded in this build "
            f"(embedded images: {have}); pass it in embed_cubin={{{image!r}: ...}}"
        )
    symbol = _demangle(symbol)
    source = f" (referenced from {where})" if where else ""
    if re.match(r"cuda[A-Z]\w*$", symbol):
        # Code that uses CUDA links cudart whenever the CUDA found has one (as needed).
        return (
            f"undefined symbol {symbol}{source}: a CUDA runtime function, and the CUDA this "
            "build uses has no libcudart: install one (pip install nvidia-cuda-runtime) or "
            "link it yourself (extra_ldflags=['-L<dir of libcudart.so>', '-lcudart'])"
        )
    return (
        f"undefined symbol {symbol}{source}: define it, or link the library that does "
        "(extra_ldflags)"
    )


def _demangle(symbol: str) -> str:
    # ld demangles already; lld and a `--no-demangle` linker leave "_Z..." names.
    if not symbol.startswith("_Z"):
        return symbol
    import subprocess

    try:
        out = subprocess.run(
            ["c++filt", symbol], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return symbol
    return out or symbol


def _failed_step(log: str) -> tuple[str, str]:
    """Return (command, output) of the first step ninja reports as FAILED."""
    lines = log.splitlines()
    for index, line in enumerate(lines):
        if line.startswith("FAILED: "):
            command = lines[index + 1] if index + 1 < len(lines) else ""
            body = []
            for rest in lines[index + 2 :]:
                if _STEP_HEADER.match(rest) or rest.startswith(("FAILED: ", "ninja: ")):
                    break
                body.append(rest)
            return command, "\n".join(body)
    return "", log


def _tool_env() -> dict[str, str]:
    env = dict(os.environ)
    # C messages keep the "error:" lines parseable (and quotes plain ASCII).
    env["LC_ALL"] = "C"
    # The embed step runs `python -m tvm_ffi.utils.embed_cubin`: make it the same package.
    package_parent = str(Path(__file__).resolve().parents[2])  # .../<parent>/tvm_ffi/cpp/
    paths = [package_parent, *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env


# Starts ninja for run_ninja where the package has no ninja_launch program (src/jit/, the
# same steps): `python -I -S -c _LAUNCH <builder pid> <dir fd> ninja ...`.
# PR_SET_PDEATHSIG makes the kernel send ninja SIGTERM when the builder dies, even by
# SIGKILL, and ninja answers SIGTERM by stopping every step it runs. fchdir() on the
# descriptor the builder checked: ninja works in that directory, whatever its path
# names by now.
_LAUNCH = """
import ctypes, os, signal, sys
prctl = getattr(ctypes.CDLL(None), "prctl", None)
if prctl is not None:
    prctl(1, signal.SIGTERM)
if os.getppid() != int(sys.argv[1]):
    sys.exit(1)
os.fchdir(int(sys.argv[2]))
os.close(int(sys.argv[2]))
os.execv(sys.argv[3], sys.argv[3:])
"""

# Ninja process groups still running, ended at interpreter exit (a daemon thread's build).
_running: set[int] = set()
_atexit_registered = False
# load_inline_many's stop signal, set in its pool threads (None elsewhere): Ctrl-C in the
# caller's thread ends the builds it started, and those not yet started never start.
stop_event: ContextVar[threading.Event | None] = ContextVar("tvm_ffi_stop", default=None)
_groups: dict[int, threading.Event] = {}  # ninja process group -> its stop signal
_registry = threading.Lock()


def stop_builds(event: threading.Event) -> None:
    """Set ``event`` and end the ninja of every build running under it (SIGTERM)."""
    with _registry:
        event.set()
        groups = [pgid for pgid, owner in _groups.items() if owner is event]
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGTERM)


def _stop(pgid: int, proc) -> None:
    """End ninja and its steps: SIGTERM to its group (ninja passes it to each step's
    group), then SIGKILL if it has not gone within a few seconds."""
    import subprocess

    for sig, grace in ((signal.SIGTERM, 5.0), (signal.SIGKILL, None)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, sig)
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def _stop_all_at_exit() -> None:
    for pgid in list(_running):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGTERM)


def _lines(fd: int, progress: NinjaProgress | None) -> Iterator[str]:
    """Ninja's output line by line as it comes (decoded, newlines as text mode makes them),
    ticking ``progress`` between reads, also while ninja says nothing."""
    import codecs
    import io
    import select

    decoder = io.IncrementalNewlineDecoder(
        codecs.getincrementaldecoder("utf-8")(errors="replace"), translate=True
    )
    pending = ""
    while True:
        timeout = progress.timeout() if progress is not None else None
        if timeout is None or select.select([fd], [], [], timeout)[0]:
            data = os.read(fd, 65536)
            pending += decoder.decode(data, final=not data)
            *lines, pending = pending.split("\n")
            yield from (line + "\n" for line in lines)
            if not data:
                break
        if progress is not None:
            progress.tick()
    if pending:
        yield pending


def run_ninja(
    ninja: Path,
    build_dir: Path,
    *,
    dir_fd: int,
    name: str,
    verbose: bool,
    embeds: Sequence[str] = (),
    links: Sequence[DirLink] = (),
    jobs: int | None = None,
    progress: NinjaProgress | None = None,
) -> str:
    """Run ninja in the directory open as ``dir_fd`` (``build_dir``); return its output.

    Raise :class:`BuildError` on failure. Ninja runs in a process group of its own, ended
    with the builder: on an exception or KeyboardInterrupt here, at interpreter exit,
    and (through the parent-death signal) when the builder is killed. With ``verbose`` the
    output (with full command lines) is streamed to stderr as it comes. ``embeds`` are the
    names of the embedded images, for the message about a missing one; ``links`` the
    directories named through links, given back by path in the message; ``jobs`` caps
    ninja's parallel steps (its default: all cores); ``progress`` says what runs long.
    """
    import subprocess

    global _atexit_registered
    if not _atexit_registered:
        atexit.register(_stop_all_at_exit)
        _atexit_registered = True
    args = ["-v"] if verbose else []
    if jobs is not None:
        args += ["-j", str(jobs)]
    shown = " ".join([str(ninja), "-C", str(build_dir), *args])
    # The package's small program, else the same steps in a Python interpreter (slower).
    native = ninja_launch()
    starter = [native] if native else [python_executable(), "-I", "-S", "-c", _LAUNCH]
    launch = [*starter, str(os.getpid()), str(dir_fd)]
    event = stop_event.get()
    with _registry:  # stop_builds either sees this ninja or keeps it from starting
        if event is not None and event.is_set():
            raise KeyboardInterrupt(f"building module {name!r}: stopped (interrupted)")
        proc = subprocess.Popen(
            [*launch, str(ninja), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=_tool_env(),
            pass_fds=(dir_fd,),
            start_new_session=True,  # its own process group, away from the terminal's Ctrl-C
        )
        if event is not None:
            _groups[proc.pid] = event
    _running.add(proc.pid)
    chunks: list[str] = []
    try:
        assert proc.stdout is not None
        if progress is not None:
            progress.started(proc.pid)
        for line in _lines(proc.stdout.fileno(), progress):
            chunks.append(line)
            if verbose:
                sys.stderr.write(line)
                sys.stderr.flush()
        returncode = proc.wait()
    except BaseException:
        # Interrupted (Ctrl-C) or failed: stop ninja, which stops its compilers; outputs
        # they had not finished stay as *.tmp files and are never taken for results.
        _stop(proc.pid, proc)
        raise
    finally:
        _running.discard(proc.pid)
        with _registry:
            _groups.pop(proc.pid, None)
        if proc.stdout is not None:
            proc.stdout.close()
    log = "".join(chunks)
    if returncode == 0:
        return log
    command, step_output = _failed_step(log)
    headline = headline_of(step_output, log, embeds)
    if headline is None:
        headline = f"ninja exited with code {returncode}"
    excerpt = "\n".join(step_output.strip().splitlines()[:40])
    headline, excerpt = (readable(text, links, build_dir) for text in (headline, excerpt))
    message = (
        f"{headline}\n"
        f"building module {name!r} in {build_dir} failed\n"
        f"command: {command or shown}\n"
        f"output:\n{excerpt}\n"
        "(the complete output is in BuildError.log)"
    )
    raise BuildError(message, command=command or shown, log=log, build_dir=build_dir)
