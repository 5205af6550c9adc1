"""A module's C++ runtime stays its own: exceptions a client throws, catches and rethrows reach
Python as errors, also where the compiler links libstdc++ statically (docs/dev/cxx_runtime.md).

The crash this holds (a segfault at the first ``ostream << long`` of a module linked with
libstdc++.a, once torch had loaded libstdc++.so.6) shows with such a compiler (``CXX``) and a
``libtvm_ffi.so`` built by it: on a GPU host of that kind the tests below failed before the
fix. Everywhere they pin the mechanism: what the JIT link exports, and the client-shaped
exception path from the JIT and from a foreign link, each call made in a child process so
that a crash fails the test instead of ending the run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tvm_ffi import _elf, cpp
from tvm_ffi.libinfo import find_dlpack_include_path, find_include_path

# A client's input check, shaped like sglang's TensorMatcher::verify: an exception type of its
# own (a std::runtime_error), thrown, caught, its message rebuilt with an ostream that prints
# integers, and a new one thrown out of the exported function.
CLIENT_CHECK = r"""
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>

namespace client {
struct PanicError : public std::runtime_error {
  explicit PanicError(std::string msg) : std::runtime_error(msg), message(std::move(msg)) {}
  std::string message;
};
void VerifyDim(int64_t got, int64_t expected) {
  if (got != expected) {
    std::ostringstream os;
    os << "expected " << expected << " dims, got " << got;
    throw PanicError(os.str());
  }
}
}  // namespace client

int64_t verify(tvm::ffi::TensorView t, int64_t expected_dims) {
  try {
    client::VerifyDim(t.ndim(), expected_dims);
  } catch (client::PanicError& e) {
    std::ostringstream os;
    os << "Tensor match failed for Tensor<";
    for (int64_t d = 0; d < t.ndim(); ++d) os << (d ? ", " : "") << t.size(d);
    os << ">: " << e.message;
    throw client::PanicError(os.str());
  }
  return t.numel();
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(verify, verify);
"""

# The child: torch first (it loads libstdc++.so.6, the condition of the crash), then the call.
CHILD = textwrap.dedent(
    """
    import sys, torch, tvm_ffi
    device = sys.argv[2]
    mod = tvm_ffi.load_module(sys.argv[1])
    print("ok", mod.verify(torch.ones(33, device=device), 1))
    try:
        mod.verify(torch.ones(5, 33, device=device), 1)
    except RuntimeError as err:
        print(type(err).__name__, err)
        print(err.__notes__[-1].splitlines()[-1])
    """
)

EXPECTED = "RuntimeError Tensor match failed for Tensor<5, 33>: expected 1 dims, got 2"

# std::locale::classic(): exported by a library only when it carries libstdc++ itself.
CXX_RUNTIME_MARK = "_ZNSt6locale7classicEv"


def _call_in_child(path: str, device: str = "cpu") -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, path, device], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr[-2000:])
    return proc.stdout.splitlines()


def _expected(path: str | Path) -> list[str]:
    """The child's output: the client's message, then the last line of the note where the core
    names the function and the library it came from."""
    return ["ok 33", EXPECTED, f"in function 'verify' of library '{path}'"]


def _exports_cxx_runtime(path: str | Path) -> bool:
    symbols = _elf.symbols(path, dynamic=True)
    assert symbols is not None, path
    return any(s.name == CXX_RUNTIME_MARK and s.defined for s in symbols)


def test_rethrown_client_exception_reaches_python():
    path = cpp.build_inline("client_rethrow", cpp_sources=CLIENT_CHECK)
    assert _call_in_child(path) == _expected(path)


def test_module_link_keeps_a_static_libstdcxx_private():
    # -static-libstdc++ does what a compiler without libstdc++.so does on its own.
    path = cpp.build_inline(
        "client_rethrow_static", cpp_sources=CLIENT_CHECK, extra_ldflags=["-static-libstdc++"]
    )
    assert not _exports_cxx_runtime(path)
    assert _call_in_child(path) == _expected(path)


def _foreign_build(tmp_path: Path, name: str, *flags: str) -> Path:
    """A library linked by someone else's build (a client's own ninja file), not load_inline:
    the compiler ``CXX`` names, as the clients' builds use it."""
    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("needs a C++ compiler")
    source = tmp_path / "client.cc"
    source.write_text(CLIENT_CHECK)
    out = tmp_path / f"{name}.so"
    includes = [f"-I{find_include_path()}", f"-I{find_dlpack_include_path()}"]
    cmd = [cxx, "-std=c++17", "-O2", "-fPIC", "-shared", *includes, str(source), "-o", str(out)]
    subprocess.run([*cmd, *flags], check=True, capture_output=True, text=True)
    return out


@pytest.mark.parametrize("flags", [(), ("-static-libstdc++",)], ids=["as-is", "static"])
def test_foreign_library_with_its_own_cxx_runtime_raises_cleanly(tmp_path, flags):
    # Linked the way a compiler without libstdc++.so links (or asked to): the library exports
    # its own copy, which the loader binds to the process's one (docs/dev/cxx_runtime.md).
    path = _foreign_build(tmp_path, "client", *flags)
    if flags:
        assert _exports_cxx_runtime(path)
    assert _call_in_child(str(path)) == _expected(path)


@pytest.mark.gpu
def test_rethrown_client_exception_from_cuda_module():
    # The client's own build shape: a .cu compiled by nvcc as C++20, torch CUDA tensors.
    path = cpp.build_inline(
        "client_rethrow_cuda", cuda_sources=CLIENT_CHECK, extra_cuda_cflags=["-std=c++20"]
    )
    assert _call_in_child(path, "cuda") == _expected(path)


@pytest.mark.gpu
def test_foreign_library_raises_cleanly_with_cuda_tensors(tmp_path):
    path = _foreign_build(tmp_path, "client", "-static-libstdc++")
    assert _call_in_child(str(path), "cuda") == _expected(path)
