"""Compiles and runs the C++ tests of the core headers (include/tvm/ffi).

Every program is built with ``c++ -std=c++17 -Wall -Wextra -Werror -I include`` and linked
against the runtime (``-ltvm_ffi``, built by helpers.next_runtime, with an rpath), as a library
using the headers is; a build error fails the test (never a skip). Tests are skipped only when a
tool they need is absent (nvcc, nm, a sanitizer runtime).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import next_runtime

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
INCLUDE = ROOT / "include"
DOCS = ROOT / "docs"
CXX = os.environ.get("CXX", "c++")
CC = os.environ.get("CC", "cc")
CXXFLAGS = ["-std=c++17", "-Wall", "-Wextra", "-Werror", "-I", str(INCLUDE)]
SANITIZE = ["-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"]


def run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kwargs)


def runtime_link() -> list[str]:
    folder = next_runtime.build().parent
    return [f"-L{folder}", "-ltvm_ffi", f"-Wl,-rpath,{folder}"]


def build(sources: list[Path], output: Path, *flags: str, compiler: str = CXX) -> Path:
    cmd = [compiler, *([] if compiler == CC else CXXFLAGS), *flags]
    cmd += [str(s) for s in sources] + ["-o", str(output)]
    if "-c" not in flags:
        cmd += runtime_link()
    proc = run(cmd)
    if proc.returncode != 0:
        pytest.fail(f"build failed: {' '.join(cmd)}\n{proc.stdout}{proc.stderr}")
    return output


def run_program(*cmd: str | Path) -> str:
    proc = run([str(c) for c in cmd])
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    return output


def assert_all_passed(output: str) -> None:
    summary = output.strip().splitlines()[-1]
    assert re.fullmatch(r"\d+ passed, 0 failed", summary), output
    assert "FAIL" not in output, output


def sanitizers_available(tmp: Path) -> bool:
    probe = tmp / "probe.cc"
    probe.write_text("int main() { return 0; }\n")
    return run([CXX, *SANITIZE, str(probe), "-o", str(tmp / "probe")]).returncode == 0


def find_nvcc() -> str | None:
    for env in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(env):
            candidate = Path(os.environ[env]) / "bin" / "nvcc"
            if candidate.exists():
                return str(candidate)
    on_path = shutil.which("nvcc")
    if on_path:
        return on_path
    default = Path("/usr/local/cuda/bin/nvcc")
    return str(default) if default.exists() else None


# ---- header unit tests ----------------------------------------------------------------------

PROGRAMS = ["test_error", "test_string", "test_tensor", "test_env", "test_containers"]


@pytest.mark.slow_compile
@pytest.mark.parametrize("opt", ["-O0", "-O2"])
@pytest.mark.parametrize("name", PROGRAMS)
def test_header_program(tmp_path: Path, name: str, opt: str) -> None:
    exe = build([HERE / f"{name}.cc"], tmp_path / name, opt, "-pthread")
    assert_all_passed(run_program(exe))


@pytest.mark.slow_compile
def test_header_programs_under_sanitizers(tmp_path: Path) -> None:
    if not sanitizers_available(tmp_path):
        pytest.skip("the compiler has no address/undefined sanitizer runtime")
    for name in PROGRAMS:
        exe = build([HERE / f"{name}.cc"], tmp_path / name, *SANITIZE, "-pthread")
        assert_all_passed(run_program(exe))


def test_c_api_is_plain_c(tmp_path: Path) -> None:
    build(
        [HERE / "c_api_in_c.c"],
        tmp_path / "c_api.o",
        "-std=c11",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-pedantic",
        "-I",
        str(INCLUDE),
        "-c",
        compiler=CC,
    )


def test_dlpack_coexists_with_another_copy(tmp_path: Path) -> None:
    build([HERE / "dlpack_coexist.cc"], tmp_path / "coexist.o", "-c", "-fPIC")


# ---- the export macro through the C ABI -----------------------------------------------------

EXPORT_VARIANTS = {
    "O0": ["-O0"],
    # GCC 12 at -O1 once warned (-Wstringop-overflow) inside any_convert.h's string results.
    "O1": ["-O1"],
    "O2": ["-O2", "-Wpedantic"],
    "O3-hidden": ["-O3", "-fvisibility=hidden"],
    "sanitizers": SANITIZE,
}


@pytest.mark.slow_compile
@pytest.mark.parametrize("variant", list(EXPORT_VARIANTS))
def test_exported_functions(tmp_path: Path, variant: str) -> None:
    flags = EXPORT_VARIANTS[variant]
    if variant == "sanitizers" and not sanitizers_available(tmp_path):
        pytest.skip("the compiler has no address/undefined sanitizer runtime")
    lib = build([HERE / "export_lib.cc"], tmp_path / "libexport.so", *flags, "-fPIC", "-shared")
    driver = build([HERE / "export_driver.cc"], tmp_path / "driver", *flags, "-ldl")
    assert_all_passed(run_program(driver, lib))


def exported_names() -> set[str]:
    source = (HERE / "export_lib.cc").read_text()
    return set(re.findall(r"TVM_FFI_DLL_EXPORT_TYPED_FUNC\((\w+),", source))


@pytest.mark.slow_compile
@pytest.mark.parametrize("flags", [[], ["-fvisibility=hidden"]], ids=["default", "hidden"])
def test_loader_can_list_the_entries(tmp_path: Path, flags: list[str]) -> None:
    """A loader lists functions from .dynsym: defined functions named __tvm_ffi_<name>, whose
    name does not start with "_" (__tvm_ffi__metadata_<name> and the like are reserved)."""
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("nm (binutils) is not installed")
    lib = build(
        [HERE / "export_lib.cc"], tmp_path / "libexport.so", "-O2", "-fPIC", "-shared", *flags
    )
    proc = run([nm, "-D", "--defined-only", str(lib)])
    assert proc.returncode == 0, proc.stderr
    entries = {}
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2].startswith("__tvm_ffi_") and parts[2][10:11] != "_":
            entries[parts[2][len("__tvm_ffi_") :]] = parts[1]
    assert set(entries) == exported_names()
    assert set(entries.values()) == {"T"}  # global, defined, in .text


def test_scalar_calls_do_not_allocate(tmp_path: Path) -> None:
    lib = build([HERE / "export_lib.cc"], tmp_path / "libexport.so", "-O2", "-fPIC", "-shared")
    driver = build([HERE / "noalloc_driver.cc"], tmp_path / "noalloc", "-O2", "-ldl")
    output = run_program(driver, lib)
    assert "allocations in scalar calls: 0\n" in output, output
    match = re.search(r"noop3 call: ([\d.]+) ns", output)
    assert match, output
    # Generous bound (shared CI machines are noisy); typically a few ns.
    assert float(match.group(1)) < 200, output


def test_headers_compile_with_nvcc(tmp_path: Path) -> None:
    nvcc = find_nvcc()
    if nvcc is None:
        pytest.skip("nvcc not found (CUDA_HOME, PATH, /usr/local/cuda)")
    obj = tmp_path / "nvcc_usage.o"
    cmd = [
        nvcc,
        "-std=c++17",
        "-c",
        "-I",
        str(INCLUDE),
        "-Xcompiler=-Wall,-Wextra,-Werror,-fPIC",
        "-Werror",
        "all-warnings",
        str(HERE / "nvcc_usage.cu"),
        "-o",
        str(obj),
    ]
    proc = run(cmd)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stdout}{proc.stderr}"


# ---- documentation --------------------------------------------------------------------------

CPP_GUIDE = DOCS / "guides" / "cpp_core.md"
MARKER = re.compile(r"<!-- test: (compile|run|skip) -->")


def cpp_blocks(path: Path) -> list[tuple[int, str, str]]:
    """(line, marker, code) for every ```cpp block; marker is the comment line before it."""
    lines = path.read_text().splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```cpp":
            j = i - 1
            while j >= 0 and not lines[j].strip():
                j -= 1
            found = MARKER.fullmatch(lines[j].strip()) if j >= 0 else None
            end = lines.index("```", i + 1)
            blocks.append((i + 1, found.group(1) if found else "", "\n".join(lines[i + 1 : end])))
            i = end
        i += 1
    return blocks


def test_every_cpp_example_is_marked() -> None:
    blocks = cpp_blocks(CPP_GUIDE)
    assert blocks, "the guide has C++ examples"
    unmarked = [line for line, marker, _ in blocks if not marker]
    assert not unmarked, f"```cpp blocks without a test marker at lines {unmarked}"


@pytest.mark.slow_compile
@pytest.mark.parametrize("index", range(len(cpp_blocks(CPP_GUIDE))) if CPP_GUIDE.exists() else [])
def test_cpp_guide_example(tmp_path: Path, index: int) -> None:
    line, marker, code = cpp_blocks(CPP_GUIDE)[index]
    if marker == "skip":
        pytest.skip(f"fragment at line {line}")
    source = tmp_path / f"example_{line}.cc"
    source.write_text(code + "\n")
    if marker == "compile":
        build([source], tmp_path / "example.o", "-c", "-fPIC")
    else:
        exe = build([source], tmp_path / "example", "-pthread")
        run_program(exe)


@pytest.mark.parametrize("doc", ["guides/cpp_core.md", "abi.md", "dev/abi.md"])
def test_names_in_docs_exist(doc: str) -> None:
    """Every TVM_FFI_* macro and TVMFFI* C name a page mentions is defined by a header (or, for
    the runtime's private entry points, which the pages name by their prefix, by src/lib)."""
    text = (DOCS / doc).read_text()
    headers = "\n".join(p.read_text() for p in INCLUDE.rglob("*.h"))
    runtime = "\n".join(p.read_text() for p in (ROOT / "src" / "lib").glob("*.h"))
    missing = []
    for name in sorted(set(re.findall(r"\bTVM_FFI_[A-Z0-9_]+\b", text))):
        if not re.search(rf"#define {name}\b", headers):
            missing.append(name)
    for name in sorted(set(re.findall(r"\b(?:TVMFFI|kTVMFFI)\w+\b", text))):
        if not re.search(rf"\b{name}\b", headers) and not re.search(rf"\b{name}", runtime):
            missing.append(name)
    assert not missing, f"{doc} names what no header defines: {missing}"
