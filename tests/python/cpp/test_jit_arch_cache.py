"""The GPU architectures a JIT build detects are remembered across processes (cpp/_arch.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import tools
from tvm_ffi import _cuda_driver, _cuda_toolkit, cpp
from tvm_ffi.cpp import _arch, _hit_index, _spec, _toolchain
from tvm_ffi.cpp._arch import Arch

KERNEL = '__global__ void nothing() {}\nextern "C" int plain_answer() { return 42; }\n'


@pytest.fixture
def fake_gpus(tmp_path, monkeypatch):
    """A /proc/driver/nvidia with one GPU, a private cache root, and a counted live query."""
    proc = tmp_path / "proc_nvidia"
    (proc / "gpus" / "0000:01:00.0").mkdir(parents=True)
    (proc / "version").write_text("NVRM version: NVIDIA UNIX Kernel Module  580.159.04\n")
    monkeypatch.setattr(_cuda_driver, "_PROC_DRIVER", str(proc))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("CUDA_DEVICE_ORDER", raising=False)
    monkeypatch.delenv("TVM_FFI_CUDA_ARCH_LIST", raising=False)
    root = tmp_path / "cache"
    root.mkdir(mode=0o700)
    monkeypatch.setenv("TVM_FFI_CACHE_DIR", str(root))
    monkeypatch.setattr(_cuda_driver, "torch_capabilities", lambda: None)
    calls = []

    def live():
        calls.append(1)
        return [(9, 0)]

    monkeypatch.setattr(_cuda_driver, "compute_capabilities", live)
    monkeypatch.setattr(_arch, "_arch_memo", {})
    return proc, root, calls


def _no_driver(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("asked the CUDA driver although the arch cache is valid")

    monkeypatch.setattr(_cuda_driver, "compute_capabilities", refuse)
    monkeypatch.setattr(_cuda_driver, "_query", refuse)
    monkeypatch.setattr(_cuda_driver, "_load_driver", refuse)


def _fresh_process(monkeypatch):
    monkeypatch.setattr(_arch, "_arch_memo", {})


def test_detected_once_then_read_from_disk(fake_gpus, monkeypatch):
    _, root, calls = fake_gpus
    assert _arch.target_archs(root) == [Arch(9, 0)]
    assert len(calls) == 1
    record = json.loads((root / "gpu_archs.json").read_text())
    assert record["capabilities"] == [[9, 0]]
    assert _arch.target_archs(root) == [Arch(9, 0)]  # same process: memo, no file read
    _fresh_process(monkeypatch)
    _no_driver(monkeypatch)
    assert _arch.target_archs(root) == [Arch(9, 0)]


@pytest.mark.parametrize("change", ["visible_devices", "device_order", "driver", "gpu_set"])
def test_fingerprint_change_invalidates(fake_gpus, monkeypatch, change):
    proc, root, calls = fake_gpus
    _arch.target_archs(root)
    assert len(calls) == 1
    if change == "visible_devices":
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    elif change == "device_order":
        monkeypatch.setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    elif change == "driver":
        (proc / "version").write_text("NVRM version: NVIDIA UNIX Kernel Module  590.1\n")
    else:
        (proc / "gpus" / "0000:02:00.0").mkdir()
    _fresh_process(monkeypatch)
    _arch.target_archs(root)
    assert len(calls) == 2
    # The new answer replaced the record: another fresh process needs no driver.
    _fresh_process(monkeypatch)
    _no_driver(monkeypatch)
    assert _arch.target_archs(root) == [Arch(9, 0)]


def test_env_var_native_is_the_visible_gpus(fake_gpus, monkeypatch):
    # TVM_FFI_CUDA_ARCH_LIST=native: the detected GPUs, remembered as the default's are; and
    # the hit index keys the GPUs, so that a machine with others does not take this entry.
    proc, root, _ = fake_gpus
    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", "native")
    assert _arch.target_archs(root) == [Arch(9, 0)]
    _fresh_process(monkeypatch)
    _no_driver(monkeypatch)
    assert _arch.target_archs(root) == [Arch(9, 0)]
    spec = _spec.Spec("load_inline", "k", inline_cuda=KERNEL)
    key = _hit_index.request_key(spec)
    (proc / "gpus" / "0000:02:00.0").mkdir()
    assert _hit_index.request_key(spec) not in (None, key)
    monkeypatch.setattr(_cuda_driver, "_PROC_DRIVER", str(proc / "absent"))
    assert _hit_index.request_key(spec) is None  # GPUs it cannot fingerprint: no index answer


@pytest.mark.parametrize(
    "content",
    ["", "{not json", "[]", '{"format": 1}', '{"format": 1, "fingerprint": 3, "capabilities": 7}'],
)
def test_corrupted_cache_is_ignored_and_rewritten(fake_gpus, monkeypatch, content):
    _, root, calls = fake_gpus
    (root / "gpu_archs.json").write_text(content)
    assert _arch.target_archs(root) == [Arch(9, 0)]
    assert len(calls) == 1
    assert json.loads((root / "gpu_archs.json").read_text())["capabilities"] == [[9, 0]]
    assert not [p for p in root.iterdir() if p.name.endswith(".tmp")]


def test_no_proc_driver_means_live_detection_and_no_file(fake_gpus, monkeypatch, tmp_path):
    _, root, calls = fake_gpus
    monkeypatch.setattr(_cuda_driver, "_PROC_DRIVER", str(tmp_path / "absent"))
    assert _cuda_driver.visible_gpus_fingerprint() is None
    assert _arch.target_archs(root) == [Arch(9, 0)]
    _fresh_process(monkeypatch)
    assert _arch.target_archs(root) == [Arch(9, 0)]
    assert len(calls) == 2
    assert not (root / "gpu_archs.json").exists()


def test_no_gpu_is_not_remembered(fake_gpus, monkeypatch):
    _, root, _ = fake_gpus
    monkeypatch.setattr(_cuda_driver, "compute_capabilities", lambda: [])
    assert _arch.target_archs(root) == _arch.parse_arch_list(_arch.DEFAULT_ARCH_LIST)
    assert not (root / "gpu_archs.json").exists()


def test_initialised_torch_is_asked_instead_of_the_driver(fake_gpus, monkeypatch):
    _, root, _ = fake_gpus
    _no_driver(monkeypatch)
    monkeypatch.setattr(_cuda_driver, "torch_capabilities", lambda: [(8, 6)])
    assert _arch.target_archs(root) == [Arch(8, 6)]


@pytest.mark.skipif(not tools.has_nvcc(), reason="needs nvcc")
def test_warm_cuda_build_asks_no_driver_and_spawns_no_process(fake_gpus, monkeypatch):
    _, _, calls = fake_gpus
    path = cpp.build_inline("jit_arch_warm", cuda_sources=KERNEL)
    assert len(calls) == 1
    assert "code=sm_90" in (Path(path).parent / "build.ninja").read_text()
    # A fresh process: nothing in memory, the driver and processes forbidden.
    _fresh_process(monkeypatch)
    _toolchain._identity_memo.clear()
    _cuda_toolkit._search.cache_clear()  # where CUDA is: from the cache's record (or PATH)
    _no_driver(monkeypatch)

    def refuse(*args, **kwargs):
        raise AssertionError("a warm cache hit started a process")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    for name in ("fork", "posix_spawn", "posix_spawnp", "system", "execv", "execve"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, refuse)
    assert cpp.build_inline("jit_arch_warm", cuda_sources=KERNEL) == path


def test_live_query_is_lazy_about_ctypes():
    # The warm path must not need ctypes: _cuda_driver imports it only to ask the driver.
    code = "import sys, tvm_ffi._cuda_driver; assert 'ctypes' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
