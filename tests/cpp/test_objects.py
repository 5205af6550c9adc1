"""Objects across the ABI, as code written for apache-tvm-ffi uses them: a Module returned
by an exported function (FlashInfer's runners), Function values in both directions, classes
registered with reflection::ObjectDef and constructed from Python (sglang's ngram corpus),
global functions registered at load time, Any, Variant and the standard-library types of
extra/stl.h. One library, built once with -Werror, serves the tests through the Python
package (load_inline: the installed package's headers until the package's core is on the
tvm-ffi ABI); the source is also built here against this checkout's headers, linked with the
runtime, with g++ and with nvcc.
"""

from __future__ import annotations

import gc
import subprocess
import weakref
from pathlib import Path

import numpy as np
import pytest

import tvm_ffi
import tvm_ffi.libinfo
from helpers import next_runtime
from tvm_ffi import cpp

INCLUDE = Path(__file__).resolve().parents[2] / "include"

SOURCE = r"""
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/extra/module.h>
#include <tvm/ffi/extra/stl.h>
#include <tvm/ffi/reflection/registry.h>

#include <map>
#include <string>

using tvm::ffi::Any;
using tvm::ffi::Function;
using tvm::ffi::Module;
using tvm::ffi::Optional;
using tvm::ffi::String;
using tvm::ffi::Variant;

// A runner in the shape of FlashInfer's fp8 block-scale GEMM binding.
class ScaleRunner : public tvm::ffi::ModuleObj {
 public:
  explicit ScaleRunner(int64_t factor) : factor_(factor) {}
  const char* kind() const final { return "scale_runner"; }
  Optional<Function> GetFunction(const String& name) {
    if (name == "scale") {
      return Function::FromTyped([this](int64_t x) { return x * factor_; });
    }
    if (name == "fail") {
      return Function::FromTyped([](int64_t x) -> int64_t {
        TVM_FFI_ICHECK_GT(x, 0) << "x must be positive";
        return x;
      });
    }
    return std::nullopt;
  }

 private:
  int64_t factor_;
};

Module init(int64_t factor) { return Module(tvm::ffi::make_object<ScaleRunner>(factor)); }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(init, init);

int64_t apply(Function f, int64_t x) { return f(x).cast<int64_t>() + 1; }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(apply, apply);

int64_t apply_std(std::function<int64_t(int64_t)> f, int64_t x) { return f(x) + 2; }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(apply_std, apply_std);

Function make_adder(int64_t k) {
  return Function::FromTyped([k](int64_t x) { return x + k; });
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(make_adder, make_adder);

// A class in the shape of sglang's NgramCorpusObj: constructed and used from Python.
struct CounterObj : public tvm::ffi::Object {
  explicit CounterObj(int64_t start) : count(start) {}
  int64_t Add(int64_t by) { return count += by; }
  std::string Describe(const std::string& prefix) const {
    return prefix + std::to_string(count);
  }
  int64_t count;
  static constexpr bool _type_mutable = true;
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("test_objects.Counter", CounterObj, tvm::ffi::Object);
};

void register_counter() {
  namespace refl = tvm::ffi::reflection;
  refl::ObjectDef<CounterObj>()
      .def(refl::init<int64_t>(), "__init__")
      .def("add", &CounterObj::Add)
      .def("describe", &CounterObj::Describe);
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(register_counter, register_counter);

// Keeps a callback, as a class with a Function member does: a Python callable it holds is out
// of sight of Python's garbage collector (docs/guides/cpp_core.md).
struct HolderObj : public tvm::ffi::Object {
  void Set(Function f) { callback = std::move(f); }
  int64_t Fire(int64_t x) { return callback(x).cast<int64_t>(); }
  Function callback;
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("test_objects.Holder", HolderObj, tvm::ffi::Object);
};

void register_holder() {
  namespace refl = tvm::ffi::reflection;
  refl::ObjectDef<HolderObj>()
      .def(refl::init<>())
      .def("set", &HolderObj::Set)
      .def("fire", &HolderObj::Fire);
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(register_holder, register_holder);

TVM_FFI_STATIC_INIT_BLOCK() {
  tvm::ffi::reflection::GlobalDef().def("test_objects.add",
                                        [](int64_t a, int64_t b) { return a + b; });
}

int64_t call_global(std::string name, int64_t a, int64_t b) {
  return Function::GetGlobalRequired(name)(a, b).cast<int64_t>();
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(call_global, call_global);

Any echo(Any value) { return value; }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(echo, echo);

std::string type_of(tvm::ffi::AnyView value) {
  if (auto i = value.as<int64_t>()) return "int " + std::to_string(*i);
  if (auto s = value.as<std::string>()) return "str " + *s;
  return value.GetTypeKey();
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(type_of, type_of);

// FlashInfer's trtllm launcher takes Variant<double, ffi::Tensor> scales.
std::string scale_kind(Variant<double, tvm::ffi::Tensor> scale) {
  if (auto value = scale.as<double>()) return "value " + std::to_string(*value);
  return "tensor of " + std::to_string(scale.get<tvm::ffi::Tensor>().numel());
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(scale_kind, scale_kind);

std::map<std::string, int64_t> count_words(std::vector<std::string> words) {
  std::map<std::string, int64_t> counts;
  for (const std::string& w : words) ++counts[w];
  return counts;
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(count_words, count_words);

std::variant<int64_t, std::string> either(bool as_text) {
  if (as_text) return std::string("text");
  return int64_t{7};
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(either, either);
"""


@pytest.fixture(scope="module")
def lib():
    return cpp.load_inline(
        "objects_compat", cpp_sources=SOURCE, extra_cflags=["-Wall", "-Wextra", "-Werror"]
    )


def test_module_returned_by_init_hands_out_its_functions(lib):
    runner = lib.init(3)
    assert runner.scale(5) == 15
    assert runner["scale"](7) == 21


def test_module_without_the_function_raises_attribute_error(lib):
    with pytest.raises(AttributeError, match="nope"):
        lib.init(3).nope  # noqa: B018


def test_module_function_errors_reach_python(lib):
    with pytest.raises(RuntimeError, match=r"Check failed: \(x > 0\) is false: 0 vs\. 0: x must"):
        lib.init(1).fail(0)


def test_python_callable_passed_to_cpp_is_called(lib):
    assert lib.apply(lambda x: x * 10, 4) == 41
    assert lib.apply_std(lambda x: x - 1, 4) == 5


def test_python_exception_in_a_callback_propagates(lib):
    def boom(x):
        raise ValueError(f"bad {x}")

    with pytest.raises(ValueError, match="bad 4"):
        lib.apply(boom, 4)


def test_function_returned_by_cpp_is_callable_and_passes_back(lib):
    add5 = lib.make_adder(5)
    assert add5(1) == 6
    assert lib.apply(add5, 1) == 7


def test_object_def_class_constructed_and_used_from_python(lib):
    lib.register_counter()

    @tvm_ffi.register_object("test_objects.Counter")
    class Counter(tvm_ffi.Object):
        def __init__(self, start):
            self.__ffi_init__(start)

    counter = Counter(5)
    assert counter.add(2) == 7
    assert counter.add(3) == 10
    assert counter.describe("n=") == "n=10"


@pytest.fixture(scope="module")
def holder_cls(lib):
    lib.register_holder()

    @tvm_ffi.register_object("test_objects.Holder")
    class Holder(tvm_ffi.Object):
        pass

    return Holder


def _count_alive(refs) -> int:
    gc.collect()
    return sum(ref() is not None for ref in refs)


def test_a_callback_that_holds_its_holder_weakly_is_collected(holder_cls):
    """Issue 28, item 16, as docs/guides/cpp_core.md says to write it: holder -> Function ->
    lambda -> dict -> (weakly) holder. The C++ member is out of the collector's sight, so only
    the weak reference lets the holders and their callbacks go."""
    holders, callbacks = [], []
    for i in range(2000):
        holder = holder_cls()
        state = {"holder": weakref.ref(holder), "offset": i}

        def callback(x, state=state):
            return x + state["offset"] + (state["holder"]() is not None)

        holder.set(callback)
        assert holder.fire(1) == i + 2
        holders.append(weakref.ref(holder))
        callbacks.append(weakref.ref(callback))
    del holder, callback, state
    assert (_count_alive(holders), _count_alive(callbacks)) == (0, 0)


def test_a_strong_cycle_through_a_cpp_object_waits_for_the_callback_to_be_dropped(holder_cls):
    """The documented limit: the same cycle with a strong reference survives gc.collect(); it
    goes once the callback is dropped (holder.set(None))."""
    holders = []
    for _ in range(200):
        holder = holder_cls()
        state = {"holder": holder}
        holder.set(lambda x, state=state: x)
        holders.append(weakref.ref(holder))
    del holder, state
    assert _count_alive(holders) == 200
    for ref in holders:
        ref().set(None)
    assert _count_alive(holders) == 0


def test_global_registered_at_load_is_found_from_python_and_cpp(lib):
    assert tvm_ffi.get_global_func("test_objects.add")(2, 3) == 5
    assert lib.call_global("test_objects.add", 4, 5) == 9
    with pytest.raises(ValueError, match=r"no global function is registered as 'no\.such'"):
        lib.call_global("no.such", 1, 2)


def test_any_round_trips_values_and_objects(lib):
    assert lib.echo("hi") == "hi"
    assert lib.echo(3.5) == 3.5
    assert lib.echo([1, "a"]) == [1, "a"]
    assert lib.echo(None) is None
    assert lib.echo(lib.init(2)).scale(4) == 8
    assert lib.type_of(3) == "int 3"
    assert lib.type_of("x") == "str x"
    assert lib.type_of(2.5) == "float"


def test_variant_takes_the_alternative_the_argument_is(lib):
    assert lib.scale_kind(0.5) == "value 0.500000"
    assert lib.scale_kind(np.zeros((2, 3), dtype="float32")) == "tensor of 6"
    with pytest.raises(TypeError, match=r"argument 1 must be float \| Tensor, not str"):
        lib.scale_kind("x")


def test_stl_containers_and_std_variant(lib):
    assert lib.count_words(["a", "b", "a"]) == {"a": 2, "b": 1}
    assert lib.either(True) == "text"
    assert lib.either(False) == 7


def test_objects_compile_with_nvcc_without_warnings(tmp_path):
    # nvcc's own front end reads the headers too (FlashInfer's .cu bindings).
    from tvm_ffi.cpp._toolchain import find_cuda_tool

    try:
        nvcc = find_cuda_tool("nvcc")
    except RuntimeError:
        pytest.skip("needs nvcc")
    source = tmp_path / "objects.cu"
    source.write_text(SOURCE)
    cmd = [
        str(nvcc), "-std=c++17", "-c", "-Xcompiler", "-Wall,-Wextra,-Werror",
        "-Werror", "all-warnings", f"-I{INCLUDE}",
        "-include", "tvm/ffi/container/tensor.h", str(source), "-o", str(tmp_path / "o.o"),
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_objects_build_with_these_headers_and_the_runtime(tmp_path):
    """The source above as a shared library of this checkout's headers, linked with -ltvm_ffi:
    its imports resolve (-z defs) and it loads."""
    import ctypes
    import shutil

    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("needs a C++ compiler")
    source = tmp_path / "objects.cc"
    source.write_text(SOURCE)
    folder = next_runtime.build().parent
    lib = tmp_path / "libobjects.so"
    cmd = [
        cxx, "-std=c++17", "-O2", "-fPIC", "-shared", "-Wall", "-Wextra", "-Werror",
        f"-I{INCLUDE}", "-include", "tvm/ffi/container/tensor.h", str(source), "-o", str(lib),
        f"-L{folder}", "-ltvm_ffi", f"-Wl,-rpath,{folder}", "-Wl,-z,defs",
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ctypes.CDLL(str(lib))
