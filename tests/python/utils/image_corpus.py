"""The corpus of CUDA images the image reader (cubin_image.h, reached from Python through
tvm_ffi._core) is tested on: real images from nvcc (and NVRTC where installed), prefixes of
them, and crafted images, each crafted one with the verdict it must get.

A verdict is one line: ``ok <kind> <nul|-> <entry kind>:<arch> ...`` for an accepted image
(``nul`` when a PTX image holds a NUL), ``error <message>`` for a rejected one;
tests/cpp/cuda/image_check.cc prints the same from a sanitized build of the reader.

``python image_corpus.py DIR`` writes every image of the corpus to DIR.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tvm_ffi import _core

KERNEL = r"""
extern "C" __global__ void add_one(const float* x, float* y, int n) {
  __shared__ float s[32];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  s[threadIdx.x % 32] = i < n ? x[i] : 0.f;
  __syncthreads();
  if (i < n) y[i] = s[threadIdx.x % 32] + 1.0f;
}
"""

# name -> (nvcc options, expected verdict of the image)
NVCC_IMAGES = {
    "sm_75.cubin": (["-cubin", "-arch=sm_75"], "ok cubin - cubin:sm_75"),
    "sm_80.cubin": (["-cubin", "-arch=sm_80"], "ok cubin - cubin:sm_80"),
    "sm_90.cubin": (["-cubin", "-arch=sm_90"], "ok cubin - cubin:sm_90"),
    "sm_90a.cubin": (["-cubin", "-arch=sm_90a"], "ok cubin - cubin:sm_90a"),
    "sm_80_rdc.cubin": (["-cubin", "-rdc=true", "-arch=sm_80"], "ok cubin - cubin:sm_80"),
    "sm_80_debug.cubin": (["-cubin", "-G", "-arch=sm_80"], "ok cubin - cubin:sm_80"),
    "compute_80.ptx": (["-ptx", "-arch=compute_80"], "ok ptx - ptx:compute_80"),
    "sm_90a.ptx": (["-ptx", "-arch=sm_90a"], "ok ptx - ptx:compute_90a"),
    "multi.fatbin": (
        ["-fatbin"]
        + [f"-gencode=arch=compute_{a},code=sm_{a}" for a in ("75", "80", "90a")]
        + ["-gencode=arch=compute_90,code=[sm_90,compute_90]"],
        "ok fatbin - cubin:sm_75 cubin:sm_80 cubin:sm_90a cubin:sm_90 ptx:compute_90",
    ),
    "plain.fatbin": (
        ["-fatbin", "-Xfatbin=-compress=false", "-gencode=arch=compute_80,code=[sm_80,compute_80]"],
        "ok fatbin - cubin:sm_80 ptx:compute_80",
    ),
    "compressed.fatbin": (
        ["-fatbin", "-Xfatbin=-compress-all", "-gencode=arch=compute_90,code=[sm_90,compute_90]"],
        "ok fatbin - cubin:sm_90 ptx:compute_90",
    ),
}


@dataclass(frozen=True)
class Case:
    name: str
    data: bytes
    expect: str | None = None  # the verdict the reader must give; None: not fixed in advance


def verdict(data: bytes) -> str:
    """The reader's verdict line through _core, in image_check.cc's format."""
    try:
        kind, entries = _core.inspect_image(data)
    except ValueError as err:
        return "error " + str(err).replace("\n", "\\n")
    nul = "nul" if kind == "ptx" and b"\0" in data else "-"
    return " ".join(["ok", kind, nul] + [f"{k}:{arch}" for k, arch in entries])


def find_nvcc() -> str | None:
    for candidate in (shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


def good_images(nvcc: str, workdir: Path) -> dict[str, tuple[bytes, str]]:
    """name -> (bytes, expected verdict) of real images: nvcc's, NVRTC's when installed."""
    source = workdir / "kernel.cu"
    source.write_text(KERNEL)
    images = {}
    for name, (options, expect) in NVCC_IMAGES.items():
        out = workdir / name
        subprocess.run([nvcc, *options, str(source), "-o", str(out)], check=True)
        images[name] = (out.read_bytes(), expect)
    try:
        from tvm_ffi.cpp.nvrtc import nvrtc_compile

        cubin = nvrtc_compile(KERNEL, arch="sm_86")
        ptx = nvrtc_compile(KERNEL, arch="sm_86", output="ptx")  # NUL-terminated
    except ImportError:  # no NVRTC: the nvcc images still cover every kind
        return images
    images["nvrtc_sm_86.cubin"] = (cubin, "ok cubin - cubin:sm_86")
    images["nvrtc_compute_86.ptx"] = (ptx, "ok ptx nul ptx:compute_86")
    return images


def prefixes(name: str, data: bytes) -> list[Case]:
    """Every prefix of an image up to 8 KiB; for larger ones the first 256 bytes, every
    97th length and the lengths around each 64-byte boundary."""
    if len(data) <= 8192:
        cuts = range(len(data))
    else:
        cuts = sorted(
            set(range(256))
            | set(range(0, len(data), 97))
            | {c + d for c in range(0, len(data), 64) for d in (-1, 0, 1)}
        )
    return [Case(f"{name}[:{c}]", data[:c]) for c in cuts if 0 <= c < len(data)]


# Field offsets of ELF64 headers.
E_PHOFF, E_SHOFF, E_PHENTSIZE, E_SHENTSIZE, E_SHNUM, E_SHSTRNDX = 32, 40, 54, 58, 60, 62
SH_NAME, SH_TYPE, SH_OFFSET, SH_SIZE = 0, 4, 24, 32
P_OFFSET, P_FILESZ = 8, 32


def elf_sections(d: bytes) -> list[tuple[int, int, int, int, str]]:
    """(header offset, type, offset, size, name) of each section of a well-formed ELF64."""
    (shoff,) = struct.unpack_from("<Q", d, E_SHOFF)
    shnum, shstrndx = struct.unpack_from("<HH", d, E_SHNUM)
    str_off = struct.unpack_from("<Q", d, shoff + 64 * shstrndx + SH_OFFSET)[0]
    out = []
    for i in range(shnum):
        hdr = shoff + 64 * i
        name, sh_type = struct.unpack_from("<II", d, hdr)
        off, size = struct.unpack_from("<QQ", d, hdr + SH_OFFSET)
        label = d[str_off + name : d.index(b"\0", str_off + name)].decode()
        out.append((hdr, sh_type, off, size, label))
    return out


def put(data: bytes, fmt: str, at: int, *values: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, at, *values)
    return bytes(out)


def crafted_cubins(cubin: bytes) -> list[Case]:
    """Crafted from an sm_90a cubin, whose SM only its .note.nv.tkinfo tells apart from sm_90."""
    n = len(cubin)
    sections = elf_sections(cubin)
    index = {label: i for i, (_, _, _, _, label) in enumerate(sections)}
    note = index[".note.nv.tkinfo"]
    note_hdr, _, note_off, note_size, _ = sections[note]
    strtab_hdr, _, _, _, _ = sections[index[".shstrtab"]]
    shnum, shstrndx = struct.unpack_from("<HH", cubin, E_SHNUM)
    (phnum,) = struct.unpack_from("<H", cubin, E_PHENTSIZE + 2)
    (shoff,) = struct.unpack_from("<Q", cubin, E_SHOFF)
    (phoff,) = struct.unpack_from("<Q", cubin, E_PHOFF)
    name_off = struct.unpack_from("<I", cubin, note_hdr)[0]
    arch_at = cubin.index(b"-arch sm_90a", note_off)
    ok_90, ok_90a = "ok cubin - cubin:sm_90", "ok cubin - cubin:sm_90a"
    trunc = "error truncated or corrupt CUBIN image: "
    return [
        Case("as built", cubin, ok_90a),
        Case("trailing bytes", cubin + b"\0" * 100, ok_90a),
        # The note holds no file bytes: nothing to read, the SM comes from e_flags.
        Case(
            "tkinfo NOBITS past the end",
            put(put(cubin, "<I", note_hdr + SH_TYPE, 8), "<Q", note_hdr + SH_OFFSET, n + 4096),
            ok_90,
        ),
        Case(
            "tkinfo past the end",
            put(cubin, "<Q", note_hdr + SH_OFFSET, n + 4096),
            f"{trunc}section {note} ends at byte {n + 4096 + note_size} but the image has "
            f"{n} bytes",
        ),
        Case(
            "tkinfo size wraps",
            put(cubin, "<QQ", note_hdr + SH_OFFSET, n - 1, 2**64 - 1),
            f"{trunc}section {note} ends at byte {n - 1 + 2**64 - 1} but the image has {n} bytes",
        ),
        Case("tkinfo PROGBITS", put(cubin, "<I", note_hdr + SH_TYPE, 1), ok_90),
        Case("tkinfo name out of range", put(cubin, "<I", note_hdr + SH_NAME, 2**32 - 8), ok_90),
        Case(
            "tkinfo name cut by the end of .shstrtab",
            put(cubin, "<Q", strtab_hdr + SH_SIZE, name_off + 15),
            ok_90,
        ),
        Case("tkinfo names another SM", put_bytes(cubin, arch_at, b"-arch sm_80a"), ok_90),
        Case("tkinfo suffix ab", put_bytes(cubin, arch_at, b"-arch sm_90ab"), ok_90),
        Case(
            "tkinfo family", put_bytes(cubin, arch_at, b"-arch sm_90f"), "ok cubin - cubin:sm_90f"
        ),
        Case("tkinfo without suffix", put_bytes(cubin, arch_at, b"-arch sm_90 "), ok_90),
        Case(
            "section table wraps",
            put(cubin, "<Q", E_SHOFF, 2**64 - 64),
            f"{trunc}the section table ends at byte {2**64 - 64 + 64 * shnum} but the image "
            f"has {n} bytes",
        ),
        Case(
            "program header table past the end",
            put(cubin, "<Q", E_PHOFF, n),
            f"{trunc}the program header table ends at byte {n + 56 * phnum} but the image has "
            f"{n} bytes",
        ),
        Case(
            "segment past the end",
            put(cubin, "<Q", phoff + 56 + P_OFFSET, n),
            f"{trunc}segment 1 ends at byte {n + segment_size(cubin, 1)} but the image has "
            f"{n} bytes",
        ),
        Case("ELF32", put(cubin, "B", 4, 1), "error not a 64-bit ELF image (CUBINs are ELF64)"),
        Case(
            "big-endian",
            put(cubin, "B", 5, 2),
            "error not a little-endian ELF image (CUBINs are little-endian)",
        ),
        Case(
            "x86-64 ELF",
            put(cubin, "<H", 18, 62),
            "error ELF image is not a CUBIN (e_machine 62, expected 190 for NVIDIA CUDA)",
        ),
        Case(
            "extended section numbering",
            put(cubin, "<H", E_SHNUM, 0),
            "error corrupt CUBIN image: e_shnum is 0 but e_shoff is not (extended section "
            "numbering is not supported)",
        ),
        Case("no sections", put(put(cubin, "<HH", E_SHNUM, 0, 0), "<Q", E_SHOFF, 0), ok_90),
        Case(
            "section header size 40",
            put(cubin, "<H", E_SHENTSIZE, 40),
            "error corrupt CUBIN image: section header size 40, expected 64",
        ),
        Case(
            "program header size 32",
            put(cubin, "<H", E_PHENTSIZE, 32),
            "error corrupt CUBIN image: program header size 32, expected 56",
        ),
        Case(
            "name table index out of range",
            put(cubin, "<H", E_SHSTRNDX, shnum),
            f"error corrupt CUBIN image: section name table index {shnum} is out of range "
            f"({shnum} sections)",
        ),
        Case(
            "name table NOBITS",
            put(cubin, "<I", strtab_hdr + SH_TYPE, 8),
            f"error corrupt CUBIN image: the section name table (section {shstrndx}) is not a "
            "string table (type 8)",
        ),
        Case("no name table", put(cubin, "<H", E_SHSTRNDX, 0), ok_90),
        Case(
            "63 bytes",
            cubin[:63],
            "error truncated CUBIN image: 63 bytes, smaller than an ELF header (64 bytes)",
        ),
        Case(
            "magic only",
            cubin[:4],
            "error truncated CUBIN image: 4 bytes, smaller than an ELF header (64 bytes)",
        ),
        Case(
            "section table cut",
            cubin[: shoff + 10],
            f"{trunc}the section table ends at byte {shoff + 64 * shnum} but the image has "
            f"{shoff + 10} bytes",
        ),
    ]


def segment_size(elf: bytes, i: int) -> int:
    (phoff,) = struct.unpack_from("<Q", elf, E_PHOFF)
    return struct.unpack_from("<Q", elf, phoff + 56 * i + P_FILESZ)[0]


def put_bytes(data: bytes, at: int, value: bytes) -> bytes:
    return data[:at] + value + data[at + len(value) :]


def crafted_ptx(ptx: bytes) -> list[Case]:
    """Crafted from nvcc's PTX for compute_80 (no NUL), and written by hand."""
    ok, ok_nul = "ok ptx - ptx:compute_80", "ok ptx nul ptx:compute_80"
    no_version = (
        "error not a PTX image: no .version directive at its start (only whitespace and "
        "comments may precede it); CUDA source must be compiled to PTX first"
    )
    bad_version = "error not a PTX image: malformed .version directive (expected e.g. .version 8.5)"
    no_target = "error not a PTX image: .version is not followed by a .target directive"
    no_sm = "error not a PTX image: its .target directive names no sm_ architecture"
    v = b".version 8.0\n"
    return [
        Case("as built", ptx, ok),
        Case("form feed first", b"\f" + ptx, ok),
        Case("100 spaces first", b" " * 100 + ptx, ok),
        Case("every whitespace first", b" \t\n\v\f\r" + ptx, ok),
        Case("NUL-terminated", ptx + b"\0", ok_nul),
        Case("bytes after the NUL", ptx + b"\0\xff\xfe garbage", ok_nul),
        Case("CRLF lines", ptx.replace(b"\n", b"\r\n"), ok),
        Case(
            "comment of 70000 bytes first", b"/*" + b"x" * 70000 + b"*/" + v + b".target sm_80", ok
        ),
        Case("CUDA source", b"// kernel\n__global__ void f() {}\n", no_version),
        Case("directives in comments", b"// .version 8.0\n// .target sm_80\n", no_version),
        Case("directives in a block comment", b"/* .version 8.0 */ .target sm_80\n", no_version),
        Case("unterminated block comment", b"/* x\n" + v + b".target sm_80\n", no_version),
        Case(".versionx", b".versionx 8.0\n.target sm_80\n", no_version),
        Case("version without minor", b".version 8\n.target sm_80\n", bad_version),
        Case("version with three parts", b".version 8.0.1\n.target sm_80\n", bad_version),
        Case("version cut", b".version 8.", bad_version),
        Case("no .target", v + b".address_size 64\n", no_target),
        Case(".target after the NUL", v + b"\0.target sm_80\n", no_target),
        Case(".target in a comment", v + b"// .target sm_80\n", no_target),
        Case("comments between directives", b".version/*a*/8.0//b\n/*c*/.target/*d*/sm_80\n", ok),
        Case("target without sm_", v + b".target texmode_independent\n", no_sm),
        Case(
            "target list",
            v + b".target texmode_independent , sm_75 // x\n",
            "ok ptx - ptx:compute_75",
        ),
        Case("target with options", v + b".target sm_90a, debug", "ok ptx - ptx:compute_90a"),
        Case("target at the end", v + b".target sm_100f", "ok ptx - ptx:compute_100f"),
        Case("target in capitals", v + b".target SM_80\n", no_sm),
        Case("target sm_ alone", v + b".target sm_\n", no_sm),
        Case("target sm_90_x", v + b".target sm_90_x\n", no_sm),
        Case("target cut", v + b".target", no_sm),
        Case(
            "whitespace only",
            b" \n\t \f",
            "error not a CUBIN, PTX or fatbin image (first bytes: 20 0a 09 20)",
        ),
        Case(
            "preprocessor line first",
            b"#define X\n" + ptx,
            "error not a CUBIN, PTX or fatbin image (first bytes: 23 64 65 66)",
        ),
        Case(
            "NUL first",
            b"\0" + ptx,
            "error not a CUBIN, PTX or fatbin image (first bytes: 00 2f 2f 0a)",
        ),
    ]


def fatbin_entries(fatbin: bytes) -> list[int]:
    """Offsets of the entries of the first fatbin in `fatbin`."""
    header, body = struct.unpack_from("<HQ", fatbin, 6)
    at, end, out = header, header + body, []
    while end - at >= 16:
        out.append(at)
        entry_header, payload = struct.unpack_from("<IQ", fatbin, at + 4)
        at += entry_header + payload
    return out


def crafted_fatbins(fatbin: bytes, expect: str) -> list[Case]:
    """Crafted from a fatbin holding `expect`: ok fatbin - cubin:sm_80 ptx:compute_80."""
    n = len(fatbin)
    first, second = fatbin_entries(fatbin)[:2]
    archs = expect.split(" ", 3)[3]
    bad = "error corrupt fatbin image: "
    return [
        Case("as built", fatbin, expect),
        Case(
            "15 bytes",
            fatbin[:15],
            "error truncated fatbin image: 15 bytes, smaller than a fatbin header (16 bytes)",
        ),
        Case("header only", put(fatbin[:16], "<Q", 8, 0), "ok fatbin -"),
        Case(
            "header size 8",
            put(fatbin, "<H", 6, 8),
            f"{bad}the fatbin at byte 0 declares a 8-byte header (at least 16)",
        ),
        Case(
            "body size wraps",
            put(fatbin, "<Q", 8, 2**64 - 1),
            f"error truncated fatbin image: its header declares {16 + 2**64 - 1} bytes but the "
            f"image has {n} bytes",
        ),
        Case(
            "cut",
            fatbin[:100],
            f"error truncated fatbin image: its header declares {n} bytes but the image has 100 "
            "bytes",
        ),
        Case(
            "entry header size 8",
            put(fatbin, "<I", first + 4, 8),
            f"{bad}the entry at byte {first} declares a 8-byte header (at least 16)",
        ),
        Case(
            "entry payload wraps",
            put(fatbin, "<Q", first + 8, 2**64 - 1),
            f"{bad}the entry at byte {first} runs past the end of the fatbin",
        ),
        Case(
            "code entry header of 32 bytes",
            put(fatbin, "<IQ", first + 4, 32, second - first - 32),
            f"{bad}the code entry at byte {first} has a 32-byte header, too short to name its "
            "architecture (48)",
        ),
        Case(
            "unknown entry kind",
            put(fatbin, "<H", first, 4),
            f"ok fatbin - {archs.split(' ', 1)[1]}",
        ),
        Case(
            "arch flags",
            put(fatbin, "<Q", first + 40, 0x300011),
            f"ok fatbin - {archs.replace('cubin:sm_80', 'cubin:sm_80af', 1)}",
        ),
        Case("two fatbins", fatbin + fatbin, f"ok fatbin - {archs} {archs}"),
        Case("trailing bytes", fatbin + b"trailing bytes", expect),
        Case("trailing short fatbin", fatbin + fatbin[:12], expect),
    ]


def crafted_others() -> list[Case]:
    return [
        Case("empty", b"", "error empty image (0 bytes)"),
        Case(
            "garbage",
            b"\x12\x34\x56\x78\x9a",
            "error not a CUBIN, PTX or fatbin image (first bytes: 12 34 56 78)",
        ),
        Case("one byte", b"\x7f", "error not a CUBIN, PTX or fatbin image (first bytes: 7f)"),
    ]


def crafted(images: dict[str, tuple[bytes, str]]) -> list[Case]:
    """Every crafted case, named after the image it was made from."""
    cases = [
        Case(f"sm_90a.cubin: {c.name}", c.data, c.expect)
        for c in crafted_cubins(images["sm_90a.cubin"][0])
    ]
    cases += [
        Case(f"compute_80.ptx: {c.name}", c.data, c.expect)
        for c in crafted_ptx(images["compute_80.ptx"][0])
    ]
    data, expect = images["plain.fatbin"]
    cases += [
        Case(f"plain.fatbin: {c.name}", c.data, c.expect) for c in crafted_fatbins(data, expect)
    ]
    return cases + crafted_others()


def corpus(images: dict[str, tuple[bytes, str]]) -> list[Case]:
    """The whole corpus: the real images, their prefixes and the crafted cases."""
    cases = [Case(name, data, expect) for name, (data, expect) in images.items()]
    for name, (data, _) in images.items():
        cases += prefixes(name, data)
    return cases + crafted(images)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python image_corpus.py OUTPUT_DIR", file=sys.stderr)
        return 2
    nvcc = find_nvcc()
    if nvcc is None:
        print("nvcc not found", file=sys.stderr)
        return 1
    out = Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        cases = corpus(good_images(nvcc, Path(tmp)))
    for i, case in enumerate(cases):
        (out / f"{i:05d}.bin").write_bytes(case.data)
    print(f"wrote {len(cases)} images to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
