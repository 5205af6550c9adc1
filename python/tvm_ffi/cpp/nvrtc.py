"""Compile CUDA C++ source to CUBIN, PTX or fatbin at run time with NVRTC.

Built on NVIDIA's cuda-python bindings (``pip install cuda-bindings
nvidia-cuda-nvrtc``), imported only when :func:`nvrtc_compile` is called, so
importing this module never needs CUDA.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, Literal, Union, get_args

from .._arch_grammar import GRAMMAR, Arch, ArchSpellingError, arch_text, parse_arch_list

__all__ = ["NVRTCError", "nvrtc_compile"]

#: What ``arch=`` accepts: "native", "9.0", "90", "sm_90", "compute_90", "9.0a", "sm_90a",
#: "10.0f", a list of them in one str ("8.0;9.0"), 90, (9, 0).
ArchLike = Union[str, int, "tuple[int, int]"]
Output = Literal["cubin", "ptx", "fatbin"]

_OUTPUTS = get_args(Output)
_INSTALL_HINT = "pip install cuda-bindings nvidia-cuda-nvrtc"


class NVRTCError(RuntimeError):
    """NVRTC refused the source or the options.

    ``str(err)`` starts with the first error line of the NVRTC log (``file(line): error: ...``);
    ``err.log`` is the whole log, ``err.options`` the options NVRTC was given.
    """

    def __init__(self, message: str, log: str, options: Sequence[str]) -> None:
        super().__init__(message)
        self.log = log
        self.options = list(options)


def nvrtc_compile(
    source: str | bytes,
    *,
    name: str = "kernel.cu",
    arch: ArchLike | Sequence[ArchLike] | None = None,
    extra_opts: str | Sequence[str] | None = None,
    include_paths: Sequence[str] | None = None,
    output: Output = "cubin",
) -> bytes:
    """Compile CUDA C++ ``source`` with NVRTC and return the image bytes.

    Parameters
    ----------
    source:
        The CUDA C++ translation unit. Give kernels ``extern "C"`` linkage so that
        their names in the image are the names you wrote. A ``str`` is encoded as UTF-8;
        ``bytes`` go through as they are, except that a NUL or 0xFF byte is refused.
    name:
        The file name NVRTC reports in its diagnostics (``kernel.cu(3): error: ...``).
    arch:
        The target architecture, in the grammar of ``TVM_FFI_CUDA_ARCH_LIST``: ``"9.0"``,
        ``"90"``, ``"sm_90"``, ``"compute_90"``, ``"9.0a"``, ``"sm_90a"``, ``"10.0f"``; also
        ``90`` or ``(9, 0)``. For ``"cubin"`` and ``"ptx"`` only the target counts
        (``sm_90`` and ``compute_90`` give the same). ``sm_90a`` is not ``sm_90``: its
        image runs on 9.0 GPUs only and may use wgmma. ``None`` and ``"native"`` use the
        compute capability of the current CUDA device. For ``output="fatbin"`` it may be a list
        (or a str such as ``"8.0;9.0"``); the fatbin holds a CUBIN for each entry
        (``compute_90``: none), and PTX for each ``+PTX``/``compute_`` entry, or if there
        is none, the PTX of the highest one, so newer GPUs can still JIT it.
    extra_opts:
        More NVRTC options, passed after the defaults (``--std=c++17`` and the arch): a
        list of str, one option each, or one str, split as a shell would.
    include_paths:
        Directories searched by ``#include``; each becomes ``-I<dir>``. They come before
        the CUDA headers, which are always searched (the ``include/`` of the CUDA that
        :func:`tvm_ffi.cpp.load_inline` would use, and its ``include/cccl`` on CUDA 13), so
        ``<cuda_fp16.h>`` and ``<cuda_bf16.h>`` need no option.
    output:
        ``"cubin"`` (default), ``"ptx"`` (NUL-terminated, as the CUDA driver expects it) or
        ``"fatbin"``.

    Raises
    ------
    NVRTCError
        The compilation failed; the message starts with NVRTC's first error line and
        ``.log`` holds the full log.
    ValueError
        ``arch`` or ``output`` is not understood, or ``source`` holds a NUL or a 0xFF byte
        (NVRTC would silently drop everything after it).
    RuntimeError
        ``arch`` is None or ``"native"`` and there is no CUDA device to take it from.
    ImportError
        The NVRTC bindings are not installed.
    """
    if output not in _OUTPUTS:
        raise ValueError(f"nvrtc_compile: output must be one of {_OUTPUTS} (got {output!r})")
    archs = _resolve_archs(arch, allow_many=output == "fatbin")
    source = _source_bytes(source)
    opts = ["--std=c++17"]
    opts += [f"-I{path}" for path in include_paths or ()]
    cuda_dirs, cuda_note = _cuda_include_dirs()
    opts += [f"-I{path}" for path in cuda_dirs]
    # A str is split as a shell would ("-lineinfo -G" is two options), as the JIT's flags.
    from ._spec import flag_list

    opts += flag_list("nvrtc_compile", "extra_opts", extra_opts)
    nvrtc = _import_nvrtc()

    if output == "cubin":
        return _compile_one(
            nvrtc, source, name, f"-arch=sm_{archs[0].number}", opts, "cubin", cuda_note
        )
    if output == "ptx":
        return _compile_one(
            nvrtc, source, name, f"-arch=compute_{archs[0].number}", opts, "ptx", cuda_note
        )

    from tvm_ffi.utils.embed_cubin import make_fatbin

    images: dict[str, bytes] = {}
    for one in archs:
        if one.sass:
            images[f"sm_{one.number}"] = _compile_one(
                nvrtc, source, name, f"-arch=sm_{one.number}", opts, "cubin", cuda_note
            )
    # Without a +PTX or compute_ entry, the PTX of the highest arch, so that GPUs newer
    # than every listed one can JIT the kernel.
    ptx = [one for one in archs if one.ptx] or [max(archs)]
    for one in ptx:
        images[f"compute_{one.number}"] = _compile_one(
            nvrtc, source, name, f"-arch=compute_{one.number}", opts, "ptx", cuda_note
        )
    return make_fatbin(images)


def _resolve_archs(arch: Any, *, allow_many: bool) -> list[Arch]:
    """``arch`` as a list of :class:`Arch` (the package's grammar; ``native`` is the current
    device, as None is)."""
    if arch is None:
        return _detect_arch()
    many = isinstance(arch, (list, set, frozenset)) or (
        isinstance(arch, tuple) and arch and not isinstance(arch[0], int)
    )
    items = list(arch) if many else [arch]
    if many and not items:
        raise ValueError("nvrtc_compile: arch list is empty")
    texts = [arch_text(item) or "" for item in items]
    for item, text in zip(items, texts):  # one by one: the message names the item as given
        try:
            _parse(text)
        except ArchSpellingError:
            raise ValueError(
                f"nvrtc_compile: cannot parse arch {item!r} (expected {GRAMMAR}; or 90, or (9, 0))"
            ) from None
    archs = _parse(";".join(texts))
    if len(archs) > 1 and not allow_many:
        raise ValueError(
            f"nvrtc_compile: a list of archs needs output='fatbin' (got arch={arch!r})"
        )
    return archs


def _parse(text: str) -> list[Arch]:
    return parse_arch_list(text, source="nvrtc_compile: arch", native=_current_capability)


def _current_capability() -> list[tuple[int, int]]:
    """``native`` for NVRTC: the current device's compute capability, none without one."""
    from tvm_ffi._cuda_driver import compute_capabilities

    caps = compute_capabilities()
    return [caps[_current_device_index(len(caps))]] if caps else []


def _detect_arch() -> list[Arch]:
    caps = _current_capability()
    if not caps:
        raise RuntimeError('nvrtc_compile: no CUDA device found; pass arch="sm_90"')
    return [Arch(*caps[0])]


def _current_device_index(count: int) -> int:
    # "The current device" is the caller's framework's notion of it; only ask torch if the
    # caller already imported and initialised it (importing torch here would cost seconds).
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            index = int(torch.cuda.current_device())
            if 0 <= index < count:
                return index
    except Exception:  # any torch trouble just means "use device 0"
        pass
    return 0


def _import_nvrtc() -> Any:
    try:
        from cuda.bindings import nvrtc
    except ImportError:
        try:  # cuda-python < 12.6 shipped the same bindings as `cuda.nvrtc`
            from cuda import nvrtc  # type: ignore[no-redef]
        except ImportError as err:
            raise ImportError(
                "nvrtc_compile needs NVIDIA's NVRTC Python bindings and the NVRTC library: "
                f"{_INSTALL_HINT}"
            ) from err
    try:
        nvrtc.nvrtcVersion()
    except Exception as err:  # the bindings load libnvrtc lazily; report a missing library here
        raise ImportError(
            f"nvrtc_compile: the NVRTC library could not be loaded ({err}); {_INSTALL_HINT}"
        ) from err
    return nvrtc


def _source_bytes(source: str | bytes) -> bytes:
    """The source as NVRTC gets it. NVRTC reads it as a C string that ends at a NUL byte,
    and takes a 0xFF byte for the end of the file: what follows either is silently
    dropped, so both are refused. Every other byte goes through as it is."""
    if isinstance(source, str):
        try:
            data = source.encode()
        except UnicodeEncodeError as err:
            raise ValueError(
                f"nvrtc_compile: source holds {source[err.start]!r}, which has no UTF-8 encoding"
            ) from None
    elif isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
    else:
        raise TypeError(f"nvrtc_compile: source must be str or bytes (got {type(source).__name__})")
    for byte, name in ((0, "a NUL byte"), (0xFF, "a 0xFF byte")):
        at = data.find(bytes([byte]))
        if at >= 0:
            line = data.count(b"\n", 0, at) + 1
            column = at - (data.rfind(b"\n", 0, at) + 1) + 1
            raise ValueError(
                f"nvrtc_compile: source holds {name} at line {line}, column {column}; NVRTC "
                "would silently ignore everything from there on"
            )
    return data


def _check(nvrtc: Any, result: Any, what: str) -> None:
    if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise NVRTCError(f"nvrtc_compile: {what} failed: {_result_name(result)}", "", [])


def _result_name(result: Any) -> str:
    return getattr(result, "name", str(result))


def _cuda_include_dirs() -> tuple[list[str], str]:
    """The CUDA headers' directories for ``-I``, and a note for a failure when there are
    none (NVRTC itself ships no ``cuda_fp16.h``; a source that includes nothing compiles
    without them)."""
    from tvm_ffi._cuda_toolkit import find_cuda

    try:
        install = find_cuda(nvcc=False, cudart=False)
    except RuntimeError as err:
        return [], f"\n(the CUDA headers were not added: {err})"
    dirs = [*install.include_dirs, *([install.cccl_dir] if install.cccl_dir else [])]
    return [str(path) for path in dirs], ""


def _compile_one(
    nvrtc: Any,
    source: bytes,
    name: str,
    arch_opt: str,
    opts: list[str],
    kind: str,
    note: str = "",
) -> bytes:
    options = [arch_opt, *opts]
    err, prog = nvrtc.nvrtcCreateProgram(source, name.encode(), 0, [], [])
    _check(nvrtc, err, "nvrtcCreateProgram")
    try:
        (result,) = nvrtc.nvrtcCompileProgram(prog, len(options), [o.encode() for o in options])
        if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            log = _program_log(nvrtc, prog)
            message = _failure_message(result, log, name, options) + note
            raise NVRTCError(message, log, options)
        get_size, get = (
            (nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN)
            if kind == "cubin"
            else (nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX)
        )
        err, size = get_size(prog)
        _check(nvrtc, err, get_size.__name__)
        buf = bytearray(size)
        (err,) = get(prog, buf)
        _check(nvrtc, err, get.__name__)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    image = bytes(buf)
    # The driver reads PTX as a C string: keep exactly one terminating NUL.
    if kind == "ptx" and not image.endswith(b"\0"):
        image += b"\0"
    return image


def _program_log(nvrtc: Any, prog: Any) -> str:
    err, size = nvrtc.nvrtcGetProgramLogSize(prog)
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS or size <= 1:
        return ""
    buf = bytearray(size)
    nvrtc.nvrtcGetProgramLog(prog, buf)
    return bytes(buf).rstrip(b"\0").decode(errors="replace")


def _failure_message(result: Any, log: str, name: str, options: list[str]) -> str:
    lines = [line for line in log.splitlines() if line.strip()]
    first = next((line for line in lines if "error" in line.lower()), lines[0] if lines else "")
    head = first.strip() or f"{name}: {_result_name(result)}"
    status = _result_name(result)
    return (
        f"{head}\n"
        f"nvrtc_compile({name!r}) failed with {status}; options: {' '.join(options)}\n"
        f"--- NVRTC log ---\n{log.rstrip()}"
    )
