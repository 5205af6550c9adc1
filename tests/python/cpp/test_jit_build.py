"""tvm_ffi.cpp: building, loading and calling CPU modules; errors users meet."""

from __future__ import annotations

import os
import subprocess
import textwrap

import pytest

from tvm_ffi import cpp

# No includes: compiles in a few tens of milliseconds, for tests about the build itself.
PLAIN = 'extern "C" int plain_answer() { return 42; }\n'

ADD = textwrap.dedent(
    """
    #include <cstdint>
    #include <tvm/ffi/function.h>
    int64_t add(int64_t a, int64_t b) { return a + b; }
    double scale(double x, double k) { return x * k; }
    """
)


def test_load_inline_functions_list_exports_and_calls():
    mod = cpp.load_inline("jit_add", cpp_sources=ADD, functions=["add", "scale"])
    assert mod.add(40, 2) == 42
    assert mod["add"](-5, 3) == -2
    assert mod.scale(1.5, 4.0) == 6.0


def test_load_inline_functions_dict_and_source_list():
    mod = cpp.load_inline(
        "jit_add_dict",
        cpp_sources=[ADD, "int64_t twice(int64_t v) { return 2 * v; }"],
        functions={"add": "Add two integers.", "twice": ""},
    )
    assert mod.add(1, 2) == 3
    assert mod.twice(21) == 42


def test_explicit_macro_and_tensor_argument():
    import numpy as np

    source = textwrap.dedent(
        """
        #include <tvm/ffi/container/tensor.h>
        #include <tvm/ffi/function.h>
        void add_one(tvm::ffi::TensorView x, tvm::ffi::TensorView y) {
          const float* in = static_cast<const float*>(x.data_ptr());
          float* out = static_cast<float*>(y.data_ptr());
          for (int64_t i = 0; i < x.numel(); ++i) out[i] = in[i] + 1.0f;
        }
        TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_one, add_one);
        """
    )
    mod = cpp.load_inline("jit_tensor", cpp_sources=source)
    x = np.random.default_rng(0).standard_normal(257).astype(np.float32)
    y = np.full_like(x, np.nan)  # poison: every element must be written
    mod.add_one(x, y)
    np.testing.assert_array_equal(y, x + 1.0)


def test_build_inline_returns_library_path_and_reuses_it(cache_dir):
    path = cpp.build_inline("jit_plain", cpp_sources=PLAIN)
    assert os.path.isfile(path)
    assert path.startswith(str(cache_dir))
    assert os.path.basename(path) == "jit_plain.so"
    assert cpp.build_inline("jit_plain", cpp_sources=PLAIN) == path


def test_build_and_load_from_files(tmp_path):
    src_dir = tmp_path / "src"
    src_dir.mkdir()
    (src_dir / "value.h").write_text("#define JIT_VALUE 7\n")
    (src_dir / "mod.cc").write_text(
        '#include "value.h"\n#include <tvm/ffi/function.h>\n'
        "int value() { return JIT_VALUE; }\nTVM_FFI_DLL_EXPORT_TYPED_FUNC(value, value);\n"
    )
    first = cpp.build("jit_files", sources=[str(src_dir / "mod.cc")])
    assert os.path.isfile(first)
    assert cpp.load("jit_files", sources=src_dir / "mod.cc").value() == 7
    # The file's content is part of the key: an edit gives a new library.
    (src_dir / "mod.cc").write_text(
        "#include <tvm/ffi/function.h>\nint value() { return 8; }\n"
        "TVM_FFI_DLL_EXPORT_TYPED_FUNC(value, value);\n"
    )
    second = cpp.build("jit_files", sources=[src_dir / "mod.cc"])
    assert second != first
    assert cpp.load("jit_files", sources=[src_dir / "mod.cc"]).value() == 8


def test_compiler_error_first_line_and_attributes():
    source = "int broken() {\n  return undeclared_thing;\n}\n"
    with pytest.raises(cpp.BuildError) as info:
        cpp.build_inline("jit_broken", cpp_sources=source)
    err = info.value
    assert str(err).splitlines()[0] == (
        "main.cpp:2:10: error: 'undeclared_thing' was not declared in this scope"
    )
    assert "-c main.cpp" in err.command
    assert "undeclared_thing" in err.log
    assert (err.build_dir / "main.cpp").read_text() == source
    assert isinstance(err, RuntimeError)


def test_link_error_is_a_build_error():
    with pytest.raises(cpp.BuildError, match=r"-lno_such_library_xyz"):
        cpp.build_inline("jit_badlink", cpp_sources=PLAIN, extra_ldflags=["-lno_such_library_xyz"])


def test_failed_build_then_fixed_source_builds():
    with pytest.raises(cpp.BuildError):
        cpp.build_inline("jit_fixme", cpp_sources="int f() { return nope; }")
    assert os.path.isfile(cpp.build_inline("jit_fixme", cpp_sources="int f() { return 1; }"))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": ""}, r"^load_inline: module name must not be empty \(got ''\)$"),
        ({"name": "  "}, r"^load_inline: module name must not be empty \(got '  '\)$"),
        (
            {"name": "ok", "embed_cubin": {"k": b"\x7fELF", "k_end": b"\x7fELF"}},
            r"^load_inline: embed names 'k' and 'k_end' cannot be used together: "
            r"__tvm_ffi__cubin_k_end marks the end of 'k'; rename one of them$",
        ),
        ({"name": "ok", "backend": "hip"}, r"^load_inline: backend must be 'cuda' or None \(got"),
        (
            {"name": "ok", "embed_cubin": {"bad name": b"\x7fELF"}},
            r"^load_inline: embed name must be a C identifier \(got 'bad name'\)$",
        ),
        (
            {"name": "ok", "functions": ["add-one"]},
            r"^load_inline: function name must be a C identifier \(got 'add-one'\)$",
        ),
    ],
)
def test_bad_names_refused_before_any_tool_runs(monkeypatch, kwargs, message):
    def no_process(*args, **kw):
        raise AssertionError("a process was started")

    monkeypatch.setattr(subprocess, "Popen", no_process)
    name = kwargs.pop("name")
    with pytest.raises(ValueError, match=message):
        cpp.load_inline(name, cpp_sources=PLAIN, **kwargs)


def test_build_inline_names_itself_in_errors():
    with pytest.raises(ValueError, match=r"^build_inline: function name must be a C identifier"):
        cpp.build_inline("a.b", cpp_sources=PLAIN, functions=["a.b"])


def test_argument_type_errors():
    with pytest.raises(
        TypeError, match=r"^build_inline: extra_cflags must be a str or a list of str"
    ):
        cpp.build_inline("jit_t", cpp_sources=PLAIN, extra_cflags=[1])
    with pytest.raises(ValueError, match=r"^build_inline: give cpp_sources or cuda_sources"):
        cpp.build_inline("jit_t")
    with pytest.raises(TypeError, match=r"^build_inline: embed_cubin\['k'\] must be bytes"):
        cpp.build_inline("jit_t", cpp_sources=PLAIN, embed_cubin={"k": "text"})
    with pytest.raises(ValueError, match=r"^build_inline: embed_cubin\['k'\] is empty$"):
        cpp.build_inline("jit_t", cpp_sources=PLAIN, embed_cubin={"k": b""})
    with pytest.raises(FileNotFoundError, match=r"^build: source file not found: nope\.cc$"):
        cpp.build("jit_t", sources=["nope.cc"])


def test_lone_surrogate_in_a_source_names_where_it_is():
    with pytest.raises(ValueError) as info:
        cpp.build_inline("jit_t", cpp_sources=["int a;\n", "int b;\n// caf\udce9\n"])
    assert str(info.value) == (
        "build_inline: cpp_sources[1] line 2 column 7 holds '\\udce9', which has no UTF-8 "
        "form (a lone surrogate); source text must be valid Unicode"
    )
    assert isinstance(info.value.__cause__, UnicodeEncodeError)
    with pytest.raises(ValueError, match=r"^load_inline: cuda_sources line 1 column 1 holds"):
        cpp.load_inline("jit_t", cuda_sources="\ud800")


def test_verbose_streams_the_build(capfd, monkeypatch):
    cpp.build_inline("jit_verbose", cpp_sources=PLAIN, verbose=True)
    err = capfd.readouterr().err
    assert "-c main.cpp" in err  # full command lines, as ninja -v prints them
    monkeypatch.setenv("TVM_FFI_BUILD_VERBOSE", "1")
    cpp.build_inline("jit_verbose2", cpp_sources=PLAIN)
    assert "-shared" in capfd.readouterr().err


def test_quiet_build_prints_nothing(capfd):
    cpp.build_inline("jit_quiet", cpp_sources=PLAIN)
    captured = capfd.readouterr()
    assert captured.out == "" and captured.err == ""


def test_build_directory_is_incremental(tmp_path):
    build_dir = tmp_path / "build"
    path = cpp.build_inline("jit_dir", cpp_sources=PLAIN, build_directory=build_dir)
    assert path == str(build_dir / "jit_dir.so")
    obj = build_dir / "obj" / "main.o"
    first_mtime = obj.stat().st_mtime_ns
    cpp.build_inline("jit_dir", cpp_sources=PLAIN, build_directory=str(build_dir))
    assert obj.stat().st_mtime_ns == first_mtime  # nothing changed, nothing recompiled
    cpp.build_inline("jit_dir", cpp_sources=PLAIN.replace("42", "43"), build_directory=build_dir)
    assert obj.stat().st_mtime_ns != first_mtime
    assert "43" in (build_dir / "main.cpp").read_text()


def test_build_directory_reload_in_same_process(tmp_path):
    build_dir = tmp_path / "build"
    source = "#include <tvm/ffi/function.h>\nint version() {{ return {}; }}\n"
    first = cpp.load_inline(
        "jit_reload", cpp_sources=source.format(1), functions=["version"], build_directory=build_dir
    )
    assert first.version() == 1
    # Same path, new content: the new library must be the one loaded, not dlopen's old copy.
    second = cpp.load_inline(
        "jit_reload", cpp_sources=source.format(2), functions=["version"], build_directory=build_dir
    )
    assert second.version() == 2
