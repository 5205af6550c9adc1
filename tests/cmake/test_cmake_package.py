"""find_package(tvm_ffi CONFIG): every layout the package comes in, its version file, the
installed tree, and that finding it leaves the consumer's settings as they were."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import tvm_ffi.libinfo

REPO = Path(__file__).resolve().parents[2]
#: The runtime the package build writes into the checkout (setup.py RUNTIME).
RUNTIME = REPO / "python" / "tvm_ffi" / "lib" / "libtvm_ffi.so"


def _version() -> str:
    text = (REPO / "python" / "tvm_ffi" / "_version.py").read_text()
    return re.search(r"^__version__ = \"([^\"]+)\"", text, re.M)[1]


def _project(tmp_path: Path, body: str, languages: str = "NONE") -> Path:
    source = tmp_path / "src"
    source.mkdir(exist_ok=True)
    (source / "CMakeLists.txt").write_text(
        f"cmake_minimum_required(VERSION 3.20)\nproject(consumer LANGUAGES {languages})\n{body}"
    )
    return source


REPORT = """
find_package(tvm_ffi {request} CONFIG REQUIRED)
get_target_property(include_dirs tvm_ffi::header INTERFACE_INCLUDE_DIRECTORIES)
get_target_property(aliased tvm_ffi::header ALIASED_TARGET)
foreach(fn tvm_ffi_generate_cubin tvm_ffi_embed_cubin tvm_ffi_target_embed_cubin
           tvm_ffi_embed_bin_into add_tvm_ffi_cubin add_tvm_ffi_fatbin)
  if(NOT COMMAND ${{fn}})
    message(FATAL_ERROR "missing ${{fn}}")
  endif()
endforeach()
foreach(target tvm_ffi_header tvm_ffi::header tvm_ffi_shared tvm_ffi::shared)
  if(NOT TARGET ${{target}})
    message(FATAL_ERROR "missing target ${{target}}")
  endif()
endforeach()
message(STATUS "report: version=${{tvm_ffi_VERSION}}")
message(STATUS "report: include_dir=${{tvm_ffi_INCLUDE_DIR}}")
message(STATUS "report: dlpack_dir=${{tvm_ffi_DLPACK_INCLUDE_DIR}}")
message(STATUS "report: target_include=${{include_dirs}}")
message(STATUS "report: aliased=${{aliased}}")
message(STATUS "report: config=${{tvm_ffi_CONFIG}}")
get_target_property(shared_type tvm_ffi_shared TYPE)
message(STATUS "report: shared_type=${{shared_type}}")
if(shared_type STREQUAL "SHARED_LIBRARY")
  get_target_property(location tvm_ffi_shared IMPORTED_LOCATION)
  get_target_property(soname tvm_ffi_shared IMPORTED_SONAME)
  get_target_property(links tvm_ffi_shared INTERFACE_LINK_LIBRARIES)
  message(STATUS "report: shared=${{location}}|${{soname}}|${{links}}|${{tvm_ffi_LIBRARY}}")
endif()
"""


def _report(result) -> dict[str, str]:
    return dict(re.findall(r"^-- report: (\w+)=(.*)$", result.stdout, re.M))


@pytest.mark.parametrize("mode", ["source", "source-dir", "installed", "wheel", "pip"])
def test_find_package(mode, cmake, package_args, tmp_path, request):
    source = _project(tmp_path, REPORT.format(request=""))
    result = cmake.configure(source, tmp_path / "build", *package_args(mode))
    report = _report(result)

    expected_include = {
        "source": REPO / "include",
        "source-dir": REPO / "include",
        "installed": lambda: request.getfixturevalue("installed_prefix") / "include",
        "wheel": lambda: request.getfixturevalue("wheel_layout") / "tvm_ffi" / "include",
        # The package's own answer (a wheel: tvm_ffi/include; editable: the checkout's).
        "pip": lambda: request.getfixturevalue("pip_includedir"),
    }[mode]
    expected_include = expected_include() if callable(expected_include) else expected_include
    assert report["version"] == _version()
    assert Path(report["include_dir"]) == expected_include.resolve()
    assert Path(report["dlpack_dir"]) == expected_include.resolve()
    assert Path(report["target_include"]) == expected_include.resolve()
    assert (Path(report["include_dir"]) / "tvm" / "ffi" / "c_api.h").is_file()
    assert report["aliased"] == "tvm_ffi_header"
    # tvm_ffi::shared is the layout's libtvm_ffi.so (an installed tree has the one the
    # top-level project built).
    runtime = {
        # (a checkout not built in place is given the installed package's: conftest)
        "source": lambda: RUNTIME if RUNTIME.exists() else Path(tvm_ffi.libinfo.find_libtvm_ffi()),
        "source-dir": lambda: (
            RUNTIME if RUNTIME.exists() else Path(tvm_ffi.libinfo.find_libtvm_ffi())
        ),
        "installed": lambda: request.getfixturevalue("installed_prefix") / "lib",
        "wheel": lambda: request.getfixturevalue("wheel_layout") / "tvm_ffi" / "lib",
        "pip": lambda: Path(tvm_ffi.libinfo.find_libtvm_ffi()),
    }[mode]()
    if runtime.is_dir():
        runtime = runtime / "libtvm_ffi.so"
    location = str(runtime.resolve())
    assert report["shared_type"] == "SHARED_LIBRARY"
    assert report["shared"] == f"{location}|libtvm_ffi.so|tvm_ffi_header|{location}"


def test_find_package_without_the_runtime(cmake, wheel_layout, tmp_path):
    """Headers without libtvm_ffi.so beside them: tvm_ffi::shared stands for the headers, and
    the configure log says why."""
    import shutil

    package = tmp_path / "site" / "tvm_ffi"
    shutil.copytree(wheel_layout / "tvm_ffi", package, ignore=shutil.ignore_patterns("lib"))
    source = _project(tmp_path, REPORT.format(request=""))
    cmakedir = package / "share" / "cmake" / "tvm_ffi"
    result = cmake.configure(source, tmp_path / "build", f"-Dtvm_ffi_ROOT={cmakedir}")
    assert _report(result)["shared_type"] == "INTERFACE_LIBRARY"
    lib_dir = (package / "lib").absolute()
    message = f"-- tvm_ffi: no libtvm_ffi.so in {lib_dir}: tvm_ffi::shared links the headers only"
    assert message in result.stdout


def test_installed_tree(installed_prefix):
    cmakedir = installed_prefix / "lib" / "cmake" / "tvm_ffi"
    # Every helper file in cmake/ is installed: a new one cannot be forgotten.
    for file in (REPO / "cmake").glob("*.cmake"):
        assert (cmakedir / file.name).read_text() == file.read_text(), file.name
    assert (cmakedir / "tvm_ffiVersionValue.cmake").is_file()
    headers = sorted(p.relative_to(REPO / "include") for p in (REPO / "include").rglob("*.h"))
    assert headers, "include/ holds no headers"
    for header in headers:
        assert (installed_prefix / "include" / header).is_file(), header


@pytest.mark.parametrize(
    ("request_", "found"),
    [
        ("0.1", True),
        ("0.1.0 EXACT", True),
        ("0", False),  # 0.x: a different minor version is a different API
        ("0.2", False),
        ("1.0", False),
        ("99.0", False),
        ("0.1...1.0", True),
        ("0.2...1.0", False),
    ],
)
@pytest.mark.parametrize("mode", ["source", "installed"])
def test_version_requests(request_, found, mode, cmake, package_args, tmp_path):
    source = _project(tmp_path, REPORT.format(request=request_))
    result = cmake.configure(source, tmp_path / "build", *package_args(mode), check=False)
    if found:
        assert result.returncode == 0, result.describe()
        assert _report(result)["version"] == _version()
    else:
        assert result.returncode != 0
        text = result.error_text
        assert 'Could not find a configuration file for package "tvm_ffi" that' in text, text
        assert f"version: {_version()}" in text, text


# Everything a consumer may have set, dumped before and after find_package and a use of
# each function: CMAKE_* variables, directory properties, enabled languages, policies.
SETTINGS_DUMP = r"""
function(dump_settings file)
  get_cmake_property(variables VARIABLES)
  set(lines "")
  foreach(v IN LISTS variables)
    if(v MATCHES "^CMAKE_")
      string(APPEND lines "var ${v}=${${v}}\n")
    endif()
  endforeach()
  foreach(p COMPILE_OPTIONS COMPILE_DEFINITIONS INCLUDE_DIRECTORIES LINK_OPTIONS
            LINK_DIRECTORIES LINK_LIBRARIES)
    get_directory_property(value ${p})
    string(APPEND lines "dir ${p}=${value}\n")
  endforeach()
  get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  string(APPEND lines "languages=${languages}\n")
  foreach(policy CMP0116 CMP0118 CMP0135 CMP0141)
    if(POLICY ${policy})
      cmake_policy(GET ${policy} setting)
      string(APPEND lines "policy ${policy}=${setting}\n")
    endif()
  endforeach()
  file(WRITE "${file}" "${lines}")
endfunction()

# The consumer's own choices, which the package must leave alone.
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_FLAGS "-DCONSUMER_FLAG")
set(CMAKE_POSITION_INDEPENDENT_CODE OFF)
set(CMAKE_MODULE_PATH "${CMAKE_CURRENT_SOURCE_DIR}/modules")
add_compile_options(-Wall)

dump_settings("${CMAKE_BINARY_DIR}/before.txt")
find_package(CUDAToolkit REQUIRED)
dump_settings("${CMAKE_BINARY_DIR}/after_cuda.txt")
find_package(tvm_ffi CONFIG REQUIRED)
dump_settings("${CMAKE_BINARY_DIR}/after_find.txt")
tvm_ffi_generate_cubin(OUTPUT k.cubin SOURCE k.cu ARCH sm_90)
tvm_ffi_embed_cubin(OUTPUT k.o SOURCE k.cc CUBIN ${CMAKE_BINARY_DIR}/k.cubin NAME k)
add_executable(consumer k.cc)
tvm_ffi_target_embed_cubin(consumer NAME k2 CUBIN ${CMAKE_BINARY_DIR}/k.cubin)
tvm_ffi_embed_bin_into(consumer SYMBOL k3 BIN ${CMAKE_BINARY_DIR}/k.cubin)
dump_settings("${CMAKE_BINARY_DIR}/after_use.txt")
"""


@pytest.mark.parametrize("mode", ["source", "installed"])
def test_find_package_leaves_consumer_settings_alone(mode, cuda_cmake, package_args, tmp_path):
    source = _project(tmp_path, SETTINGS_DUMP, languages="CXX")
    (source / "k.cu").write_text('extern "C" __global__ void k() {}\n')
    (source / "k.cc").write_text("int main() { return 0; }\n")
    build = tmp_path / "build"
    cuda_cmake.configure(source, build, *package_args(mode))

    def lines(name: str) -> set[str]:
        return set((build / name).read_text().splitlines())

    reference = lines("after_cuda.txt")
    assert "languages=CXX" in reference  # the dump itself works: CUDA was not enabled
    assert "dir COMPILE_OPTIONS=-Wall" in reference
    for stage in ("after_find.txt", "after_use.txt"):
        changed = lines(stage) ^ reference
        assert not changed, f"{stage} differs from before find_package(tvm_ffi): {sorted(changed)}"


def test_add_subdirectory(cmake, tmp_path):
    """A project that vendors the repository gets the same target and functions, and a
    later find_package(tvm_ffi) (e.g. from a dependency) reuses that target."""
    body = f"""
add_subdirectory("{REPO}" tvm_ffi)
get_target_property(include_dirs tvm_ffi::header INTERFACE_INCLUDE_DIRECTORIES)
message(STATUS "report: subdir_include=${{include_dirs}}")
find_package(tvm_ffi CONFIG REQUIRED PATHS "{REPO}/cmake" NO_DEFAULT_PATH)
""" + REPORT.format(request="")
    source = _project(tmp_path, body)
    build = tmp_path / "build"
    report = _report(cmake.configure(source, build))
    install = cmake.run("--install", str(build), "--prefix", str(tmp_path / "prefix"))
    assert install.returncode == 0, install.describe()
    assert not (tmp_path / "prefix").exists(), "a vendored tvm_ffi installed its files"
    assert report["subdir_include"] == f"$<BUILD_INTERFACE:{REPO / 'include'}>"
    assert report["target_include"] == report["subdir_include"]
    assert report["version"] == _version()
