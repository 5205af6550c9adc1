"""Toolchain discovery, target archs and the ctypes driver probe."""

from __future__ import annotations

import ctypes
import functools
import hashlib
import json
import os

import pytest

from tvm_ffi import _cuda_driver, _cuda_toolkit
from tvm_ffi.cpp import _arch, _toolchain
from tvm_ffi.cpp._arch import Arch


@pytest.fixture(autouse=True)
def fresh_discovery(monkeypatch):
    for var in ("CUDA_HOME", "CUDA_PATH", "TVM_FFI_CUDA_ARCH_LIST"):
        monkeypatch.delenv(var, raising=False)
    yield
    for func in [*vars(_toolchain).values(), *vars(_cuda_toolkit).values()]:
        if isinstance(func, functools._lru_cache_wrapper):
            func.cache_clear()


def _fake_toolkit(root):
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "nvcc").write_text("#!/bin/sh\necho fake nvcc\n")
    (root / "bin" / "nvcc").chmod(0o755)
    # What the search checks of a complete toolkit (see _cuda_toolkit).
    for part in ("include/cuda.h", "include/cuda_runtime.h", "include/crt/host_defines.h",
                 "nvvm/bin/cicc", "lib64/libcudart.so"):  # fmt: skip
        (root / part).parent.mkdir(parents=True, exist_ok=True)
        (root / part).write_text("")
    return root


def test_cuda_home_from_env_wins(tmp_path, monkeypatch):
    home = _fake_toolkit(tmp_path / "cuda-env")
    monkeypatch.setenv("CUDA_HOME", str(home))
    assert _toolchain.find_cuda_home() == home
    assert _toolchain.find_cuda_tool("nvcc") == home / "bin" / "nvcc"


def test_cuda_path_env(tmp_path, monkeypatch):
    home = _fake_toolkit(tmp_path / "cuda-path")
    monkeypatch.setenv("CUDA_PATH", str(home))
    assert _toolchain.find_cuda_home() == home


def test_bad_cuda_home_is_an_error_not_a_fallback(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    with pytest.raises(RuntimeError) as info:
        _toolchain.find_cuda_home()
    assert str(info.value) == (
        f"CUDA_HOME={tmp_path} is not a usable CUDA toolkit (no include/cuda.h, no "
        "include/cuda_runtime.h, no include/crt/host_defines.h, no bin/nvcc); this build "
        "needs nvcc, the CUDA headers"
    )


def test_nvcc_on_path_through_a_symlink_farm(tmp_path, monkeypatch):
    home = _fake_toolkit(tmp_path / "toolkit")
    farm = tmp_path / "farm" / "bin"
    farm.mkdir(parents=True)
    (farm / "nvcc").symlink_to(home / "bin" / "nvcc")
    monkeypatch.setenv("PATH", f"{farm}:/usr/bin:/bin")
    assert _toolchain.find_cuda_home() == home


def test_missing_cuda_tool(tmp_path, monkeypatch):
    home = _fake_toolkit(tmp_path / "cuda")
    monkeypatch.setenv("CUDA_HOME", str(home))
    with pytest.raises(RuntimeError, match=r"^CUDA tool 'ptxas' not found: tried .*/bin/ptxas$"):
        _toolchain.find_cuda_tool("ptxas")


def test_versioned_toolkits_sort_by_number():
    paths = ["/usr/local/cuda-12.9", "/usr/local/cuda-12.10", "/usr/local/cuda-11.8"]
    assert sorted(paths, key=_cuda_toolkit._version_key, reverse=True)[0] == "/usr/local/cuda-12.10"


def test_cxx_from_env(tmp_path, monkeypatch):
    monkeypatch.setenv("CXX", "no-such-compiler-xyz")
    with pytest.raises(
        RuntimeError, match=r"^C\+\+ compiler not found \(CXX=no-such-compiler-xyz\)"
    ):
        _toolchain.find_cxx()


def test_ninja_found():
    assert _toolchain.find_ninja().name == "ninja"


def test_ninja_missing(tmp_path, monkeypatch):
    import sys

    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setitem(sys.modules, "ninja", None)  # "import ninja" fails
    with pytest.raises(RuntimeError, match=r"^ninja not found on PATH"):
        _toolchain.find_ninja()


def test_tool_identity_is_remembered_on_disk(tmp_path, monkeypatch):
    tool = tmp_path / "cc"
    tool.write_text("#!/bin/sh\necho 'cc 1.0'\n")
    tool.chmod(0o755)
    identity = _toolchain.tool_identity(tool, tmp_path)
    # What the tool says and its bytes (a script's text too), never its path: two hosts with
    # the same compiler at different paths agree (docs/dev/remote_cache.md).
    assert identity == f"cc 1.0\nsha256 {hashlib.sha256(tool.read_bytes()).hexdigest()}"
    assert str(tmp_path) not in identity
    (record,) = (tmp_path / "toolchain").glob("cc-*.json")
    assert json.loads(record.read_text())["identity"] == identity
    _toolchain._identity_memo.clear()
    monkeypatch.setattr(_toolchain, "_run_version", lambda path: pytest.fail("ran the tool again"))
    assert _toolchain.tool_identity(tool, tmp_path) == identity


def test_a_fresh_cache_directory_takes_the_hosts_tool_identities(tmp_path, monkeypatch):
    # The user's default cache keeps them for every cache directory of the host: a first
    # use in a fresh TVM_FFI_CACHE_DIR (another job, a fetch from a remote cache) runs no
    # --version and hashes no binary the host has seen.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    tool = tmp_path / "cc"
    tool.write_text("#!/bin/sh\necho 'cc 1.0'\n")
    tool.chmod(0o755)
    identity = _toolchain.tool_identity(tool, tmp_path / "first")
    (record,) = (tmp_path / "xdg" / "tvm-ffi" / "toolchain").glob("cc-*.json")
    assert json.loads(record.read_text())["inode"] == tool.stat().st_ino
    _toolchain._identity_memo.clear()
    with monkeypatch.context() as patched:
        patched.setattr(_toolchain, "_run_version", lambda path: pytest.fail("ran the tool"))
        assert _toolchain.tool_identity(tool, tmp_path / "second") == identity
    assert list((tmp_path / "second" / "toolchain").glob("cc-*.json"))  # kept there too
    # Another file with the same size and mtime at that path (a new inode) is asked again.
    stat = tool.stat()
    new = tmp_path / "cc.new"  # made while the old file exists: another inode
    new.write_text("#!/bin/sh\necho 'cc 2.0'\n")
    new.chmod(0o755)
    os.utime(new, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    new.replace(tool)
    _toolchain._identity_memo.clear()
    assert _toolchain.tool_identity(tool, tmp_path / "third").startswith("cc 2.0\n")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("8.0;9.0a", [Arch(8, 0), Arch(9, 0, "a")]),
        ("8.0 9.0+PTX", [Arch(8, 0), Arch(9, 0, ptx=True)]),
        ("sm_90", [Arch(9, 0)]),
        ("90", [Arch(9, 0)]),
        ("sm_100a, 12.0", [Arch(10, 0, "a"), Arch(12, 0)]),
        ("compute_75 7.5", [Arch(7, 5, ptx=True)]),
    ],
)
def test_parse_arch_list(text, expected):
    assert _arch.parse_arch_list(text) == expected


@pytest.mark.parametrize("text", ["9.x", "sm_9", "ninety", "9.0+SASS"])
def test_parse_arch_list_rejects(text):
    with pytest.raises(ValueError, match=r"^TVM_FFI_CUDA_ARCH_LIST: cannot parse "):
        _arch.parse_arch_list(text)


def test_empty_arch_list_rejected():
    with pytest.raises(ValueError, match=r"^TVM_FFI_CUDA_ARCH_LIST: no architecture given"):
        _arch.parse_arch_list(" ; ")


def test_target_archs_env_then_gpus_then_default(monkeypatch):
    monkeypatch.setattr(_cuda_driver, "compute_capabilities", lambda: [(9, 0), (8, 6), (9, 0)])
    assert _arch.target_archs() == [Arch(8, 6), Arch(9, 0)]
    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", "sm_80")
    assert _arch.target_archs() == [Arch(8, 0)]
    monkeypatch.delenv("TVM_FFI_CUDA_ARCH_LIST")
    monkeypatch.setattr(_cuda_driver, "compute_capabilities", lambda: [])
    assert _arch.target_archs() == _arch.parse_arch_list(_arch.DEFAULT_ARCH_LIST)
    assert _arch.DEFAULT_ARCH_LIST == "7.5;8.0;9.0+PTX"


def test_gencode_flags():
    assert _arch.gencode_flags([Arch(9, 0, "a"), Arch(8, 0, ptx=True)]) == [
        "-gencode=arch=compute_90a,code=sm_90a",
        "-gencode=arch=compute_80,code=sm_80",
        "-gencode=arch=compute_80,code=compute_80",
    ]


def test_driver_probe_without_a_driver(monkeypatch):
    monkeypatch.setattr(_cuda_driver, "_load_driver", lambda: None)
    _cuda_driver._query.cache_clear()
    try:
        assert _cuda_driver.compute_capabilities() == []
        assert _cuda_driver.device_count() == 0
    finally:
        _cuda_driver._query.cache_clear()


class _FakeDriver:
    """Stands for libcuda: two devices, 9.0 and 8.6."""

    caps = ((9, 0), (8, 6))

    def cuInit(self, flags):
        return 0

    def cuDeviceGetCount(self, count):
        count._obj.value = len(self.caps)
        return 0

    def cuDeviceGet(self, device, ordinal):
        device._obj.value = ordinal
        return 0

    def cuDeviceGetAttribute(self, value, attr, device):
        value._obj.value = self.caps[device.value][0 if attr == 75 else 1]
        return 0


def test_driver_probe_reads_compute_capabilities(monkeypatch):
    monkeypatch.setattr(_cuda_driver, "_load_driver", _FakeDriver)
    _cuda_driver._query.cache_clear()
    try:
        assert _cuda_driver.compute_capabilities() == [(9, 0), (8, 6)]
        assert _cuda_driver.device_count() == 2
    finally:
        _cuda_driver._query.cache_clear()


def test_driver_init_failure_means_no_device(monkeypatch):
    class NoDevice(_FakeDriver):
        def cuInit(self, flags):
            return 100  # CUDA_ERROR_NO_DEVICE

    monkeypatch.setattr(_cuda_driver, "_load_driver", NoDevice)
    _cuda_driver._query.cache_clear()
    try:
        assert _cuda_driver.compute_capabilities() == []
    finally:
        _cuda_driver._query.cache_clear()


def test_byref_is_what_the_fake_expects():
    # The fake driver above relies on ctypes.byref exposing the target as ._obj.
    assert ctypes.byref(ctypes.c_int(3))._obj.value == 3
