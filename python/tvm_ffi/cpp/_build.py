"""Run ninja on a build directory and turn a failure into a readable :class:`BuildError`."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

__all__ = ["BuildError", "first_error_line", "run_ninja"]

# gcc/clang: "main.cpp:3:5: error: ..." (also "fatal error:"); nvcc/EDG: "cuda.cu(3): error: ...".
_GCC_ERROR = re.compile(r"^\S[^:]*:\d+(?::\d+)?: (?:fatal )?error: ")
_NVCC_ERROR = re.compile(r"^\S[^(]*\(\d+\): (?:catastrophic )?error: ")
_STEP_HEADER = re.compile(r"^\[\d+/\d+\] ")


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
        if "undefined reference to" in line or ": cannot find " in line:
            return line.rstrip()
    for line in lines:  # other tools: "... error ..."
        if "error" in line.lower() and not line.startswith("ninja: "):
            return line.rstrip()
    return None


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


def run_ninja(ninja: Path, build_dir: Path, *, name: str, verbose: bool) -> str:
    """Run ``ninja -C build_dir``; return its output, raise :class:`BuildError` on failure.

    With ``verbose`` the output (with full command lines) is streamed to stderr as it comes.
    """
    import subprocess

    argv = [str(ninja), "-C", str(build_dir)] + (["-v"] if verbose else [])
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=_tool_env(),
        text=True,
        errors="replace",
    )
    chunks: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            chunks.append(line)
            if verbose:
                sys.stderr.write(line)
                sys.stderr.flush()
        returncode = proc.wait()
    except BaseException:
        # Interrupted (Ctrl-C): stop ninja, which stops its compilers; outputs it had not
        # finished stay as *.tmp files and are never taken for results.
        proc.terminate()
        proc.wait()
        raise
    log = "".join(chunks)
    if returncode == 0:
        return log
    command, step_output = _failed_step(log)
    headline = first_error_line(step_output) or first_error_line(log)
    if headline is None:
        headline = f"ninja exited with code {returncode}"
    excerpt = "\n".join(step_output.strip().splitlines()[:40])
    message = (
        f"{headline}\n"
        f"building module {name!r} in {build_dir} failed\n"
        f"command: {command or ' '.join(argv)}\n"
        f"output:\n{excerpt}\n"
        "(the complete output is in BuildError.log)"
    )
    raise BuildError(message, command=command or " ".join(argv), log=log, build_dir=build_dir)
