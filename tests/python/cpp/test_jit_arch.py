"""The JIT's architectures: arch= and TVM_FFI_CUDA_ARCH_LIST on the command nvcc gets; a
user's -arch/-gencode replaces the defaults; the choice is logged and keys the cache. (The
grammar itself, for every entry point and CMake's ARCH: tests/python/test_arch_grammar.py.)

The JIT builds run a stand-in nvcc that records its arguments and compiles an empty
object, so every spelling is checked on the command nvcc really gets, without a GPU."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest

from tvm_ffi import cpp
from tvm_ffi.cpp import _arch, nvrtc
from tvm_ffi.cpp._arch import Arch


def _sm(number: str) -> str:
    return f"-gencode=arch=compute_{number},code=sm_{number}"


def _ptx(number: str) -> str:
    return f"-gencode=arch=compute_{number},code=compute_{number}"


# spelling -> (the parsed list, the -gencode flags nvcc gets)
GRAMMAR = {
    "9.0": ([Arch(9, 0)], [_sm("90")]),
    "90": ([Arch(9, 0)], [_sm("90")]),
    "sm_90": ([Arch(9, 0)], [_sm("90")]),
    "compute_90": ([Arch(9, 0, ptx=True, sass=False)], [_ptx("90")]),
    "9.0a": ([Arch(9, 0, "a")], [_sm("90a")]),
    "sm_90a": ([Arch(9, 0, "a")], [_sm("90a")]),
    "90a": ([Arch(9, 0, "a")], [_sm("90a")]),
    "10.0f": ([Arch(10, 0, "f")], [_sm("100f")]),
    "sm_100a": ([Arch(10, 0, "a")], [_sm("100a")]),
    "9.0+PTX": ([Arch(9, 0, ptx=True)], [_sm("90"), _ptx("90")]),
    "sm_90+ptx": ([Arch(9, 0, ptx=True)], [_sm("90"), _ptx("90")]),
    "compute_90+PTX": ([Arch(9, 0, ptx=True, sass=False)], [_ptx("90")]),
    "8.0;9.0": ([Arch(8, 0), Arch(9, 0)], [_sm("80"), _sm("90")]),
    "8.0,9.0": ([Arch(8, 0), Arch(9, 0)], [_sm("80"), _sm("90")]),
    "8.0 9.0": ([Arch(8, 0), Arch(9, 0)], [_sm("80"), _sm("90")]),
    " 8.0, sm_90a ;10.0f ": (
        [Arch(8, 0), Arch(9, 0, "a"), Arch(10, 0, "f")],
        [_sm("80"), _sm("90a"), _sm("100f")],
    ),
    # One target named twice is built once; sm_ + compute_ is machine code and PTX.
    "9.0 sm_90 90": ([Arch(9, 0)], [_sm("90")]),
    "sm_90 compute_90": ([Arch(9, 0, ptx=True)], [_sm("90"), _ptx("90")]),
    "9.0 9.0a": ([Arch(9, 0), Arch(9, 0, "a")], [_sm("90"), _sm("90a")]),
}

EXPECTED = "9.0, 90, sm_90, compute_90, 9.0a, sm_90a or 10.0f, each optionally +PTX, or native"


@pytest.mark.parametrize("text", sorted(GRAMMAR))
def test_grammar(text):
    archs, flags = GRAMMAR[text]
    assert _arch.parse_arch_list(text) == archs
    assert _arch.gencode_flags(archs) == flags


def test_nvrtc_arch_items_and_lists():
    assert nvrtc._resolve_archs((9, 0), allow_many=False) == [Arch(9, 0)]
    assert nvrtc._resolve_archs(90, allow_many=False) == [Arch(9, 0)]
    assert nvrtc._resolve_archs(["8.0", (9, 0), "sm_90a"], allow_many=True) == [
        Arch(8, 0),
        Arch(9, 0),
        Arch(9, 0, "a"),
    ]
    with pytest.raises(ValueError, match=r"^nvrtc_compile: a list of archs needs output='fatbin'"):
        nvrtc._resolve_archs("8.0;9.0", allow_many=False)
    message = f"nvrtc_compile: cannot parse arch 'sm_9x' (expected {EXPECTED}; or 90, or (9, 0))"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        nvrtc._resolve_archs(["8.0", "sm_9x"], allow_many=True)


# ---- the JIT: arch=, the env var, user flags, on the command nvcc gets ----------------------


KERNEL = "__global__ void nothing() {}\n"


def _gencodes(log: Path) -> list[list[str]]:
    """The architecture flags of each nvcc call in ``log``."""
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    return [[a for a in args if a.startswith("-gencode")] for args in calls]


@pytest.mark.parametrize("text", sorted(GRAMMAR))
def test_load_inline_arch(text, fake_nvcc):
    cpp.build_inline("arch_grammar", cuda_sources=KERNEL, arch=text)
    assert _gencodes(fake_nvcc) == [GRAMMAR[text][1]]


def test_arch_list_argument(fake_nvcc):
    cpp.build_inline("arch_list", cuda_sources=KERNEL, arch=["sm_80", "9.0a+PTX"])
    assert _gencodes(fake_nvcc) == [[_sm("80"), _sm("90a"), _ptx("90a")]]


@pytest.mark.parametrize("text", ["9.0a", "8.0;9.0", "compute_90"])
def test_env_var_reaches_nvcc(text, fake_nvcc, monkeypatch):
    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", text)
    cpp.build_inline("arch_env", cuda_sources=KERNEL)
    assert _gencodes(fake_nvcc) == [GRAMMAR[text][1]]


def test_arch_argument_beats_env_var(fake_nvcc, monkeypatch):
    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", "7.5")
    cpp.build_inline("arch_over_env", cuda_sources=KERNEL, arch="9.0a")
    assert _gencodes(fake_nvcc) == [[_sm("90a")]]


@pytest.mark.parametrize(
    "flags",
    [
        ["-gencode=arch=compute_90a,code=sm_90a"],
        ["-gencode", "arch=compute_90a,code=sm_90a"],
        "-gencode arch=compute_90a,code=sm_90a",
        ["--generate-code=arch=compute_90a,code=sm_90a"],
        ["-arch=sm_90a"],
        ["-arch", "sm_90a"],
        ["--gpu-architecture=sm_90a"],
    ],
)
def test_user_arch_flag_replaces_the_defaults(flags, fake_nvcc, monkeypatch):
    # The env var would otherwise add sm_75, where a wgmma kernel does not compile.
    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", "7.5")
    cpp.build_inline("arch_user", cuda_sources=KERNEL, extra_cuda_cflags=flags)
    ((args,),) = [[json.loads(line) for line in fake_nvcc.read_text().splitlines()]]
    # sm_75/compute_75 only: a temp path may hold "75" (pytest-of-root/pytest-75).
    assert [a for a in args if "sm_75" in a or "compute_75" in a] == []
    given = flags.split() if isinstance(flags, str) else flags
    assert args[-len(given) - 4 : -4] == given  # the user's flags, then -c cuda.cu -o out


def test_march_is_no_arch_flag(fake_nvcc, monkeypatch):
    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", "8.0")
    flags = "-Xcompiler -march=x86-64"
    cpp.build_inline("arch_march", cuda_sources=KERNEL, extra_cuda_cflags=flags)
    assert _gencodes(fake_nvcc) == [[_sm("80")]]


def test_arch_and_user_flag_conflict():
    with pytest.raises(
        ValueError,
        match=r"^load_inline: arch='9.0a' and '-arch=sm_90' in extra_cuda_cflags both choose "
        r"the architectures; give one of them$",
    ):
        cpp.load_inline("c", cuda_sources=KERNEL, arch="9.0a", extra_cuda_cflags="-arch=sm_90")


@pytest.mark.parametrize("api", ["load_inline", "build_inline"])
def test_bad_arch_argument(api):
    func = getattr(cpp, api)
    message = f"{api}: arch: cannot parse 'sm_9x' (expected {EXPECTED})"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        func("bad", cuda_sources=KERNEL, arch="8.0;sm_9x")
    with pytest.raises(ValueError, match=rf"^{api}: arch: no architecture given \(got ''\)$"):
        func("bad", cuda_sources=KERNEL, arch="")
    message = rf"^{api}: arch must be a str or a list of str \(got 90\)$"
    with pytest.raises(TypeError, match=message):
        func("bad", cuda_sources=KERNEL, arch=90)


@pytest.mark.parametrize("api", ["load", "build"])
def test_file_apis_take_arch(api, tmp_path, fake_nvcc):
    source = tmp_path / "k.cu"
    source.write_text(KERNEL)
    func = getattr(cpp, api)
    with pytest.raises(ValueError, match=rf"^{api}: arch: cannot parse 'x' "):
        func("files", cuda_files=[source], arch="x")
    if api == "build":
        cpp.build("files", cuda_files=[source], arch="10.0f")
        assert _gencodes(fake_nvcc) == [[_sm("100f")]]


def test_arch_keys_the_cache(fake_nvcc):
    first = cpp.build_inline("arch_key", cuda_sources=KERNEL, arch="9.0")
    second = cpp.build_inline("arch_key", cuda_sources=KERNEL, arch="9.0a")
    again = cpp.build_inline("arch_key", cuda_sources=KERNEL, arch="sm_90")
    assert first != second
    assert again == first  # another spelling of the same target: the same entry
    assert _gencodes(fake_nvcc) == [[_sm("90")], [_sm("90a")]]


def test_choice_is_logged(fake_nvcc, monkeypatch, caplog):
    caplog.set_level(logging.INFO, logger="tvm_ffi")
    cpp.build_inline("arch_log", cuda_sources=KERNEL, arch="8.0 9.0a+PTX")
    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", "7.5")
    cpp.build_inline("arch_log_env", cuda_sources=KERNEL)
    cpp.build_inline("arch_log_user", cuda_sources=KERNEL, extra_cuda_cflags="-arch=sm_90a")
    lines = [r.getMessage() for r in caplog.records if "CUDA architectures" in r.getMessage()]
    assert lines == [
        "build_inline 'arch_log': CUDA architectures 8.0 9.0a+PTX (from arch=)",
        "build_inline 'arch_log_env': CUDA architectures 7.5 (from TVM_FFI_CUDA_ARCH_LIST)",
        "build_inline 'arch_log_user': CUDA architectures those of extra_cuda_cflags "
        "(-arch=sm_90a)",
    ]
    assert all(r.name == "tvm_ffi.cpp" for r in caplog.records)


def test_native_is_resolved_before_the_cache_key(fake_nvcc, monkeypatch):
    from tvm_ffi import _cuda_driver

    monkeypatch.setattr(_cuda_driver, "torch_capabilities", lambda: None)
    monkeypatch.setattr(_cuda_driver, "compute_capabilities", lambda: [(8, 6)])
    first = cpp.build_inline("arch_native", cuda_sources=KERNEL, arch="native")
    assert _gencodes(fake_nvcc) == [[_sm("86")]]
    # The GPUs' own targets key the entry: 8.6 named is the same, another GPU is another.
    assert cpp.build_inline("arch_native", cuda_sources=KERNEL, arch="8.6") == first
    monkeypatch.setattr(_cuda_driver, "compute_capabilities", lambda: [(9, 0)])
    assert cpp.build_inline("arch_native", cuda_sources=KERNEL, arch="native") != first
    assert _gencodes(fake_nvcc) == [[_sm("86")], [_sm("90")]]
