"""docs/guides/cmake.md stays true: each complete CMake block in it configures and builds,
and every function, keyword, target and variable it names exists."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "guides" / "cmake.md"
# Where a block's source files come from: the examples it describes, or a scaffold with
# the one file the smallest consumer needs.
SOURCE_DIRS = [
    REPO / "examples" / "cubin_launcher" / "embedded_cubin",
    REPO / "examples" / "cubin_launcher" / "cpp_only",
    REPO / "examples" / "cubin_launcher" / "dynamic_cubin",
    Path(__file__).resolve().parent / "projects" / "docs_scaffold",
    Path(__file__).resolve().parent / "projects" / "apache_style",
]

_FENCE = re.compile(r"^```(\w*)\s*$")
_MARKER = re.compile(r"^<!--\s*test:\s*([\w-]+)\s*-->$")


def cmake_blocks() -> list[tuple[int, str | None, str]]:
    """(line, marker, text) of every ```cmake block in the guide."""
    lines = DOC.read_text().splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        if fence[1] == "cmake":
            prev = i - 1
            while prev >= 0 and not lines[prev].strip():
                prev -= 1
            marker = _MARKER.match(lines[prev].strip()) if prev >= 0 else None
            blocks.append((i + 1, marker[1] if marker else None, "\n".join(lines[i + 1 : end])))
        i = end + 1
    return blocks


def test_every_cmake_block_is_marked():
    unmarked = [line for line, marker, _ in cmake_blocks() if marker not in ("cmake", "skip")]
    assert not unmarked, f"cmake blocks without <!-- test: cmake/skip --> at lines {unmarked}"
    assert [b for b in cmake_blocks() if b[1] == "cmake"], "no block is tested"


@pytest.mark.slow_compile
@pytest.mark.parametrize(
    "block",
    [
        pytest.param(text, id=f"line{line}")
        for line, marker, text in cmake_blocks()
        if marker == "cmake"
    ],
)
def test_cmake_block_builds(block, cuda_cmake, package_args, tmp_path):
    wanted = set(re.findall(r"[\w-]+\.(?:cu|cc|cpp)\b", block))
    source_dir = next(
        (d for d in SOURCE_DIRS if all((d / name).is_file() for name in wanted)), None
    )
    assert source_dir is not None, f"no source directory has all of {sorted(wanted)}"
    source = tmp_path / "src"
    shutil.copytree(source_dir, source, ignore=shutil.ignore_patterns("build"))
    (source / "CMakeLists.txt").write_text(block + "\n")
    build = tmp_path / "build"
    cuda_cmake.configure(source, build, *package_args("source"))
    cuda_cmake.build(build)


def _functions() -> dict[str, list[str]]:
    """Public functions of cmake/*.cmake and the keywords each one parses."""
    out = {}
    for file in (REPO / "cmake").glob("*.cmake"):
        text = file.read_text()
        for match in re.finditer(
            r"^function\(((?:add_)?tvm_ffi_\w+)[^)]*\)(.*?)^endfunction", text, re.M | re.S
        ):
            parse = re.search(
                r"cmake_parse_arguments\(PARSE_ARGV \d+ \w+((?: \"[^\"]*\")+)\)", match[2]
            )
            keywords = re.findall(r"[A-Z]+", parse[1]) if parse else []
            out[match[1]] = keywords
    return out


def test_every_function_is_documented_with_all_its_keywords():
    signatures = [text for _, marker, text in cmake_blocks() if marker == "skip"]
    functions = _functions()
    assert set(functions) == {
        "tvm_ffi_generate_cubin",
        "tvm_ffi_embed_cubin",
        "tvm_ffi_target_embed_cubin",
        "tvm_ffi_embed_bin_into",
        "add_tvm_ffi_cubin",
        "add_tvm_ffi_fatbin",
    }
    assert functions["tvm_ffi_embed_cubin"] == ["OUTPUT", "SOURCE", "CUBIN", "NAME", "DEPENDS"]
    for name, keywords in functions.items():
        # A signature block may show several related functions, one per line.
        signature = next((s for s in signatures if re.search(rf"^{name}\(", s, re.M)), None)
        assert signature is not None, f"{name} has no signature block in {DOC.name}"
        missing = [k for k in keywords if not re.search(rf"\b{k}\b", signature)]
        assert not missing, f"{name}: keywords missing from its signature: {missing}"


def test_documented_names_exist(cmake, tmp_path):
    """Each tvm_ffi_* / tvm_ffi:: name in the guide is, after find_package, a command,
    a target or a variable; each TVM_FFI_* name is read by cmake/ or defined by a header."""
    text = DOC.read_text()
    # Section names (.rodata.tvm_ffi_cubin.<name>) and file names are not CMake names.
    names = sorted(set(re.findall(r"(?<![\w.])(?:add_)?tvm_ffi(?:_\w+|::\w+)(?![\w.])", text)))
    checks = "\n".join(
        f"if(NOT COMMAND {n} AND NOT TARGET {n} AND NOT DEFINED {n})\n"
        f'  message(SEND_ERROR "undefined: {n}")\nendif()'
        for n in names
    )
    source = tmp_path / "src"
    source.mkdir()
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\nproject(names LANGUAGES NONE)\n"
        f"find_package(tvm_ffi CONFIG REQUIRED)\n{checks}\n"
    )
    result = cmake.configure(source, tmp_path / "build", f"-Dtvm_ffi_ROOT={REPO}", check=False)
    assert result.returncode == 0, result.describe()
    assert len(names) >= 8, names

    cmake_files = [*(REPO / "cmake").glob("*.cmake"), REPO / "CMakeLists.txt"]
    cmake_sources = "\n".join(p.read_text() for p in cmake_files)
    headers = "\n".join(p.read_text() for p in (REPO / "include").rglob("*.h"))
    for name in sorted(set(re.findall(r"\bTVM_FFI_[A-Z0-9_]*[A-Z0-9]\b", text))):
        assert re.search(rf"\b{name}\b", cmake_sources) or re.search(
            rf"#\s*define\s+{name}\b", headers
        ), f"{name} is named in {DOC.name} but neither the CMake files nor include/ has it"
