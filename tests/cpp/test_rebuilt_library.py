"""A rebuilt library loaded beside the old one, as a notebook does when it edits a struct and
rebuilds: its object types are other types than the old ones of the same key (detail/object.h,
detail/object_convert.h), and its load-time registrations replace the old library's
(reflection/registry.h). Issue 28, items 2 and 3: these crashed the process (SIGSEGV reading an
object with the other layout, SIGABRT from a registration that threw inside dlopen), so every
check runs in a child process, where a crash fails the test instead of ending the run.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

INCLUDE = Path(__file__).resolve().parents[2] / "include"
CXX = os.environ.get("CXX", "c++")

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


def _compile(source: str, output: Path, *flags: str) -> Path:
    src = output.with_suffix(".cc")
    src.write_text(source)
    cmd = [CXX, "-shared", "-fPIC", "-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror"]
    cmd += [f"-I{INCLUDE}", *flags, str(src), "-o", str(output)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        pytest.fail(f"compiling {output.name} failed:\n{' '.join(cmd)}\n{proc.stderr}")
    return output


@pytest.fixture(scope="module")
def libs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if shutil.which(CXX) is None:
        pytest.skip(f"needs a C++ compiler ({CXX} not found)")
    root = tmp_path_factory.mktemp("rebuilt")
    return {
        "v1": _compile(SOURCE, root / "libpoint_v1.so", "-DREBUILT_VERSION=1"),
        "v2": _compile(SOURCE, root / "libpoint_v2.so", "-DREBUILT_VERSION=2"),
        "failing": _compile(FAILING_SOURCE, root / "libfailing.so"),
    }


def _run(code: str) -> str:
    """Runs `code` in a child Python; a crash (or any failure) fails the test with its output."""
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def _foreign(v1: Path, v2: Path) -> str:
    return (
        f"an object of type 'rebuilt.Point' made by another definition of that type (in '{v1}') "
        f"than the one this function expects (in '{v2}'); two loaded libraries define "
        "'rebuilt.Point', and an object passes only to the library that made it"
    )


def test_an_object_of_another_definition_is_a_type_error(libs):
    out = _run(
        f"""
        import tvm_ffi

        old = tvm_ffi.load_module({str(libs["v1"])!r})
        p = old.make(5)
        assert old.get_x(p) == 5
        new = tvm_ffi.load_module({str(libs["v2"])!r})
        for call in (lambda: new.get_x(p), lambda: new.cast_x(p),
                     lambda: tvm_ffi.get_global_func("rebuilt.point_x")(p)):
            try:
                call()
            except TypeError as e:
                print(e)
        print(new.is_point(p), new.is_point(new.make(6)), old.is_point(new.make(6)))
        print(new.get_x(new.make(7)), old.get_x(p))  # each library with its own objects
        print(new.area(new.make_square(3)))  # a class under the key of its interface
        try:
            new.area(old.make_square(3))
        except TypeError as e:
            print(e)
        """
    )
    foreign = _foreign(libs["v1"], libs["v2"])
    assert out.splitlines() == [
        f"get_x() argument 1 is {foreign}",
        f"value is {foreign}",
        f"rebuilt.point_x() argument 1 is {foreign}",
        "False True False",
        "7 5",
        "9",
        f"area() argument 1 is {foreign.replace('rebuilt.Point', 'rebuilt.Shape')}",
    ]


def test_a_method_called_on_an_object_of_another_definition_is_a_type_error(libs):
    out = _run(
        f"""
        import tvm_ffi

        @tvm_ffi.register_object("rebuilt.Point")
        class Point(tvm_ffi.Object):
            pass

        tvm_ffi.load_module({str(libs["v1"])!r})
        old = Point(3)
        assert old.x() == 3
        tvm_ffi.load_module({str(libs["v2"])!r})  # its constructor and methods replace v1's
        new = Point(4)
        print(new.x())
        try:
            old.x()
        except TypeError as e:
            print(e)
        """
    )
    assert out.splitlines() == [
        "4",
        f"a method of 'rebuilt.Point' called on {_foreign(libs['v1'], libs['v2'])}",
    ]


def test_a_library_rebuilt_in_place_replaces_its_global_functions(libs, tmp_path):
    """The notebook's edit-and-rebuild: the same path, loaded again from a private copy."""
    lib = tmp_path / "libpoint.so"
    shutil.copy(libs["v1"], lib)
    out = _run(
        f"""
        import shutil
        import tvm_ffi

        old = tvm_ffi.load_module({str(lib)!r})
        p = old.make(5)
        print(tvm_ffi.get_global_func("rebuilt.version")())
        shutil.copy({str(libs["v2"])!r}, {str(lib)!r} + ".new")
        shutil.move({str(lib)!r} + ".new", {str(lib)!r})
        new = tvm_ffi.load_module({str(lib)!r})
        print(tvm_ffi.get_global_func("rebuilt.version")())
        try:
            new.get_x(p)
        except TypeError as e:
            print(e)
        """
    )
    version_1, version_2, error = out.splitlines()
    assert (version_1, version_2) == ("1", "2")
    copy = rf"{re.escape(str(tmp_path))}/\.tvm_ffi_reload_\w+/libpoint\.so"
    assert re.fullmatch(
        rf"get_x\(\) argument 1 is an object of type 'rebuilt\.Point' made by another "
        rf"definition of that type \(in '{re.escape(str(lib))}'\) than the one this function "
        rf"expects \(in '{copy}'\); .*",
        error,
    ), error


def test_failing_load_time_registrations_raise_from_load_module(libs):
    out = _run(
        f"""
        import tvm_ffi

        for _ in range(2):  # the library stays loaded, and stays broken
            try:
                tvm_ffi.load_module({str(libs["failing"])!r})
            except RuntimeError as e:
                print(e)
        print([tvm_ffi.get_global_func(n, allow_missing=True) is not None
               for n in ("failing.first", "failing.twice", "failing.never")])
        print(tvm_ffi.get_global_func("failing.twice")())
        """
    )
    message = (
        f"library '{libs['failing']}' was loaded, but a TVM_FFI_STATIC_INIT_BLOCK of it failed: "
        "global function 'failing.twice' is registered twice by the same library; the second "
        "block failed (what the block registered before it failed stays registered)"
    )
    assert out.splitlines() == [message, message, "[True, True, False]", "2"]


def test_without_the_registry_a_failing_block_is_printed(libs):
    """Loaded without tvm_ffi (no libtvm_ffi.so in the process), GlobalDef cannot register:
    the block says so on stderr, and the process goes on."""
    proc = subprocess.run(
        [sys.executable, "-c", f"import ctypes; ctypes.CDLL({str(libs['failing'])!r}); print(1)"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (proc.returncode, proc.stdout) == (0, "1\n"), proc.stderr
    assert proc.stderr.splitlines() == [
        "tvm_ffi: a TVM_FFI_STATIC_INIT_BLOCK failed: RuntimeError: GlobalDef: the global "
        "registry (libtvm_ffi) is not loaded; import tvm_ffi first, or link the library with "
        "-ltvm_ffi",
        "tvm_ffi: a TVM_FFI_STATIC_INIT_BLOCK failed: RuntimeError: the second block failed",
    ]
