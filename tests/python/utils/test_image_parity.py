"""The Python image check (tvm_ffi.utils._image) and the C++ one (cubin_image.h) give the same
verdict on the same bytes, and the C++ one reads nothing outside the image.

The C++ check runs in tests/cpp/cuda/image_check.cc, built with AddressSanitizer and
UndefinedBehaviorSanitizer, on the shared corpus of image_corpus.py and on random mutations
of a real cubin, fatbin and PTX. TVM_FFI_IMAGE_FUZZ_SEED and TVM_FFI_IMAGE_FUZZ_COUNT change
the fuzzer's seed (default 0) and number of mutations (default 50000).
"""

from __future__ import annotations

import os
import random
import shutil
import struct
import subprocess
from collections.abc import Sequence
from pathlib import Path

import image_corpus
import pytest
from image_corpus import Case, python_verdict

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


@pytest.fixture(scope="session")
def check_cpp(tmp_path_factory):
    """check_cpp(images) -> the C++ verdict of each image, from the sanitized driver."""
    cxx = os.environ.get("CXX", "c++")
    if shutil.which(cxx) is None:
        pytest.skip(f"needs a C++ compiler ({cxx} not found)")
    root = tmp_path_factory.mktemp("image_check")
    exe = root / "image_check"
    cmd = [cxx, "-std=c++17", "-O1", "-g", "-Wall", "-Wextra", "-Werror", *SANITIZE]
    cmd += [f"-I{REPO / 'include'}", str(DRIVER), "-o", str(exe)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr}"

    def run(datas: Sequence[bytes]) -> list[str]:
        stdin = b"".join(struct.pack("<Q", len(d)) + d for d in datas)
        proc = subprocess.run(
            [str(exe)], input=stdin, capture_output=True, env={**os.environ, **SANITIZER_ENV}
        )
        lines = proc.stdout.decode().splitlines()
        if proc.returncode != 0 or len(lines) != len(datas):
            # Lines are flushed one by one: the image after the last line is the culprit.
            culprit = root / f"crash_{len(lines)}.bin"
            culprit.write_bytes(datas[len(lines)] if len(lines) < len(datas) else b"")
            pytest.fail(
                f"the C++ check failed (exit status {proc.returncode}) on image {len(lines)} "
                f"(saved to {culprit}):\n{proc.stderr.decode()[-6000:]}"
            )
        return lines

    return run


def mismatches(cases: Sequence[Case], cpp: Sequence[str]) -> list[str]:
    out = []
    for case, cpp_verdict in zip(cases, cpp):
        py_verdict = python_verdict(case.data)
        expect = case.expect if case.expect is not None else py_verdict
        if py_verdict != expect or cpp_verdict != expect:
            rows = (("expected", expect), ("python", py_verdict), ("C++", cpp_verdict))
            out.append(case.name + ":" + "".join(f"\n  {k:9}{v}" for k, v in rows))
    return out


def test_real_images(images, check_cpp):
    cases = [Case(name, data, expect) for name, (data, expect) in images.items()]
    assert mismatches(cases, check_cpp([c.data for c in cases])) == []


def test_crafted_images(images, check_cpp):
    cases = image_corpus.crafted(images)
    assert len({c.name for c in cases}) == len(cases)
    assert mismatches(cases, check_cpp([c.data for c in cases])) == []


def test_every_prefix(images, check_cpp):
    cases = [
        case for name, (data, _) in images.items() for case in image_corpus.prefixes(name, data)
    ]
    assert mismatches(cases, check_cpp([c.data for c in cases])) == []
    # Only PTX survives a cut, once past its .target: a cubin ends with its section table and
    # a fatbin with the body its header declares.
    accepted = [c.name for c in cases if python_verdict(c.data).startswith("ok")]
    assert accepted and all(".ptx[:" in name for name in accepted), accepted[:10]


# --- fuzzing -------------------------------------------------------------------------------

# Values worth writing into an offset or size: boundaries of the checks and of the width.
SPECIAL = (0, 1, 2, 15, 16, 17, 47, 48, 55, 56, 63, 64, 65)
# Values worth writing into a type or kind field: each one the checks treat differently.
SECTION_TYPES = (0, 1, 3, 7, 8, 0x70000000)
SEGMENT_TYPES = (0, 1, 6)
ENTRY_KINDS = (0, 1, 2, 4)
PTX_TOKENS = tuple(
    b".version|.target| sm_|sm_90a|//|/*|*/|\0|,|\n|\f| |8.0|.|a|compute_".split(b"|")
)

# (offset, width, the values to try there or None for an offset/size) of one header's fields
Record = list[tuple[int, int, "tuple[int, ...] | None"]]


def cubin_records(cubin: bytes, base: int = 0) -> list[Record]:
    """The ELF header, each section header and each program header of an ELF image at `base`:
    the fields the checks read."""
    records = [[(4, 1, (1, 2, 3)), (5, 1, (1, 2)), (8, 1, (7, 8)), (18, 2, (62, 190))]]
    records += [[(32, 8, None), (40, 8, None), (48, 4, None)]]
    records += [[(at, 2, None) for at in (54, 56, 58, 60, 62)]]
    phoff, shoff = struct.unpack_from("<QQ", cubin, 32)
    phnum, _, shnum = struct.unpack_from("<HHH", cubin, 56)
    section = ((0, 4, None), (4, 4, SECTION_TYPES), (24, 8, None), (32, 8, None))
    segment = ((0, 4, SEGMENT_TYPES), (8, 8, None), (32, 8, None))
    records += [[(shoff + 64 * i + at, *f) for at, *f in section] for i in range(shnum)]
    records += [[(phoff + 56 * i + at, *f) for at, *f in segment] for i in range(phnum)]
    return [[(base + at, width, values) for at, width, values in r] for r in records]


def fatbin_records(fatbin: bytes) -> list[Record]:
    """The fatbin header, each entry header, and the headers of the uncompressed cubins inside."""
    records = [[(0, 4, (0xBA55ED50, 0)), (6, 2, None), (8, 8, None)]]
    entry = ((0, 2, ENTRY_KINDS), (4, 4, None), (8, 8, None), (28, 4, None), (40, 8, None))
    for at in image_corpus.fatbin_entries(fatbin):
        records.append([(at + off, *f) for off, *f in entry])
        (header,) = struct.unpack_from("<I", fatbin, at + 4)
        if fatbin.startswith(b"\x7fELF", at + header):
            records += cubin_records(fatbin[at + header :], at + header)
    return records


def field_value(
    old: int, width: int, values: tuple[int, ...] | None, n: int, rng: random.Random
) -> int:
    if values is not None and rng.random() < 0.8:
        return rng.choice(values)
    top = 2 ** (8 * width)
    near = (n - 1, n, n + 1, old + rng.randrange(-64, 65), rng.randrange(2 * n + 1))
    return rng.choice((*SPECIAL, *near, top - 1, top // 2, rng.randrange(top))) % top


def mutate(data: bytes, records: list[Record], text: bool, rng: random.Random) -> bytes:
    """One to three random edits: bit flips, cuts, insertions, deletions, and for binary
    images overwrites of some fields of one header (a section's type and offset together, say);
    for PTX, tokens written over the text."""
    out = bytearray(data)
    for _ in range(rng.choice((1, 1, 2, 3))):
        op = rng.randrange(6)
        pos = rng.randrange(len(out) + 1)
        if text and rng.random() < 0.7:  # most PTX edits go where the directives are
            pos = min(pos, rng.randrange(300))
        if op == 0 and out:
            pos = min(pos, len(out) - 1)
            out[pos] ^= 1 << rng.randrange(8)
        elif op == 1:
            del out[pos:]
        elif op == 2:
            out[pos:pos] = rng.choice(PTX_TOKENS) if text else rng.randbytes(rng.randrange(1, 17))
        elif op == 3:
            del out[pos : pos + rng.randrange(1, 65)]
        elif text:
            token = rng.choice(PTX_TOKENS)
            out[pos : pos + len(token)] = token
        else:
            record = rng.choice(records)
            for at, width, values in rng.sample(record, rng.randrange(1, len(record) + 1)):
                if at + width <= len(out):
                    old = int.from_bytes(out[at : at + width], "little")
                    value = field_value(old, width, values, len(out), rng)
                    out[at : at + width] = value.to_bytes(width, "little")
    return bytes(out)


def test_fuzz_cpp_and_python_agree(images, check_cpp, capsys):
    seed = int(os.environ.get("TVM_FFI_IMAGE_FUZZ_SEED", "0"))
    count = int(os.environ.get("TVM_FFI_IMAGE_FUZZ_COUNT", "50000"))
    cubin, fatbin = images["sm_90a.cubin"][0], images["plain.fatbin"][0]
    ptx = images["compute_80.ptx"][0]
    seeds = [(cubin, cubin_records(cubin), False), (fatbin, fatbin_records(fatbin), False)]
    seeds.append((ptx, [], True))
    rng = random.Random(seed)
    cases = []
    for i in range(count):
        data, fields, text = seeds[i % len(seeds)]
        cases.append(Case(f"mutation {i} (seed {seed})", mutate(data, fields, text, rng)))
    found = mismatches(cases, check_cpp([c.data for c in cases]))
    accepted = sum(python_verdict(c.data).startswith("ok") for c in cases)
    with capsys.disabled():
        print(
            f"\nimage fuzz: {count} mutations (seed {seed}; {accepted} accepted), "
            f"{len(found)} verdicts differ, no sanitizer report"
        )
    assert found == []
