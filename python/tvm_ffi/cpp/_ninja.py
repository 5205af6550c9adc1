"""Write the ``build.ninja`` of one JIT module.

The graph: every source -> an object (``c++``, ``c++ -x c`` or ``nvcc``); with embedded
images, one step that merges all objects and the images into a single object
(``python -m tvm_ffi.utils.embed_cubin``); then the link of ``obj/<name>.so``, or for an
output ending in ``.o`` a relocatable link (``c++ -r``) into ``obj/<name>.o``. Ninja never
writes the file that is loaded or handed out: the builder publishes the linked file itself
(see ``_cache.publish``), so a step outliving a killed builder cannot replace it.

Every step writes ``$out.tmp`` and renames it onto ``$out`` only when the tool
succeeded. Ninja decides what is up to date from file mtimes, so a compiler killed
halfway must never leave a truncated object under the real name.

Every value is written through the escapes below (:func:`_path` in build lines,
:func:`_cmd` where it reaches the shell, :func:`_rsp` in a response file), and nothing
else writes ``build.ninja``. Ninja has no way to write a newline, a carriage return or a
NUL: a value holding one is refused (a newline would end the line, and the rest would be
read as ninja statements). The link takes its inputs from a response file: hundreds of
objects with long paths make a command over the 128 KiB that one argument (``sh -c``'s)
may have.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._dir_links import DirLink

__all__ = ["BuildPlan", "Compile", "render"]


@dataclass(frozen=True)
class Compile:
    """One translation unit: ``source`` (relative to the build dir, or absolute) -> ``obj``."""

    source: str
    obj: str
    cuda: bool
    c: bool = False  # a C source: compiled with ``$cxx -x c`` and ``c_cflags``
    # A CUDA source without device code: ``$cxx`` with ``cuda_host_cflags``, nvcc if it fails.
    host: bool = False


@dataclass
class BuildPlan:
    """Everything ``build.ninja`` needs; paths relative to the build directory or absolute."""

    output: str
    cxx: str
    python: str
    compiles: list[Compile]
    cflags: list[str]
    ldflags: list[str]
    nvcc: str | None = None
    cuda_cflags: list[str] = field(default_factory=list)
    # (embed name, image file) pairs; empty means "link the objects directly".
    embeds: list[tuple[str, str]] = field(default_factory=list)
    merged_obj: str = "obj/embedded.o"
    inputs_obj: str = "obj/inputs.o"  # the objects merged for the embed tool (see render)
    objects: list[str] = field(default_factory=list)  # prebuilt objects, linked as they are
    c_cflags: list[str] = field(default_factory=list)
    # A compiler launcher (ccache, sccache) put before $cxx / $nvcc in compile steps.
    launcher: list[str] = field(default_factory=list)
    cuda_launcher: list[str] = field(default_factory=list)
    targets: str = ""  # the CUDA architectures and where they came from, for the log
    cuda_host_cflags: list[str] = field(default_factory=list)  # see _host_cuda.host_flags
    # An assembler file holding ``embeds`` that the link assembles (see _embed_asm): then
    # no embed step runs.
    embed_asm: str | None = None
    # (file, text) of sources the builder writes into the build directory (see _launcher).
    sources: list[tuple[str, str]] = field(default_factory=list)
    # The directories the commands name through links in the build directory, which the
    # builder makes (see _dir_links).
    links: list[DirLink] = field(default_factory=list)

    @property
    def device_code(self) -> bool:
        """Whether a step compiles device code (nvcc, its slowest and hungriest tool)."""
        return any(unit.cuda and not unit.host for unit in self.compiles)

    def outputs(self) -> list[str]:
        """Every file a step writes (their ``.tmp`` siblings are a killed step's leftovers)."""
        objs = [c.obj for c in self.compiles]
        merged = [self.merged_obj, self.inputs_obj] if self.embeds and not self.embed_asm else []
        return [*objs, *merged, self.output]


def _writable(text: str) -> str:
    """``text`` if build.ninja can hold it, else ValueError naming it."""
    if not text.isprintable() and ("\n" in text or "\r" in text or "\0" in text):
        raise ValueError(
            f"cannot write build.ninja: {text!r:.200} holds a newline, a carriage return or "
            "a NUL byte, which ninja has no way to write"
        )
    return text


# A "|" in a path ends it (and starts implicit inputs), and ninja has no escape for it:
# a path holding one names this variable, which build.ninja then defines.
_PIPE = "${pipe}"


def _path(text: str) -> str:
    # Ninja's escaping for paths in build lines: $, space and colon are special there.
    escaped = _writable(text).replace("$", "$$").replace(" ", "$ ").replace(":", "$:")
    return escaped.replace("|", _PIPE)


def _cmd(args: Sequence[str]) -> str:
    # A value that reaches the shell: quote for sh, then escape $ for ninja.
    return _writable(" ".join(shlex.quote(a) for a in args)).replace("$", "$$")


# A response file as gcc and clang read one (@file): whitespace separates arguments, and a
# backslash makes the next character plain, inside quotes too (sh quoting would not do).
_RSP_ESCAPES = {ord(char): "\\" + char for char in " \t\n\r\f\v'\"\\"}


def _rsp(args: Sequence[str]) -> str:
    # A value written into a response file: escaped for the compiler, then $ for ninja.
    return _writable(" ".join(a.translate(_RSP_ESCAPES) for a in args)).replace("$", "$$")


def render(plan: BuildPlan) -> str:
    """Return the text of ``build.ninja`` for ``plan``."""
    lines = [
        "# Generated by tvm_ffi.cpp (rewritten when the inputs change).",
        "ninja_required_version = 1.3",
        f"cxx = {_cmd([plan.cxx])}",
        f"cflags = {_cmd(plan.cflags)}",
        f"ldflags = {_cmd(plan.ldflags)}",
    ]
    if plan.nvcc is not None:
        lines += [f"nvcc = {_cmd([plan.nvcc])}", f"cuda_cflags = {_cmd(plan.cuda_cflags)}"]
    has_c = any(unit.c for unit in plan.compiles)
    if has_c:
        lines.append(f"c_cflags = {_cmd(plan.c_cflags)}")
    has_host = any(unit.host for unit in plan.compiles)
    if has_host:
        lines.append(f"cuda_host_cflags = {_cmd(plan.cuda_host_cflags)}")
    embed_step = bool(plan.embeds) and plan.embed_asm is None
    if embed_step:
        lines.append(f"python = {_cmd([plan.python])}")
    # Only when set, so that a build without one keeps the same build.ninja (and key).
    cxx = "$launcher $cxx" if plan.launcher else "$cxx"
    nvcc = "$cuda_launcher $nvcc" if plan.cuda_launcher else "$nvcc"
    if plan.launcher:
        lines.append(f"launcher = {_cmd(plan.launcher)}")
    if plan.cuda_launcher:
        lines.append(f"cuda_launcher = {_cmd(plan.cuda_launcher)}")
    lines += [
        "",
        "rule cxx",
        f"  command = {cxx} -MMD -MF $out.d -MT $out $cflags -c $in -o $out.tmp"
        " && mv -f $out.tmp $out",
        "  depfile = $out.d",
        "  deps = gcc",
        "  description = CXX $in",
        "",
    ]
    if has_c:
        lines += [
            "rule cc",
            f"  command = {cxx} -x c -MMD -MF $out.d -MT $out $c_cflags -c $in -o $out.tmp"
            " && mv -f $out.tmp $out",
            "  depfile = $out.d",
            "  deps = gcc",
            "  description = CC $in",
            "",
        ]
    if plan.nvcc is not None:
        lines += [
            "rule nvcc",
            f"  command = {nvcc} -MD -MF $out.d -MT $out $cuda_cflags -c $in -o $out.tmp"
            " && mv -f $out.tmp $out",
            "  depfile = $out.d",
            "  deps = gcc",
            "  description = NVCC $in",
            "",
        ]
    if has_host:
        # The host compiler's messages are shown only when it succeeds (warnings); when it
        # fails, nvcc compiles the source and its diagnostics are the ones that count.
        lines += [
            "rule cudahost",
            f"  command = if {cxx} -x c++ -MMD -MF $out.d -MT $out $cuda_host_cflags -c $in"
            " -o $out.tmp 2>$out.log; then cat $out.log;"
            + (
                " else echo 'tvm_ffi.cpp: $in needs nvcc'"
                f" && {nvcc} -MD -MF $out.d -MT $out $cuda_cflags -c $in -o $out.tmp;"
                if plan.nvcc is not None
                else " else cat $out.log; echo 'tvm_ffi.cpp: $in needs nvcc, and no nvcc"
                " was found (see Where CUDA comes from in the JIT guide)'; false;"
            )
            + " fi && rm -f $out.log && mv -f $out.tmp $out",
            "  depfile = $out.d",
            "  deps = gcc",
            "  description = CXX (cuda) $in",
            "",
        ]
    if embed_step:
        lines += [
            "rule embed",
            # --strict: load_inline refuses bytes that are no image, at build time.
            "  command = $python -m tvm_ffi.utils.embed_cubin --strict --output-obj $out.tmp"
            " $embed_args"
            " && mv -f $out.tmp $out",
            "  description = EMBED $out",
            "",
        ]
    partial = plan.output.endswith(".o")
    objs = [unit.obj for unit in plan.compiles] + list(plan.objects)
    # The embed tool takes its objects on its command line: several are merged first, by
    # a step that reads them from a response file.
    merge_first = embed_step and len(objs) > 1
    if partial or merge_first:
        # -nostdlib: a relocatable link of our objects only, no start files or libraries.
        lines += [
            "rule partial",
            "  command = $cxx -r -nostdlib -o $out.tmp @$out.rsp && mv -f $out.tmp $out",
            "  rspfile = $out.rsp",
            "  rspfile_content = $inputs",
            "  description = MERGE $out",
            "",
        ]
    if not partial:
        lines += [
            "rule link",
            "  command = $cxx -shared -o $out.tmp @$out.rsp $ldflags && mv -f $out.tmp $out",
            "  rspfile = $out.rsp",
            "  rspfile_content = $inputs",
            "  description = LINK $out",
            "",
        ]
    written: list[str] = []  # every path of a build line, escaped by _path

    def path(text: str) -> str:
        written.append(text)
        return _path(text)

    def reading_rsp(rule: str, output: str, inputs: list[str], implicit: str = "") -> None:
        # $in holds the inputs shell-quoted; the response file needs the compiler's escapes.
        lines.append(f"build {path(output)}: {rule} {' '.join(map(path, inputs))}{implicit}")
        lines.append(f"  inputs = {_rsp(inputs)}")

    for unit in plan.compiles:
        rule = "cudahost" if unit.host else "nvcc" if unit.cuda else "cc" if unit.c else "cxx"
        lines.append(f"build {path(unit.obj)}: {rule} {path(unit.source)}")
    implicit = ""
    if plan.embeds and plan.embed_asm is not None:
        objs.append(plan.embed_asm)
        implicit = " | " + " ".join(path(image) for _, image in plan.embeds)
    elif plan.embeds:
        if merge_first:
            reading_rsp("partial", plan.inputs_obj, objs)
            objs = [plan.inputs_obj]
        args = [a for obj in objs for a in ("--input-obj", obj)]
        args += [a for name, image in plan.embeds for a in ("--cubin", image, "--name", name)]
        images = " ".join(path(image) for _, image in plan.embeds)
        lines.append(f"build {path(plan.merged_obj)}: embed | {' '.join(map(path, objs))} {images}")
        lines.append(f"  embed_args = {_cmd(args)}")
        objs = [plan.merged_obj]
    if plan.output not in objs:  # else the one compile writes the output itself
        reading_rsp("partial" if partial else "link", plan.output, objs, implicit)
    lines.append(f"default {path(plan.output)}")
    if any("|" in text for text in written):  # only then: other files stay as they were
        lines.insert(2, "pipe = |")
    return "\n".join(lines) + "\n"
