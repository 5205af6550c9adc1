"""Every code example in README.md and docs/ is run or compiled, and every name exists.

Each fenced ``python``, ``cpp`` (``c++``, ``cuda``, ...) or ``cmake`` block carries a marker
on the nearest non-blank line before its fence:

* ``<!-- test: run -->``           python or shell: run in a subprocess in a temp dir
* ``<!-- test: gpu -->``           python: the same, in a ``gpu``-marked test
* ``<!-- test: compile -->``       C++: ``c++ -std=c++17 -fsyntax-only`` with ``-I include``
                                   and ``-I <cuda>/include``
* ``<!-- test: compile-cuda -->``  CUDA C++: ``nvcc -std=c++17 -c`` with the same include paths
* ``<!-- test: cmake -->``         left to the CMake consumer tests (tests/cmake)
* ``<!-- test: install -->``       shell: run by tests/python/test_install_with_clients.py in a
                                   fresh virtual environment, offline, against stand-in wheels
* ``<!-- test: skip -->``          not tested (say why in the prose)

A marker may add ``requires=NAME`` (repeatable) for an external dependency: the test skips
unless NAME is an importable Python module or a program on PATH (or in the CUDA toolkit),
e.g. ``<!-- test: run requires=cuda.bindings -->``.

A python/C++/CMake block without a marker fails ``test_blocks_have_markers``, so a new
example cannot slip in untested. Each block is tested on its own: make it complete.

Names: every ``tvm_ffi.*`` Python name, ``TVM_FFI_*`` macro or variable, ``tvm_ffi_*()``
CMake function, ``tvm/ffi/*.h`` header and ``python -m tvm_ffi...`` flag mentioned anywhere
in those files (prose included) must exist.
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
INCLUDE = REPO / "include"

LANGS = {
    "python": "python", "py": "python",
    "cpp": "cpp", "c++": "cpp", "cxx": "cpp", "cc": "cpp", "c": "cpp", "cuda": "cpp", "cu": "cpp",
    "cmake": "cmake",
    "bash": "shell", "sh": "shell", "shell": "shell", "console": "shell",
}  # fmt: skip
# Markers each language may carry; None: a block of that language may go unmarked.
ALLOWED = {
    "python": {"run", "gpu", "skip"},
    # cpp "run" blocks are built and run by tests/cpp/test_core_headers.py
    "cpp": {"compile", "compile-cuda", "run", "skip"},
    "cmake": {"cmake", "skip"},
    "shell": {None, "run", "skip", "cmake", "install"},
    None: {None, "skip"},
}
MUST_BE_MARKED = {"python", "cpp", "cmake"}

_MARKER = re.compile(r"^\s*<!--\s*test:\s*([\w-]+)((?:\s+requires=[\w.+-]+)*)\s*-->\s*$")
_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`\s]*)")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a Markdown file."""

    path: str  # relative to the repo root
    line: int  # 1-based line of the opening fence
    info: str  # the fence's info string, e.g. "cpp"
    marker: str | None
    text: str
    requires: tuple[str, ...] = ()

    @property
    def lang(self) -> str | None:
        return LANGS.get(self.info.lower())

    @property
    def id(self) -> str:
        return f"{self.path}:{self.line}"


def parse_blocks(markdown: str, path: str = "<string>") -> list[Block]:
    """Fenced blocks of ``markdown`` with the marker that precedes each (if any)."""
    lines = markdown.splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        indent, fence = len(match["indent"]), match["fence"]
        start = i
        body = []
        i += 1
        while i < len(lines):
            stripped = lines[i].strip()
            if stripped.startswith(fence[0] * len(fence)) and not stripped.lstrip(fence[0]):
                break
            line = lines[i]
            # Strip the fence's own indent (a block inside a list item), nothing more.
            body.append(line[indent:] if not line[:indent].strip() else line.lstrip())
            i += 1
        i += 1  # past the closing fence (or the end of an unterminated block)
        prev = start - 1
        while prev >= 0 and not lines[prev].strip():
            prev -= 1
        marker_match = _MARKER.match(lines[prev]) if prev >= 0 else None
        marker = marker_match[1] if marker_match else None
        requires = (
            tuple(re.findall(r"requires=([\w.+-]+)", marker_match[2])) if marker_match else ()
        )
        text = textwrap.dedent("\n".join(body)) + "\n"
        blocks.append(Block(path, start + 1, match["info"], marker, text, requires))
    return blocks


def doc_files() -> list[Path]:
    files = [REPO / "README.md"] if (REPO / "README.md").exists() else []
    return files + sorted((REPO / "docs").rglob("*.md"))


@cache
def all_blocks() -> tuple[Block, ...]:
    out = []
    for file in doc_files():
        out += parse_blocks(file.read_text(encoding="utf-8"), str(file.relative_to(REPO)))
    return tuple(out)


def _blocks(marker: str, lang: str) -> list:
    return [pytest.param(b, id=b.id) for b in all_blocks() if b.marker == marker and b.lang == lang]


# ---- markers --------------------------------------------------------------------------------


def test_blocks_have_markers():
    problems = []
    for block in all_blocks():
        if block.marker is None and block.lang in MUST_BE_MARKED:
            problems.append(
                f"{block.id}: ```{block.info} block without a <!-- test: ... --> marker"
            )
        elif block.marker not in ALLOWED[block.lang]:
            problems.append(f"{block.id}: marker {block.marker!r} is not valid for ```{block.info}")
    assert not problems, "\n".join(problems)


# ---- running --------------------------------------------------------------------------------


def _env(cache_dir: Path | None = None) -> dict[str, str]:
    import tvm_ffi

    env = dict(os.environ)
    # The subprocess imports the same tvm_ffi as this test (installed or from a checkout).
    package_root = str(Path(tvm_ffi.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    if cache_dir is not None:
        env["TVM_FFI_CACHE_DIR"] = str(cache_dir)
    home = cuda_home()
    if home is not None:  # blocks may call nvcc, as a user with CUDA on PATH would
        env["PATH"] = os.pathsep.join([env.get("PATH", ""), str(home / "bin")])
    return env


@pytest.fixture(scope="module")
def docs_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("docs-cache")


def _check_requires(block: Block) -> None:
    import importlib.util

    for name in block.requires:
        try:
            if importlib.util.find_spec(name) is not None:
                continue
        except (ImportError, ValueError):
            pass
        home = cuda_home()
        if shutil.which(name) or (home is not None and (home / "bin" / name).is_file()):
            continue
        pytest.skip(f"{block.id} requires {name}, which is not installed")


def _run(block: Block, cwd: Path, cache_dir: Path) -> None:
    _check_requires(block)
    if block.lang == "python":
        script = cwd / "block.py"
        cmd = [sys.executable, str(script)]
    else:
        script = cwd / "block.sh"
        cmd = ["bash", "-euo", "pipefail", str(script)]
    script.write_text(block.text)
    proc = subprocess.run(
        cmd, cwd=cwd, env=_env(cache_dir), capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, (
        f"{block.id} exited with {proc.returncode}\n--- block ---\n{block.text}"
        f"--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}"
    )


@pytest.mark.parametrize("block", _blocks("run", "python") + _blocks("run", "shell"))
def test_run_block(block, tmp_path, docs_cache):
    _run(block, tmp_path, docs_cache)


@pytest.mark.gpu
@pytest.mark.parametrize("block", _blocks("gpu", "python"))
def test_gpu_block(block, tmp_path, docs_cache):
    _run(block, tmp_path, docs_cache)


# ---- compiling ------------------------------------------------------------------------------


@cache
def cuda_home() -> Path | None:
    candidates = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")]
    nvcc = shutil.which("nvcc")
    if nvcc:
        candidates.append(str(Path(nvcc).resolve().parents[1]))
    candidates.append("/usr/local/cuda")
    for root in filter(None, candidates):
        if (Path(root) / "include" / "cuda.h").is_file():
            return Path(root)
    return None


def _needs_cuda(text: str) -> bool:
    return bool(re.search(r"#\s*include\s*[<\"](cuda|tvm/ffi/extra/cuda/)", text))


def _compile(block: Block, tmp_path: Path, cuda: bool) -> None:
    _check_requires(block)
    home = cuda_home()
    if home is None and (cuda or _needs_cuda(block.text)):
        pytest.skip("CUDA toolkit headers not found (set CUDA_HOME)")
    includes = ["-I", str(INCLUDE)] + (["-I", str(home / "include")] if home else [])
    if cuda:
        nvcc = home / "bin" / "nvcc"
        if not nvcc.is_file():
            pytest.skip(f"nvcc not found under {home}")
        src = tmp_path / "block.cu"
        cmd = [str(nvcc), "-std=c++17", *includes, "-c", str(src), "-o", str(tmp_path / "block.o")]
    else:
        cxx = shutil.which(os.environ.get("CXX", "c++"))
        if cxx is None:
            pytest.skip("no C++ compiler (c++) on PATH")
        src = tmp_path / "block.cc"
        cmd = [cxx, "-std=c++17", "-fsyntax-only", "-Wall", *includes, str(src)]
    src.write_text(block.text)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (
        f"{block.id} does not compile:\n{' '.join(cmd)}\n--- block ---\n{block.text}"
        f"--- output ---\n{proc.stdout}{proc.stderr}"
    )


@pytest.mark.parametrize("block", _blocks("compile", "cpp"))
def test_compile_block(block, tmp_path):
    _compile(block, tmp_path, cuda=False)


@pytest.mark.parametrize("block", _blocks("compile-cuda", "cpp"))
def test_compile_cuda_block(block, tmp_path):
    _compile(block, tmp_path, cuda=True)


# ---- names ----------------------------------------------------------------------------------

_PY_NAME = re.compile(r"(?<![\w./-])tvm_ffi(?:\.[A-Za-z_]\w*)+")
_FROM_IMPORT = re.compile(r"^\s*from\s+(tvm_ffi(?:\.\w+)*)\s+import\s+([\w ,]+)", re.M)
_MACRO = re.compile(r"(?<![\w])TVM_FFI_[A-Z0-9_]*[A-Z0-9](?![\w*])")
_CMAKE_FN = re.compile(r"(?<![\w$])(tvm_ffi_[a-z0-9_]+)\s*\(")
_HEADER = re.compile(r"(?<![\w/])(tvm/ffi/[\w/]+\.h)\b")
_PY_M = re.compile(r"python3?\s+-m\s+(tvm_ffi[\w.]*)([^\n`]*)")


def _docs_text() -> str:
    return "\n".join(f.read_text(encoding="utf-8") for f in doc_files())


def _resolve(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError as err:
            if err.name and ".".join(parts[:cut]).startswith(err.name):
                continue
            raise
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def python_names(text: str) -> set[str]:
    names = set(_PY_NAME.findall(text))
    for module, imported in _FROM_IMPORT.findall(text):
        for item in imported.split(","):
            name = item.split(" as ")[0].strip()
            if name:
                names.add(f"{module}.{name}")
    return names


def test_python_names_exist():
    missing = sorted(name for name in python_names(_docs_text()) if not _resolve(name))
    assert not missing, f"named in README/docs but not found: {missing}"


def _read_all(paths: list[Path], suffixes: set[str]) -> str:
    return "\n".join(
        p.read_text(encoding="utf-8", errors="replace")
        for p in paths
        if p.is_file() and (p.suffix in suffixes or p.name == "CMakeLists.txt")
    )


def _package_sources() -> tuple[str, str]:
    """Where a TVM_FFI_* name may be defined: (headers + Python package + setup.py, CMake
    files)."""
    code = [
        p
        for root in (INCLUDE, REPO / "python" / "tvm_ffi")
        if root.exists()
        for p in root.rglob("*")
    ]
    code.append(REPO / "setup.py")  # the build's own variables (TVM_FFI_BUILD_JOBS)
    cmake = list((REPO / "cmake").rglob("*")) if (REPO / "cmake").exists() else []
    cmake.append(REPO / "CMakeLists.txt")
    return _read_all(code, {".h", ".hpp", ".py"}), _read_all(cmake, {".cmake", ".in"})


def macro_defined(name: str, code: str, cmake: str = "") -> bool:
    """A #define, a macro the headers test for (a user switch), an environment variable read
    by the package, or a variable of the CMake package."""
    return bool(
        re.search(rf"#\s*(define|ifdef|ifndef)\s+{name}\b|defined\(\s*{name}\s*\)", code)
        or re.search(rf"[\"']{name}[\"']", code)
        or re.search(rf"\b{name}\b", cmake)
    )


def test_macros_and_variables_exist():
    code, cmake = _package_sources()
    names = set(_MACRO.findall(_docs_text()))
    missing = sorted(name for name in names if not macro_defined(name, code, cmake))
    assert not missing, f"TVM_FFI_* names in README/docs that nothing defines: {missing}"


def test_cmake_functions_exist():
    text = _docs_text()
    cmake_files = list((REPO / "cmake").rglob("*.cmake")) if (REPO / "cmake").exists() else []
    cmake = "\n".join(p.read_text(encoding="utf-8") for p in cmake_files)
    defined = set(re.findall(r"^\s*(?:function|macro)\(\s*(\w+)", cmake, re.M | re.I))
    missing = sorted(set(_CMAKE_FN.findall(text)) - defined)
    assert not missing, f"CMake functions in README/docs that cmake/ does not define: {missing}"


def test_headers_exist():
    missing = sorted(h for h in set(_HEADER.findall(_docs_text())) if not (INCLUDE / h).is_file())
    assert not missing, f"headers named in README/docs that include/ lacks: {missing}"


_LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")


def test_relative_links_resolve():
    broken = []
    for file in doc_files():
        for target in _LINK.findall(file.read_text(encoding="utf-8")):
            if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
                continue
            if not (file.parent / target).exists():
                broken.append(f"{file.relative_to(REPO)}: {target}")
    assert not broken, f"links to missing files: {broken}"


def cli_flags(text: str) -> dict[str, set[str]]:
    """{module: flags} for every ``python -m tvm_ffi...`` command line in ``text``."""
    joined = re.sub(r"\\\n\s*", " ", text)  # shell line continuations
    out: dict[str, set[str]] = {}
    for module, rest in _PY_M.findall(joined):
        out.setdefault(module.rstrip("."), set()).update(
            re.findall(r"(?<!\S)(--[a-z][\w-]*)", rest)
        )
    return out


def test_cli_flags_exist():
    problems = []
    for module, flags in sorted(cli_flags(_docs_text()).items()):
        proc = subprocess.run(
            [sys.executable, "-m", module, "--help"],
            env=_env(), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        if proc.returncode != 0:
            problems.append(f"python -m {module} --help failed: {proc.stderr.strip()[-500:]}")
            continue
        problems += [
            f"python -m {module}: no flag {flag}"
            for flag in sorted(flags)
            if flag not in proc.stdout
        ]
    assert not problems, "\n".join(problems)


# ---- the harness itself ---------------------------------------------------------------------

_SAMPLE = """\
# Title

<!-- test: run -->
```python
print("hi")
```

Text.

- a list item:

  <!-- test: compile -->

  ```cpp
  int main() { return 0; }
  ```

```python
for x in range(2):
    x += 1
```

````markdown
```python
not a block of its own
```
````
"""


def test_parse_blocks_reads_markers_and_indented_fences():
    blocks = parse_blocks(
        _SAMPLE.replace("test: run", "test: run requires=nvcc requires=a.b"), "sample.md"
    )
    assert blocks[0].requires == ("nvcc", "a.b")
    assert blocks[1].requires == ()
    assert [(b.line, b.info, b.marker) for b in blocks] == [
        (4, "python", "run"),
        (14, "cpp", "compile"),
        (18, "python", None),
        (23, "markdown", None),
    ]
    assert blocks[0].text == 'print("hi")\n'
    assert blocks[1].text == "int main() { return 0; }\n"
    assert blocks[2].text == "for x in range(2):\n    x += 1\n"
    assert "not a block of its own" in blocks[3].text


def test_name_extraction():
    text = (
        "Use `tvm_ffi.cpp.load_inline(...)` (see python/tvm_ffi/cpp/nvrtc.py).\n"
        "from tvm_ffi.cpp.nvrtc import nvrtc_compile, NVRTCError as E\n"
        "TVM_FFI_EMBED_CUBIN(x); TVM_FFI_* macros; guard TVM_FFI_C_API_H_\n"
        "python -m tvm_ffi.utils.embed_cubin --output-obj a.o \\\n    --cubin k.cubin\n"
    )
    assert python_names(text) == {
        "tvm_ffi.cpp.load_inline",
        "tvm_ffi.cpp.nvrtc",
        "tvm_ffi.utils.embed_cubin",
        "tvm_ffi.cpp.nvrtc.nvrtc_compile",
        "tvm_ffi.cpp.nvrtc.NVRTCError",
    }
    assert set(_MACRO.findall(text)) == {"TVM_FFI_EMBED_CUBIN"}
    assert cli_flags(text) == {"tvm_ffi.utils.embed_cubin": {"--output-obj", "--cubin"}}
