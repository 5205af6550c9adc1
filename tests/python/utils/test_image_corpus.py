"""The image reader (cubin_image.h, reached through tvm_ffi._core) on the corpus of
image_corpus.py: every real and crafted image gets its expected verdict (accepted with its
kind and architectures, or rejected with its message), and a cut image is refused unless it
is PTX past its .target. The same reader, built with AddressSanitizer and
UndefinedBehaviorSanitizer (tests/cpp/cuda/image_check.cc), reads nothing outside an image
and gives the verdict _core gives.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from collections.abc import Sequence
from pathlib import Path

import image_corpus
import pytest
from image_corpus import Case, verdict

REPO = Path(__file__).resolve().parents[3]
DRIVER = REPO / "tests" / "cpp" / "cuda" / "image_check.cc"
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]
SANITIZER_ENV = {
    "ASAN_OPTIONS": "detect_leaks=0:halt_on_error=1",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
}


@pytest.fixture(scope="session")
def images(tmp_path_factory) -> dict[str, tuple[bytes, str]]:
    nvcc = image_corpus.find_nvcc()
    if nvcc is None:
        pytest.skip("needs nvcc to build the image corpus")
    return image_corpus.good_images(nvcc, tmp_path_factory.mktemp("images"))


def wrong_verdicts(cases: Sequence[Case]) -> list[str]:
    return [
        f"{case.name}:\n  expected {case.expect}\n  got      {got}"
        for case in cases
        if (got := verdict(case.data)) != case.expect
    ]


def test_real_images(images):
    cases = [Case(name, data, expect) for name, (data, expect) in images.items()]
    assert wrong_verdicts(cases) == []


def test_crafted_images(images):
    cases = image_corpus.crafted(images)
    assert len({c.name for c in cases}) == len(cases)
    assert all(c.expect is not None for c in cases)
    assert wrong_verdicts(cases) == []


def test_every_prefix_is_refused_but_ptx(images):
    # Only PTX survives a cut, once past its .target: a cubin ends with its section table and
    # a fatbin with the body its header declares.
    cases = [
        case for name, (data, _) in images.items() for case in image_corpus.prefixes(name, data)
    ]
    accepted = [c.name for c in cases if verdict(c.data).startswith("ok")]
    assert accepted and all(".ptx[:" in name for name in accepted), accepted[:10]


def test_sanitized_reader_stays_inside_the_image(images, tmp_path):
    """The whole corpus through image_check.cc under the sanitizers: no report, and the same
    verdict as _core (which also checks SelfDescribedSize on each accepted image)."""
    cxx = os.environ.get("CXX", "c++")
    if shutil.which(cxx) is None:
        pytest.skip(f"needs a C++ compiler ({cxx} not found)")
    exe = tmp_path / "image_check"
    cmd = [cxx, "-std=c++17", "-O1", "-g", "-Wall", "-Wextra", "-Werror", *SANITIZE]
    cmd += [f"-I{REPO / 'include'}", str(DRIVER), "-o", str(exe)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr}"
    cases = image_corpus.corpus(images)
    stdin = b"".join(struct.pack("<Q", len(c.data)) + c.data for c in cases)
    proc = subprocess.run(
        [str(exe)], input=stdin, capture_output=True, env={**os.environ, **SANITIZER_ENV}
    )
    lines = proc.stdout.decode().splitlines()
    # Lines are flushed one by one: the case after the last line is the culprit.
    culprit = cases[len(lines)].name if len(lines) < len(cases) else None
    assert proc.returncode == 0 and culprit is None, (culprit, proc.stderr.decode()[-6000:])
    differ = [c.name for c, line in zip(cases, lines) if line != verdict(c.data)]
    assert differ == []
