"""Claims the docs make about the repository that drifted once, checked against what they
describe: what the `test` extra brings, how many doc blocks the docs test leaves out, and the
messages quoted in the cubin launcher guide's "Errors you may meet"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers import tools

REPO = Path(__file__).resolve().parents[2]


def _test_extra() -> set[str]:
    """Distribution names of pyproject.toml's `test` extra, without version specifiers."""
    pyproject = (REPO / "pyproject.toml").read_text()
    body = re.search(r"^test = \[\n(.*?)^\]", pyproject, re.M | re.S)
    assert body, "pyproject.toml: no multi-line `test = [...]` extra"
    specs = re.findall(r'^\s*"([^"]+)"', body[1], re.M)
    return {re.split(r"[<>=!~;\[ ]", spec, maxsplit=1)[0] for spec in specs}


def test_install_md_lists_what_the_test_extra_brings():
    text = (REPO / "docs" / "install.md").read_text()
    sentence = re.search(r"The `test` extra brings (.*?)\. It", text, re.S)
    assert sentence, "docs/install.md: the sentence 'The `test` extra brings ...' is gone"
    listed = set(re.findall(r"`([\w.-]+)`", sentence[1])) - {
        "redis-server",
        "docker-registry",
        ".ci/run",
    }
    assert listed == _test_extra()


def test_index_md_counts_the_doc_blocks_left_untested():
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    marker = re.compile(r"^\s*<!--\s*test:\s*skip\b")
    skipped = sum(
        1 for page in pages for line in page.read_text().splitlines() if marker.match(line)
    )
    claim = re.search(
        r"run or compiled by `tests/python/test_docs.py` except the\s+(\d+) marked",
        (REPO / "docs" / "index.md").read_text(),
    )
    assert claim, "docs/index.md no longer says how many blocks are marked skip"
    assert int(claim[1]) == skipped


def test_errors_you_may_meet_quotes_the_missing_image_error(tmp_path, monkeypatch):
    """The entry for a TVM_FFI_EMBED_CUBIN name without an image quotes load_inline's message
    (it once quoted a loader error no build can reach: the symbols are hidden, so the link
    fails first)."""
    if not tools.has_nvcc():
        pytest.skip("needs the CUDA toolkit (the launcher header includes cuda.h)")
    from tvm_ffi import cpp

    monkeypatch.setenv("TVM_FFI_CACHE_DIR", str(tmp_path))
    source = (
        "#include <tvm/ffi/extra/cuda/cubin_launcher.h>\n"
        "TVM_FFI_EMBED_CUBIN(my_kernels);\n"
        "int count() { return &TVM_FFI_EMBED_CUBIN_GET_MODULE(my_kernels) != nullptr; }\n"
    )
    with pytest.raises(cpp.BuildError) as info:
        cpp.build_inline("doc_missing_image", cpp_sources=source, functions=["count"])
    # Either end of the image may be the symbol the linker names first.
    headline = str(info.value).splitlines()[0].replace("my_kernels_end:", "my_kernels:")
    guide = " ".join((REPO / "docs" / "guides" / "cubin_launcher.md").read_text().split())
    assert f"`BuildError: {headline}`" in guide
