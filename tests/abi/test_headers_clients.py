"""Client code compiles unchanged with the staging headers: excerpts of FlashInfer's and sglang's
binding sources (tests/abi/headers/clients/), each also compiled with apache-tvm-ffi's headers
(so the excerpt is code that client really writes), and sglang's reflected object runs under
apache's Python."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import apache_wheel

sys.path.insert(0, str(Path(__file__).parent / "headers"))
import headers_build

CLIENTS = headers_build.HERE / "clients"
# sglang builds its JIT sources as C++20; FlashInfer's bindings build as C++17.
STANDARD = {
    "flashinfer_safe_call.cc": "-std=c++17",
    "flashinfer_utils.cc": "-std=c++17",
    "sglang_ffi.cc": "-std=c++20",
    "sglang_ngram_corpus.cc": "-std=c++17",
}


def test_every_client_source_is_listed():
    assert {p.name for p in CLIENTS.glob("*.cc")} == set(STANDARD)


@pytest.mark.parametrize("source", sorted(STANDARD))
def test_client_builds_with_our_headers(wheel, source, tmp_path):
    headers_build.compile_source(
        CLIENTS / source, tmp_path / "client.so", STANDARD[source],
        link_dir=apache_wheel.runtime_path(wheel).parent,
    )  # fmt: skip


@pytest.mark.parametrize("source", sorted(STANDARD))
def test_client_excerpt_builds_with_apaches_headers(wheel, source, tmp_path):
    apache_wheel.build_library(wheel, CLIENTS / source, tmp_path / "client.so", STANDARD[source])


def test_sglang_object_runs_under_apaches_python(wheel, tmp_path):
    tag = apache_wheel.python_tag(wheel)
    python = apache_wheel.find_python(tag) if tag else None
    if python is None:
        pytest.skip(f"no Python {tag} to import {wheel.name}")
    library = headers_build.compile_source(
        CLIENTS / "sglang_ngram_corpus.cc", tmp_path / "ngram.so",
        link_dir=apache_wheel.runtime_path(wheel).parent,
    )  # fmt: skip
    path = [str(apache_wheel.unpacked(wheel))]
    extensions = importlib.util.find_spec("typing_extensions")
    if extensions is not None and extensions.origin:
        path.append(str(Path(extensions.origin).parent))
    proc = subprocess.run(
        [python, str(headers_build.HERE / "clients_driver.py"), str(library)],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(path)},
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1]) == {
        "listed": "corpus-a\t2",
        "bad_argument": "sgl.test.NgramCorpus.async_insert() argument 3 must be Tensor, not str",
    }


@pytest.mark.parametrize(
    "source", ["clients/flashinfer_utils.cc", "clients/sglang_ngram_corpus.cc", "boundary_lib.cc"]
)
def test_builds_as_cuda_source_without_warnings(source, tmp_path):
    # FlashInfer and sglang compile their bindings with nvcc (host code only needs no GPU).
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("no nvcc here")
    cmd = [nvcc, "-std=c++17", "-x", "cu", "-c", "-Xcompiler", "-fPIC,-Wall,-Wextra"]
    cmd += ["-I", str(headers_build.STAGING_INCLUDE), str(headers_build.HERE / source)]
    cmd += ["-o", str(tmp_path / "out.o")]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "staging/include" not in proc.stderr, proc.stderr
