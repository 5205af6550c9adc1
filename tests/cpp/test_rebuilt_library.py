"""A rebuilt library loaded beside the old one, as a notebook does when it edits a struct and
rebuilds, driven from C++ through the runtime's loader (tests/cpp/rebuilt_driver.cc, linked
with -ltvm_ffi). Issue 28, items 2 and 3: these crashed the process (SIGSEGV reading an object
with the other layout, SIGABRT from a registration that threw inside dlopen). On the tvm-ffi
ABI a type is its registered index: the rebuild's class of the same key with another size is
refused where it is first used (TypeError naming the key and both sizes), and a load-time block
that throws is printed with its place while loading goes on. The driver runs as a child
process, so a crash fails the test instead of ending the run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import next_runtime

HERE = Path(__file__).resolve().parent
INCLUDE = HERE.parents[1] / "include"
CXX = os.environ.get("CXX", "c++")
WARNINGS = ["-Wall", "-Wextra", "-Werror"]

# Built twice, REBUILT_VERSION 1 and 2: rebuilt.Point has another layout in each (version 2
# holds a pointer where version 1 holds the value), so reading one as the other crashes.
SOURCE = r"""
#include <tvm/ffi/any.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/object.h>
#include <tvm/ffi/reflection/registry.h>

#include <cstdint>

struct PointObj : public tvm::ffi::Object {
#if REBUILT_VERSION == 1
  explicit PointObj(int64_t value) : x(value) {}
  int64_t X() const { return x; }
  int64_t x;
#else
  explicit PointObj(int64_t value) : x(new int64_t(value)) {}
  ~PointObj() { delete x; }
  int64_t X() const { return *x; }
  int64_t* x;
  double more[4] = {};
#endif
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("rebuilt.Point", PointObj, tvm::ffi::Object);
};

struct Point : public tvm::ffi::ObjectRef {
  TVM_FFI_DEFINE_OBJECT_REF_METHODS_NULLABLE(Point, tvm::ffi::ObjectRef, PointObj);
};

// An interface type and a class that keeps its key: objects of the class are Shapes.
struct ShapeObj : public tvm::ffi::Object {
  virtual ~ShapeObj() = default;
  virtual int64_t Area() const = 0;
  TVM_FFI_DECLARE_OBJECT_INFO("rebuilt.Shape", ShapeObj, tvm::ffi::Object);
};

struct SquareObj : public ShapeObj {
  explicit SquareObj(int64_t side) : side(side) {}
  int64_t Area() const override { return side * side; }
  int64_t side;
};

struct Shape : public tvm::ffi::ObjectRef {
  TVM_FFI_DEFINE_OBJECT_REF_METHODS_NULLABLE(Shape, tvm::ffi::ObjectRef, ShapeObj);
};

Shape MakeSquare(int64_t side) { return Shape(tvm::ffi::make_object<SquareObj>(side)); }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(make_square, MakeSquare);

int64_t Area(Shape shape) { return shape->Area(); }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(area, Area);

Point Make(int64_t x) { return Point(tvm::ffi::make_object<PointObj>(x)); }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(make, Make);

int64_t GetX(Point p) { return p->X(); }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(get_x, GetX);

bool IsPoint(tvm::ffi::ObjectRef obj) { return obj.as<PointObj>() != nullptr; }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(is_point, IsPoint);

int64_t CastX(tvm::ffi::Any value) { return value.cast<Point>()->X(); }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(cast_x, CastX);

TVM_FFI_STATIC_INIT_BLOCK() {
  namespace refl = tvm::ffi::reflection;
  refl::GlobalDef()
      .def("rebuilt.version", []() -> int64_t { return REBUILT_VERSION; })
      .def("rebuilt.point_x", [](Point p) { return p->X(); });
  refl::ObjectDef<PointObj>().def(refl::init<int64_t>()).def("x", &PointObj::X);
}
"""

# Load-time registrations that fail: a name registered twice by one library, and a block that
# throws. Loading it must raise, not end the process.
FAILING_SOURCE = r"""
#include <tvm/ffi/function.h>
#include <tvm/ffi/reflection/registry.h>

#include <cstdint>
#include <stdexcept>

int64_t One() { return 1; }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(one, One);

TVM_FFI_STATIC_INIT_BLOCK() {
  namespace refl = tvm::ffi::reflection;
  refl::GlobalDef().def("failing.first", []() -> int64_t { return 1; });
  refl::GlobalDef().def("failing.twice", []() -> int64_t { return 2; });
  refl::GlobalDef().def("failing.twice", []() -> int64_t { return 3; });
  refl::GlobalDef().def("failing.never", []() -> int64_t { return 4; });
}

TVM_FFI_STATIC_INIT_BLOCK() { throw std::runtime_error("the second block failed"); }
"""


def _runtime_link() -> list[str]:
    folder = next_runtime.build().parent
    return [f"-L{folder}", "-ltvm_ffi", f"-Wl,-rpath,{folder}"]


def _build(source: Path, output: Path, *flags: str) -> Path:
    cmd = [CXX, "-std=c++17", "-O2", *WARNINGS, f"-I{INCLUDE}", *flags, str(source)]
    cmd += ["-o", str(output), *_runtime_link()]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        pytest.fail(f"building {output.name} failed:\n{' '.join(cmd)}\n{proc.stderr}")
    return output


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if shutil.which(CXX) is None:
        pytest.skip(f"needs a C++ compiler ({CXX} not found)")
    root = tmp_path_factory.mktemp("rebuilt")
    (root / "point.cc").write_text(SOURCE)
    (root / "failing.cc").write_text(FAILING_SOURCE)
    lib = ["-shared", "-fPIC"]
    return {
        "v1": _build(root / "point.cc", root / "libpoint_v1.so", *lib, "-DREBUILT_VERSION=1"),
        "v2": _build(root / "point.cc", root / "libpoint_v2.so", *lib, "-DREBUILT_VERSION=2"),
        "failing": _build(root / "failing.cc", root / "libfailing.so", *lib),
        "driver": _build(HERE / "rebuilt_driver.cc", root / "driver"),
        "root": root,
    }


@pytest.fixture(scope="module")
def run(built) -> subprocess.CompletedProcess:
    cmd = [str(built["driver"]), str(built["v1"]), str(built["v2"]), str(built["failing"])]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def test_the_driver_runs_to_the_end(run):
    assert run.returncode == 0, f"{run.stdout}\n{run.stderr}"


def test_an_object_of_another_layout_is_a_type_error(run):
    conflict = (
        "TypeError: type key 'rebuilt.Point' is registered with 32-byte objects; this "
        "library's class for it is 64 bytes (two layouts, one key)"
    )
    assert run.stdout.splitlines()[:5] == [
        "v1 get_x 5",
        "v1 version 1",
        f"v2 make: {conflict}",  # making one of its objects
        f"v2 get_x: {conflict}",  # reading the first build's object
        "v1 again 5",  # the first build still works
    ]


def test_failing_load_time_registrations_are_printed_and_loading_goes_on(run, built):
    assert run.stdout.splitlines()[5:] == [
        "failing one 1",
        "failing.first yes, failing.twice yes, failing.never no",
    ]
    root = built["root"]
    already = (
        "RuntimeError: global function '{}' is already registered (by another library, or by an "
        "earlier build of this one); a registration with override "
        "(Function::SetGlobal(name, f, true)) replaces it"
    )
    assert run.stderr.splitlines() == [
        # The rebuild's registrations meet the first build's names (kept: no override).
        f"{root / 'point.cc'}:63: TVM_FFI_STATIC_INIT_BLOCK failed: "
        + already.format("rebuilt.version"),
        f"{root / 'failing.cc'}:11: TVM_FFI_STATIC_INIT_BLOCK failed: "
        + already.format("failing.twice"),
        f"{root / 'failing.cc'}:19: TVM_FFI_STATIC_INIT_BLOCK failed: the second block failed",
    ]


def test_type_indices_are_not_shared_between_libraries(built):
    """The per-class index lives in a hidden static: no STB_GNU_UNIQUE symbol for the loader to
    bind across the two builds (which made the rebuild read the first build's objects)."""
    if shutil.which("nm") is None:
        pytest.skip("needs nm (binutils)")
    for lib in (built["v1"], built["v2"]):
        out = subprocess.run(["nm", "-D", str(lib)], capture_output=True, text=True, check=True)
        unique = [line for line in out.stdout.splitlines() if " u " in line and "tindex" in line]
        assert unique == []
