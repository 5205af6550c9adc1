"""tvm_ffi.cpp called the way code written for apache-tvm-ffi calls it: sources that
include nothing, cpp_files=/cuda_files=, keep_module_alive=, backend=, any module name;
and this package's output= (a library or one relocatable object)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest

import tvm_ffi
from tvm_ffi import cpp
from tvm_ffi.cpp import _prebuilt, _toolchain

# apache-tvm-ffi's own load_inline example: no #include at all.
ADD_ONE_CPU = textwrap.dedent(
    """
    void add_one_cpu(tvm::ffi::TensorView x, tvm::ffi::TensorView y) {
      TVM_FFI_ICHECK(x.ndim() == 1) << "x must be a 1D tensor";
      DLDataType f32_dtype{kDLFloat, 32, 1};
      TVM_FFI_ICHECK(x.dtype() == f32_dtype) << "x must be a float tensor";
      TVM_FFI_ICHECK_EQ(x.size(0), y.size(0)) << "x and y must have the same shape";
      for (int i = 0; i < x.size(0); ++i) {
        static_cast<float*>(y.data_ptr())[i] = static_cast<float*>(x.data_ptr())[i] + 1;
      }
    }
    """
)

PLAIN = 'extern "C" int plain_answer() { return 42; }\n'
PLAIN_INT = "int answer() { return 42; }\n"


def _cxx() -> str:
    cxx = shutil.which(os.environ.get("CXX", "c++"))
    if cxx is None:
        pytest.skip("needs a C++ compiler")
    return cxx


def _random(n: int) -> np.ndarray:
    return np.random.default_rng(n).standard_normal(n).astype(np.float32)


def _check_add_one(mod) -> None:
    x = _random(33)
    y = np.full_like(x, np.nan)
    mod.add_one_cpu(x, y)
    np.testing.assert_array_equal(y, x + 1)


def test_functions_with_a_source_that_includes_nothing():
    mod = cpp.load_inline("hello", cpp_sources=ADD_ONE_CPU, functions=["add_one_cpu"])
    _check_add_one(mod)
    with pytest.raises(RuntimeError, match=r"x must be a float tensor"):
        mod.add_one_cpu(np.zeros(3, np.float64), np.zeros(3, np.float64))


def test_functions_as_a_single_name_and_as_a_dict_with_none():
    mod = cpp.load_inline(
        "hello_docs",
        cpp_sources=[
            "int add(int a, int b) { return a + b; }",
            "int sub(int a, int b) { return a - b; }",
        ],
        functions={"add": "Add two integers.", "sub": None},
    )
    assert (mod.add(40, 2), mod.sub(40, 2)) == (42, 38)
    assert mod.add.__doc__ == "Add two integers."
    # The library holds the docstring, as apache-tvm-ffi's load_inline writes it.
    doc = tvm_ffi.get_global_func("ffi.ModuleGetFunctionDoc")
    assert (doc(mod, "add", False), doc(mod, "sub", False)) == ("Add two integers.", None)
    one = cpp.load_inline("hello_one", cpp_sources=ADD_ONE_CPU, functions="add_one_cpu")
    _check_add_one(one)


def test_a_docstring_is_spelled_never_compiled():
    # Quotes, backslashes, line ends, a comment, a trigraph, a macro, non-ASCII: the library
    # answers the text as given, and nothing of it was read as C++.
    text = 'say "hi"\\n\n*/ // ??= #define X 1\n\t\u00e9\u4e2d \\x41 \\101 end'
    mod = cpp.load_inline("hello_doc_text", cpp_sources=PLAIN_INT, functions={"answer": text})
    assert tvm_ffi.get_global_func("ffi.ModuleGetFunctionDoc")(mod, "answer", False) == text
    assert mod.answer() == 42


def test_the_sources_stay_the_users_text(tmp_path):
    # The prelude comes through -include flags: main.cpp is the user's text (plus the
    # export lines), so compiler messages point at the user's own line numbers.
    cpp.build_inline("verbatim", cpp_sources=ADD_ONE_CPU, build_directory=tmp_path)
    assert (tmp_path / "main.cpp").read_text() == ADD_ONE_CPU
    ninja = (tmp_path / "build.ninja").read_text()
    # Either the five headers, or the package's prelude.h that includes them (precompiled).
    pch = _prebuilt.pch_header(_toolchain.find_cxx())
    prelude = pch.read_text() if pch is not None and f"-include {pch}" in ninja else ninja
    for header in ("container/tensor.h", "dtype.h", "error.h", "extra/c_env_api.h", "function.h"):
        assert f"-include tvm/ffi/{header}" in ninja or f"#include <tvm/ffi/{header}>" in prelude


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_build_and_load_with_cpp_files(tmp_path):
    source = _write(
        tmp_path / "my_ops.cc",
        "".join(
            f"#include <tvm/ffi/{h}>\n" for h in ("container/tensor.h", "dtype.h", "function.h")
        )
        + ADD_ONE_CPU
        + "TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_one_cpu, add_one_cpu);\n",
    )
    path = cpp.build(name="my_ops", cpp_files=str(source))
    assert Path(path).name == "my_ops.so"
    _check_add_one(tvm_ffi.load_module(path))
    _check_add_one(cpp.load(name="my_ops", cpp_files=[source], keep_module_alive=False))


def test_c_sources_and_prebuilt_objects_in_the_file_lists(tmp_path):
    # `new` is a C++ keyword: this file compiles only as C.
    helper = _write(tmp_path / "helper.c", "int c_helper(int new) { return new * 2; }\n")
    prebuilt_src = _write(
        tmp_path / "prebuilt.cc", 'extern "C" int prebuilt(int v) { return v + 1; }\n'
    )
    prebuilt = tmp_path / "prebuilt.o"
    subprocess.run([_cxx(), "-fPIC", "-c", str(prebuilt_src), "-o", str(prebuilt)], check=True)
    main = _write(
        tmp_path / "main.cc",
        '#include <tvm/ffi/function.h>\nextern "C" int c_helper(int);\n'
        'extern "C" int prebuilt(int);\n'
        "int both(int v) { return prebuilt(c_helper(v)); }\n"
        "TVM_FFI_DLL_EXPORT_TYPED_FUNC(both, both);\n",
    )
    mod = cpp.load("mixed", cpp_files=[main, helper, prebuilt])
    assert mod.both(20) == 41
    # sources= goes by the suffix: the same three files.
    assert cpp.load("mixed_sources", sources=[main, helper, prebuilt]).both(1) == 3


@pytest.mark.skipif(shutil.which("ar") is None, reason="needs ar (binutils)")
def test_static_archive_in_the_file_lists_is_linked(tmp_path):
    """A .a was compiled as C++ and ended in 'ninja exited with code 1'; its content is
    in the key, so a rebuilt archive gives a new library."""

    def archive(value: int) -> Path:
        src = _write(tmp_path / "lib.cc", f'extern "C" int from_archive() {{ return {value}; }}\n')
        obj, lib = tmp_path / "lib.o", tmp_path / "libpart.a"
        subprocess.run([_cxx(), "-fPIC", "-c", str(src), "-o", str(obj)], check=True)
        lib.unlink(missing_ok=True)
        subprocess.run(["ar", "rcs", str(lib), str(obj)], check=True)
        return lib

    main = _write(
        tmp_path / "main.cc",
        '#include <tvm/ffi/function.h>\nextern "C" int from_archive();\n'
        "int value() { return from_archive(); }\n"
        "TVM_FFI_DLL_EXPORT_TYPED_FUNC(value, value);\n",
    )
    lib = archive(7)
    assert cpp.load("with_archive", sources=[main, lib]).value() == 7
    first = cpp.build("with_archive_files", cpp_files=[main, lib])
    archive(8)
    assert cpp.build("with_archive_files", cpp_files=[main, lib]) != first
    assert cpp.load("with_archive_rebuilt", sources=[main, lib]).value() == 8


def test_file_list_errors(tmp_path):
    kernel = _write(tmp_path / "k.cu", "__global__ void k() {}\n")
    with pytest.raises(
        ValueError,
        match=rf"^build: cpp_files holds the CUDA source {kernel}; pass it in cuda_files$",
    ):
        cpp.build("bad", cpp_files=[kernel])
    with pytest.raises(ValueError, match=r"^load: give cpp_files, cuda_files or sources"):
        cpp.load("bad")
    with pytest.raises(FileNotFoundError, match=r"^build: source file not found: nope\.cc$"):
        cpp.build("bad", cpp_files="nope.cc")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_output_copies_the_library_there(tmp_path):
    out = tmp_path / "dist" / "libhello.so"
    path = cpp.build_inline(
        "hello_out", cpp_sources=ADD_ONE_CPU, functions=["add_one_cpu"], output=out
    )
    assert path == str(out)
    assert stat.S_IMODE(out.stat().st_mode) == 0o777 & ~_umask()
    _check_add_one(tvm_ffi.load_module(out))
    assert [p.name for p in out.parent.iterdir()] == ["libhello.so"]  # no temp file left


def _elf_type(path: Path) -> int:
    return int.from_bytes(path.read_bytes()[16:18], "little")


def test_output_ending_in_o_is_one_relocatable_object(tmp_path):
    obj = tmp_path / "hello.o"
    assert cpp.build_inline(
        "hello_obj", cpp_sources=ADD_ONE_CPU, functions=["add_one_cpu"], output=str(obj)
    ) == str(obj)
    assert _elf_type(obj) == 1  # ET_REL
    assert stat.S_IMODE(obj.stat().st_mode) == 0o666 & ~_umask()
    lib = tmp_path / "libmine.so"
    # The object calls the runtime: the user's link names it, as the JIT's own does.
    runtime = ["-L", os.path.dirname(tvm_ffi.libinfo.find_libtvm_ffi()), "-ltvm_ffi"]
    subprocess.run([_cxx(), "-shared", str(obj), *runtime, "-o", str(lib)], check=True)
    _check_add_one(tvm_ffi.load_module(lib))
    # The same for files, a prebuilt object among them.
    source = _write(tmp_path / "v.cc", "#include <tvm/ffi/function.h>\nint v() { return 7; }\n"
                    "TVM_FFI_DLL_EXPORT_TYPED_FUNC(v, v);\n")  # fmt: skip
    merged = Path(cpp.build("files_obj", cpp_files=[source, obj], output=tmp_path / "all.o"))
    assert _elf_type(merged) == 1
    subprocess.run(
        [_cxx(), "-shared", str(merged), *runtime, "-o", str(tmp_path / "liball.so")], check=True
    )
    both = tvm_ffi.load_module(tmp_path / "liball.so")
    assert both.v() == 7
    _check_add_one(both)


def test_output_argument_errors(tmp_path):
    with pytest.raises(ValueError, match=r"^build_inline: output must name a file \(got '.*/'\)$"):
        cpp.build_inline("x", cpp_sources=PLAIN, output=str(tmp_path) + "/")
    with pytest.raises(TypeError, match=r"^build: output must be a path \(got int\)$"):
        cpp.build("x", cpp_files="a.cc", output=3)


@pytest.mark.parametrize(
    ("name", "stem"),
    [
        ("my-ops", "my-ops"),
        ("v1.2", "v1.2"),
        ("3d_ops", "3d_ops"),
        ("a b/c", "a_b_c_"),
        ("../up", "_up_"),
        ("x" * 300, "x" * 40 + "_"),
    ],
)
def test_module_names_apache_accepts(tmp_path, name, stem):
    path = Path(cpp.build_inline(name, cpp_sources=PLAIN, build_directory=tmp_path))
    assert path.parent == tmp_path
    if stem.endswith("_"):  # made safe: the plain part and a hash of the whole name
        assert path.name.startswith(stem)
        assert len(path.name) == len(stem) + 10 + len(".so")
    else:
        assert path.name == f"{stem}.so"
    assert cpp.load_inline(name, cpp_sources=PLAIN, functions=None) is not None


def test_names_made_safe_never_share_a_file(tmp_path):
    first = cpp.build_inline("a b", cpp_sources=PLAIN, build_directory=tmp_path)
    second = cpp.build_inline("a?b", cpp_sources=PLAIN, build_directory=tmp_path)
    assert first != second


def test_backend_and_keep_module_alive():
    assert (
        cpp.load_inline(
            "hello_cuda_backend", cpp_sources=ADD_ONE_CPU, functions=["add_one_cpu"], backend="cuda"
        )
        is not None
    )
    for api in (cpp.build_inline, cpp.load_inline):
        with pytest.raises(
            ValueError,
            match=rf"^{api.__name__}: backend must be 'cuda' or None \(got 'hip'\); "
            r"tvm-ffi-cubin builds GPU code with CUDA only$",
        ):
            api("x", cpp_sources=PLAIN, backend="hip")
    with pytest.raises(ValueError, match=r"^build: backend must be 'cuda' or None \(got 'rocm'\)"):
        cpp.build("x", cpp_files="a.cc", backend="rocm")
    with pytest.raises(
        TypeError, match=r"^load_inline: keep_module_alive must be True or False \(got 'no'\)$"
    ):
        cpp.load_inline("x", cpp_sources=PLAIN, keep_module_alive="no")
    mod = cpp.load_inline(
        "hello_kept", cpp_sources=ADD_ONE_CPU, functions=["add_one_cpu"], keep_module_alive=False
    )
    _check_add_one(mod)
