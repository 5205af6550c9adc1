"""One architecture grammar, held to one table of spellings: the Python parser
(tvm_ffi._arch_grammar), every Python entry point that reads it (arch= of the JIT,
TVM_FFI_CUDA_ARCH_LIST, nvrtc_compile's arch=, the keys of CubinModule's {arch: image} and
of make_fatbin), and CMake's parser behind tvm_ffi_generate_cubin(ARCH ...), run with
``cmake -P``: the same targets and the same messages.

No GPU is needed: "native" is resolved through a stand-in driver answer (NATIVE)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tvm_ffi import _arch_grammar, _cuda_driver
from tvm_ffi._arch_grammar import GRAMMAR, Arch

REPO = Path(__file__).resolve().parents[2]
NATIVE = (8, 6)  # the compute capability of the stand-in GPU
SOURCE = "tvm_ffi_generate_cubin: ARCH"  # CMake's label; the Python parser is given it too

# spelling -> the targets it asks for, as nvcc names them ("native": nvcc's own -arch=native
# in CMake; the Python side resolves it to the visible GPUs, here sm_86).
VALID = {
    "9.0": ["sm_90"],
    "90": ["sm_90"],
    "sm_90": ["sm_90"],
    "9.0a": ["sm_90a"],
    "90a": ["sm_90a"],
    "sm_90a": ["sm_90a"],
    "compute_90": ["compute_90"],
    "compute_90a": ["compute_90a"],
    "10.0f": ["sm_100f"],
    "100f": ["sm_100f"],
    "sm_100f": ["sm_100f"],
    "12.1": ["sm_121"],
    "sm_1000": ["sm_1000"],
    "9.0+PTX": ["sm_90", "compute_90"],
    "sm_90+ptx": ["sm_90", "compute_90"],
    "90a+PTX": ["sm_90a", "compute_90a"],
    "compute_90+PTX": ["compute_90"],
    "native": ["native"],
    "native native": ["native"],
    "8.0;9.0": ["sm_80", "sm_90"],
    "8.0,9.0": ["sm_80", "sm_90"],
    "8.0 9.0": ["sm_80", "sm_90"],
    " 8.0, sm_90a ;10.0f ": ["sm_80", "sm_90a", "sm_100f"],
    "9.0 sm_90 90": ["sm_90"],
    "sm_90 compute_90": ["sm_90", "compute_90"],
    "9.0 9.0a": ["sm_90", "sm_90a"],
}


def _unparsed(token: str) -> str:
    return f"cannot parse '{token}' (expected {GRAMMAR})"


# Entries that name no target: typos, near misses, other tools' spellings.
UNPARSED = [
    *["9.x", "sm_9", "9", "09.0", "sm_090", "0.0", "ninety", "sm90", "sm_90b", "SM_90"],
    *["9.0A", "9.0+SASS", "+PTX", "native+PTX", "Native"],
]

# spelling -> the message after "<label>: ", the same from Python and CMake.
INVALID = {
    **{token: _unparsed(token) for token in UNPARSED},
    "8.0;9x": _unparsed("9x"),
    "native;9x": _unparsed("9x"),
    "native;9.0": "native cannot be combined with other architectures (got 'native;9.0')",
    "9.0 native": "native cannot be combined with other architectures (got '9.0 native')",
    "": "no architecture given (got '')",
    " , ": "no architecture given (got ' , ')",
}


@pytest.fixture
def one_gpu(monkeypatch):
    """The driver (and torch) see one GPU of compute capability NATIVE."""
    monkeypatch.setattr(_cuda_driver, "compute_capabilities", lambda: [NATIVE])
    monkeypatch.setattr(_cuda_driver, "torch_capabilities", lambda: None)


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(_cuda_driver, "compute_capabilities", lambda: [])
    monkeypatch.setattr(_cuda_driver, "torch_capabilities", lambda: None)


def _names(archs: list[Arch]) -> list[str]:
    return [name for arch in archs for name in arch.nvcc_names()]


def _resolved(names: list[str]) -> list[str]:
    """``names`` with ``native`` as the Python side resolves it."""
    return [f"sm_{NATIVE[0]}{NATIVE[1]}" if name == "native" else name for name in names]


# ---- the Python parser ----------------------------------------------------------------------


@pytest.mark.parametrize("text", sorted(VALID))
def test_python_grammar(text, one_gpu):
    archs = _arch_grammar.parse_arch_list(text, source=SOURCE)
    assert _names(archs) == _resolved(VALID[text])


@pytest.mark.parametrize("text", sorted(INVALID))
def test_python_rejects(text, one_gpu):
    with pytest.raises(ValueError) as info:
        _arch_grammar.parse_arch_list(text, source=SOURCE)
    assert str(info.value) == f"{SOURCE}: {INVALID[text]}"


def test_native_without_a_gpu(no_gpu):
    message = (
        "TVM_FFI_CUDA_ARCH_LIST: native names the GPUs of this machine, but no CUDA GPU is "
        "visible; name the architecture (e.g. 9.0)"
    )
    with pytest.raises(RuntimeError) as info:
        _arch_grammar.parse_arch_list("native")
    assert str(info.value) == message


def test_native_is_every_visible_gpu_once(monkeypatch):
    monkeypatch.setattr(_cuda_driver, "compute_capabilities", lambda: [(9, 0), (8, 0), (9, 0)])
    assert _arch_grammar.parse_arch_list("native") == [Arch(8, 0), Arch(9, 0)]


def test_one_target_values():
    assert _arch_grammar.parse_arch(90, source="k") == Arch(9, 0)
    assert _arch_grammar.parse_arch((10, 0), source="k") == Arch(10, 0)
    with pytest.raises(_arch_grammar.ArchSpellingError) as info:
        _arch_grammar.parse_arch(9.0, source="k")
    assert str(info.value) == f"k: cannot parse 9.0 (expected {GRAMMAR})"
    # Not a spelling error: the callers that reword those keep this message.
    with pytest.raises(ValueError) as info:
        _arch_grammar.parse_arch("8.0;9.0", source="k")
    assert type(info.value) is ValueError
    assert str(info.value) == "k: '8.0;9.0' names 8.0, 9.0; give one architecture"


def test_native_key_on_two_kinds_of_gpu(monkeypatch):
    from tvm_ffi.utils import make_fatbin

    monkeypatch.setattr(_cuda_driver, "compute_capabilities", lambda: [(8, 0), (9, 0)])
    with pytest.raises(ValueError) as info:
        make_fatbin({"native": b".target sm_90\n"})
    assert str(info.value) == "make_fatbin: 'native' names 8.0, 9.0; give one architecture"


# ---- CMake's parser, on the same table ------------------------------------------------------


def _cmake_parse(texts: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    """Runs CMake's parser on each of ``texts``; prints one ``=<targets>`` line per text."""
    cmake = shutil.which("cmake")
    if cmake is None:
        pytest.skip("cmake is not on PATH")
    calls = "".join(
        f'_tvm_ffi_parse_archs(tvm_ffi_generate_cubin out "{text}")\nmessage("=${{out}}")\n'
        for text in texts
    )
    script = tmp_path / "parse.cmake"
    script.write_text(
        "cmake_minimum_required(VERSION 3.20)\n"
        f'include("{REPO.as_posix()}/cmake/tvm_ffi_cubin.cmake")\n{calls}'
    )
    return subprocess.run([cmake, "-P", str(script)], capture_output=True, text=True)


def test_cmake_grammar(tmp_path):
    texts = sorted(VALID)
    proc = _cmake_parse(texts, tmp_path)
    assert proc.returncode == 0, proc.stderr
    got = [line[1:] for line in proc.stderr.splitlines() if line.startswith("=")]
    # CMake keeps the order of the entries and Python the order of the targets
    # ("compute_90 sm_90"); the order of -gencode flags means nothing to nvcc.
    assert {t: sorted(g.split(";")) for t, g in zip(texts, got)} == {
        t: sorted(VALID[t]) for t in texts
    }


@pytest.mark.parametrize("text", sorted(INVALID))
def test_cmake_rejects(text, tmp_path):
    proc = _cmake_parse([text], tmp_path)
    assert proc.returncode != 0
    # CMake wraps and indents the message between these two lines.
    message = proc.stderr.split("(message):", 1)[1].split("Call Stack", 1)[0]
    assert " ".join(message.split()) == f"{SOURCE}: {INVALID[text]}"


# ---- every Python entry point takes every spelling ------------------------------------------

# The spellings that name one target (a key of {arch: image} names one).
ONE_TARGET = [
    text for text in VALID if len(_arch_grammar.parse_arch_list(text, native=lambda: [NATIVE])) == 1
]


def _one(text: str) -> Arch:
    (arch,) = _arch_grammar.parse_arch_list(text)
    return arch


@pytest.mark.parametrize("text", sorted(VALID))
def test_jit_arch_argument_and_env_var(text, one_gpu, monkeypatch):
    from tvm_ffi.cpp import _arch

    want = _arch_grammar.parse_arch_list(text)
    assert _arch.arch_argument("load_inline", text) == want
    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", text)
    assert _arch.target_archs() == want
    assert _arch.gencode_flags(want) == [
        f"-gencode=arch=compute_{name.split('_')[1]},code={name}" for name in _resolved(VALID[text])
    ]


@pytest.mark.parametrize("text", sorted(VALID))
def test_nvrtc_arch(text, one_gpu):
    from tvm_ffi.cpp import nvrtc

    assert nvrtc._resolve_archs(text, allow_many=True) == _arch_grammar.parse_arch_list(text)


@pytest.mark.parametrize("text", sorted(ONE_TARGET))
def test_cubin_module_keys(text, one_gpu):
    from tvm_ffi.cuda import _select_arch

    arch = _one(text)
    # On a GPU of the key's own compute capability, that key is the one loaded.
    assert _select_arch(["sm_75", text], (arch.major, arch.minor)) == text


@pytest.mark.parametrize("text", sorted(ONE_TARGET))
def test_make_fatbin_keys(text, one_gpu, monkeypatch):
    from tvm_ffi.utils import _fatbin

    # The packing itself is tested in tests/python/utils; here, what the key becomes.
    monkeypatch.setattr(_fatbin, "_nvfatbin", lambda: "packer")
    monkeypatch.setattr(_fatbin, "_pack_nvfatbin", lambda packer, specs: specs)
    arch = _one(text)
    ptx = f".version 8.0\n.target sm_{arch.number}\n.address_size 64\n".encode()
    assert _fatbin.make_fatbin({text: ptx}) == [("ptx", arch.number, ptx)]


def test_entry_points_without_a_gpu_name_native(no_gpu):
    from tvm_ffi.cpp import _arch, nvrtc
    from tvm_ffi.utils import make_fatbin

    tail = "native names the GPUs of this machine, but no CUDA GPU is visible; name the "
    for label, call in [
        ("load_inline: arch", lambda: _arch.arch_argument("load_inline", "native")),
        ("nvrtc_compile: arch", lambda: nvrtc._resolve_archs("native", allow_many=False)),
        ("make_fatbin", lambda: make_fatbin({"native": b".target sm_90\n"})),
    ]:
        with pytest.raises(RuntimeError) as info:
            call()
        assert str(info.value).startswith(f"{label}: {tail}")


def test_env_var_native_without_a_gpu(no_gpu, monkeypatch):
    from tvm_ffi.cpp import _arch

    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", "native")
    with pytest.raises(RuntimeError, match=r"^TVM_FFI_CUDA_ARCH_LIST: native names the GPUs"):
        _arch.target_archs()


def test_grammar_module_imports_nothing_more():
    # tvm_ffi.cuda and tvm_ffi.utils import it: it must bring neither the JIT nor the core.
    code = (
        "import sys, tvm_ffi; before = set(sys.modules); import tvm_ffi._arch_grammar; "
        "new = set(sys.modules) - before; "
        "print(sorted(m for m in new if m.startswith(('tvm_ffi', 'torch', 'ctypes'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["['tvm_ffi._arch_grammar']"]
