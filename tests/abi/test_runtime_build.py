"""tests/helpers/next_runtime.py: the runtime builds from src/lib with warnings as
errors, each source file to its own cached object (an edit recompiles one file), and a failed
compile raises with the command and the compiler's message and leaves nothing in the cache."""

from __future__ import annotations

import os

import pytest

from helpers import next_runtime


def test_build_is_cached_per_source():
    lib = next_runtime.build()
    assert lib.name == "libtvm_ffi.so" and lib.is_file()
    objects = next_runtime.cache_dir() / "objects"
    headers = next_runtime._headers_digest()
    cxx = os.environ.get("CXX", "c++")
    for source in sorted(next_runtime.SOURCES.glob("*.cc")):
        # Already built: the object is found by its key, nothing is compiled.
        obj = next_runtime._compile(cxx, source, headers, objects)
        assert obj.is_file() and obj.name.startswith(source.stem + "-")


def test_failed_compile_leaves_nothing(tmp_path):
    bad = tmp_path / "broken.cc"
    bad.write_text("int broken( {\n")
    objects = tmp_path / "objects"
    objects.mkdir()
    with pytest.raises(RuntimeError, match=r"^building the runtime failed:\n.*broken\.cc"):
        next_runtime._compile(os.environ.get("CXX", "c++"), bad, b"", objects)
    assert list(objects.iterdir()) == []
