"""The job count of parallel builds follows the cores, the memory available (MemAvailable,
cgroup limits) and a per-job estimate; MAX_JOBS or max_jobs= sets it outright; and the
count reaches ninja's -j and load_inline_many's number of builds at once. /proc and the
cgroup file system are faked as directory trees handed to job_count."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from helpers import launcher_cases
from tvm_ffi import cpp
from tvm_ffi.cpp import _jobs, _prebuilt

GiB = 1 << 30


def fake_proc(tmp_path: Path, available: int, cgroup_line: str = "0::/") -> str:
    """A /proc with ``available`` bytes of MemAvailable, in the cgroup ``cgroup_line``."""
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True, exist_ok=True)
    (proc / "meminfo").write_text(
        "MemTotal:       99999999 kB\nMemFree:            1000 kB\n"
        f"MemAvailable:   {available // 1024} kB\n"
    )
    (proc / "self" / "cgroup").write_text(cgroup_line + "\n")
    return str(proc)


def fake_cgroup(root: Path, path: str, files: dict[str, str]) -> None:
    directory = root / path.strip("/")
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name).write_text(text + "\n")


def count(tmp_path: Path, device: bool, **kwargs) -> int:
    return _jobs.job_count(
        device=device, cores=8, proc=str(tmp_path / "proc"), cgroup=str(tmp_path / "cg"), **kwargs
    )


def test_the_count_is_the_cores_memory_allows(tmp_path):
    fake_proc(tmp_path, 10 * GiB)
    assert count(tmp_path, device=False) == 8  # 10 jobs of 1 GiB fit; 8 cores
    assert count(tmp_path, device=True) == 2  # 4 GiB each
    fake_proc(tmp_path, 3 * GiB)
    assert count(tmp_path, device=True) == 1  # never less than one
    assert count(tmp_path, device=False) == 3


def test_a_cgroup_v2_limit_and_its_ancestors_cut_the_count(tmp_path):
    fake_proc(tmp_path, 64 * GiB, "0::/job/step")
    cgroup = tmp_path / "cg"
    fake_cgroup(cgroup, "/", {"cgroup.controllers": "cpu memory"})
    # 3 GiB limit, 2 GiB used of which 0.5 GiB is reclaimable cache: 1.5 GiB left.
    fake_cgroup(cgroup, "job/step", {
        "memory.max": str(3 * GiB), "memory.current": str(2 * GiB),
        "memory.stat": f"anon 1\ninactive_file {GiB // 2}\nactive_file 7",
    })  # fmt: skip
    fake_cgroup(cgroup, "job", {"memory.max": "max", "memory.current": str(5 * GiB)})
    assert _jobs.available_memory(str(tmp_path / "proc"), str(cgroup)) == 3 * GiB // 2
    assert count(tmp_path, device=False) == 1
    fake_cgroup(cgroup, "job/step", {"memory.max": "max"})  # no limit of its own
    fake_cgroup(cgroup, "job", {"memory.max": str(8 * GiB)})  # the parent's: 3 GiB left
    assert count(tmp_path, device=False) == 3


def test_a_cgroup_v1_limit_seen_from_a_container_cuts_the_count(tmp_path):
    # The container sees the host's path, and its own cgroup mounted as the root.
    fake_proc(tmp_path, 64 * GiB, "4:cpu,memory:/docker/abc123")
    fake_cgroup(tmp_path / "cg", "memory", {
        "memory.limit_in_bytes": str(6 * GiB), "memory.usage_in_bytes": str(2 * GiB),
        "memory.stat": f"cache 5\ntotal_inactive_file {GiB}",
    })  # fmt: skip
    assert count(tmp_path, device=False) == 5
    # v1's "no limit" is a page-rounded LLONG_MAX.
    fake_cgroup(tmp_path / "cg", "memory", {"memory.limit_in_bytes": "9223372036854771712"})
    assert count(tmp_path, device=False) == 8


def test_no_memory_figures_leave_the_cores(tmp_path):
    assert count(tmp_path, device=True) == 8


def test_the_job_memory_estimate_can_be_set(tmp_path, monkeypatch):
    fake_proc(tmp_path, 3 * GiB)
    monkeypatch.setenv("TVM_FFI_BUILD_JOB_MEMORY", "512M")
    assert count(tmp_path, device=True) == 6
    monkeypatch.setenv("TVM_FFI_BUILD_JOB_MEMORY", "1.5GiB")
    assert count(tmp_path, device=False) == 2


@pytest.mark.parametrize("value", ["lots", "0", "-1G", "4X", "G"])
def test_a_bad_job_memory_is_refused(value, monkeypatch):
    monkeypatch.setenv("TVM_FFI_BUILD_JOB_MEMORY", value)
    message = (
        rf"^TVM_FFI_BUILD_JOB_MEMORY must be a size such as 4G, 512M or 1\.5GiB \(got '{value}'\)$"
    )
    with pytest.raises(ValueError, match=message):
        cpp.build_inline("jobs_bad_memory", cpp_sources="int f() { return 0; }\n")


def test_max_jobs_wins_over_memory(tmp_path, monkeypatch):
    fake_proc(tmp_path, GiB)
    assert count(tmp_path, device=True, limit=6) == 6  # load_inline_many's max_jobs=
    monkeypatch.setenv("MAX_JOBS", "5")
    assert count(tmp_path, device=True) == 5


@pytest.fixture
def ninja_args(monkeypatch) -> list[list[str]]:
    """The command lines of ninja runs (those with -j), as they start."""
    spawned: list[list[str]] = []
    real_popen = subprocess.Popen

    def spy(args, *rest, **kwargs):
        if "-j" in args:
            spawned.append(list(args))
        return real_popen(args, *rest, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", spy)
    return spawned


def test_the_count_reaches_ninja(ninja_args, monkeypatch):
    cores = len(os.sched_getaffinity(0))
    monkeypatch.setenv("TVM_FFI_BUILD_JOB_MEMORY", "1K")  # memory is no limit
    cpp.build_inline("jobs_small", cpp_sources="int f() { return 0; }\n")
    monkeypatch.setenv("TVM_FFI_BUILD_JOB_MEMORY", "1000000T")  # more than any host has
    cpp.build_inline("jobs_huge", cpp_sources="int f() { return 0; }\n")
    assert [args[-2:] for args in ninja_args] == [["-j", str(cores)], ["-j", "1"]]


# A compiler that refuses to run next to another compile.
ALONE_CXX = """#!/bin/sh
case " $* " in *" -c "*)
  mkdir "$JIT_LOG.running" 2>/dev/null || { echo "error: two compiles at once"; exit 1; }
  sleep 0.3; c++ "$@"; rc=$?; rmdir "$JIT_LOG.running"; exit $rc;;
esac
exec c++ "$@"
"""


def test_many_modules_build_one_at_a_time_when_memory_allows_one(
    install_cxx, ninja_args, monkeypatch
):
    install_cxx("alone-c++", ALONE_CXX)
    monkeypatch.setenv("TVM_FFI_BUILD_JOB_MEMORY", "1000000T")
    modules = [
        {"name": f"jobs_many_{i}", "cpp_sources": f"int f() {{ return {i}; }}", "functions": "f"}
        for i in range(3)
    ]
    assert [m.f() for m in cpp.load_inline_many(modules)] == [0, 1, 2]
    assert [args[-2:] for args in ninja_args] == [["-j", "1"]] * 3


@pytest.mark.skipif(not launcher_cases.has_cuda_headers(), reason="needs the CUDA headers")
def test_a_runtime_built_alongside_shares_the_jobs(install_cxx, ninja_args, monkeypatch):
    # Without the package's prebuilt launcher object, the module's runtime is a cache entry
    # of its own, built beside the module's sources (see test_jit_separate_launcher.py).
    monkeypatch.setattr(_prebuilt, "_current", [None])
    install_cxx("alone-c++", ALONE_CXX)
    monkeypatch.setenv("MAX_JOBS", "1")
    cpp.build_inline(
        "jobs_alongside",
        cpp_sources=launcher_cases.WRAPPER,
        functions=["load_bytes"],
        embed_cubin={"kernels": launcher_cases.PTX},
    )
    assert [args[-2:] for args in ninja_args] == [["-j", "1"]] * 3  # runtime, objects, link
