"""Installing next to FlashInfer and sglang, which require apache-tvm-ffi (docs/install.md).

Offline: each test makes a fresh virtual environment and installs from a folder of stand-in
wheels: apache-tvm-ffi 0.1.11 (apache's marker file and the files it shares with us),
``sglang`` and ``flashinfer-python`` declaring apache-tvm-ffi exactly as the real ones do,
and tvm-ffi-cubin holding this checkout's Python package and the interpreter-start hook,
as setup.py writes them. Installers never reach an index: pip runs with ``--no-index`` and
refuses to run outside a virtual environment, uv with ``offline``/``no-index``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_docs import all_blocks

from helpers.wheels import write_wheel
from tvm_ffi import _mixed_install
from tvm_ffi._version import __version__

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "tvm_ffi"
SGLANG_REQUIRES = ("apache-tvm-ffi==0.1.11",)  # sglang 0.5.23
FLASHINFER_REQUIRES = ("apache-tvm-ffi<0.2,>=0.1.11",)  # flashinfer-python 0.7.2.post1


def _uv() -> str | None:
    beside = Path(sys.executable).with_name("uv")
    return str(beside) if beside.is_file() else shutil.which("uv")


needs_uv = pytest.mark.skipif(_uv() is None, reason="uv is not installed")


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheelhouse")
    ours = {
        f"tvm_ffi/{p.relative_to(PACKAGE).as_posix()}": p.read_bytes()
        for p in PACKAGE.rglob("*.py")
        if "__pycache__" not in p.parts
    }
    ours["tvm_ffi/lib/libtvm_ffi.so"] = b"tvm-ffi-cubin"
    ours[_mixed_install.PTH_NAME] = _mixed_install.pth_line()  # as setup.py's build_py
    write_wheel(out, "tvm-ffi-cubin", __version__, ours)
    apache = {
        name: "" for name in ("tvm_ffi/_ffi_api.py", "tvm_ffi/_dunder.py", "tvm_ffi/libinfo.py")
    }
    apache["tvm_ffi/__init__.py"] = "__version__ = '0.1.11'\n"
    apache["tvm_ffi/lib/libtvm_ffi.so"] = b"apache-tvm-ffi"
    write_wheel(out, "apache-tvm-ffi", "0.1.11", apache)
    write_wheel(out, "sglang", "0.5.23", {"sglang/__init__.py": ""}, SGLANG_REQUIRES)
    write_wheel(
        out, "flashinfer-python", "0.7.2.post1", {"flashinfer/__init__.py": ""}, FLASHINFER_REQUIRES
    )
    return out


def _env(work: Path, wheelhouse: Path, venv: Path | None) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PIP_", "UV_", "PYTHON")) and k != "VIRTUAL_ENV"
    }
    config = work / "uv.toml"
    config.write_text(f'no-index = true\noffline = true\nfind-links = ["{wheelhouse}"]\n')
    env.update(
        PIP_NO_INDEX="1",
        PIP_FIND_LINKS=str(wheelhouse),
        PIP_REQUIRE_VIRTUALENV="1",  # never the interpreter that runs the tests
        PIP_CONFIG_FILE=os.devnull,
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        UV_CONFIG_FILE=str(config),
        UV_OFFLINE="1",
        UV_NO_CACHE="1",
        UV_PYTHON_DOWNLOADS="never",
    )
    path = []
    if _uv() is not None:  # uv alone on PATH: not the interpreter of its folder
        (work / "bin").mkdir(exist_ok=True)
        (work / "bin" / "uv").symlink_to(_uv())
        path.append(str(work / "bin"))
    if venv is not None:
        env["VIRTUAL_ENV"] = str(venv)
        path.insert(0, str(venv / "bin"))
    env["PATH"] = os.pathsep.join([*path, env.get("PATH", "")])
    return env


def _venv(work: Path, with_pip: bool) -> Path:
    venv = work / ".venv"
    base = getattr(sys, "_base_executable", sys.executable)
    if with_pip:
        subprocess.run([base, "-m", "venv", str(venv)], check=True, capture_output=True)
    else:
        subprocess.run([_uv(), "venv", "-q", "-p", base, str(venv)], check=True)
    return venv


def _bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def _install_blocks() -> list:
    return [pytest.param(b, id=b.id) for b in all_blocks() if b.marker == "install"]


def test_the_section_has_a_block_per_installer():
    texts = [b.values[0].text for b in _install_blocks()]
    assert [("uv sync" in t, "uv pip" in t, "python -m pip" in t) for t in texts] == [
        (False, True, False),
        (True, False, False),
        (False, False, True),
    ]


@pytest.mark.parametrize("block", _install_blocks())
def test_install_block(block, wheelhouse, tmp_path):
    uses_uv = "uv " in block.text
    if uses_uv and _uv() is None:
        pytest.skip("uv is not installed")
    # A uv project makes its own .venv; the others run in an activated one.
    venv = None if "uv sync" in block.text else _venv(tmp_path, with_pip=not uses_uv)
    proc = _bash(block.text, tmp_path, _env(tmp_path, wheelhouse, venv))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # The last line is `tvm_ffi.__version__`: this package's, not apache's 0.1.11.
    assert proc.stdout.splitlines()[-1] == __version__
    python = (venv or tmp_path / ".venv") / "bin" / "python"
    check = subprocess.run(
        [str(python), "-c",
         "import importlib.metadata as m, sys, tvm_ffi\n"
         "names = {d.metadata['Name'] for d in m.distributions()}\n"
         "print(sorted(n for n in names if 'tvm' in n or n in ('sglang', 'flashinfer-python')))\n"
         "print([type(f).__name__ for f in sys.meta_path if 'Refuse' in type(f).__name__])"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert check.stdout.splitlines() == [
        "['flashinfer-python', 'sglang', 'tvm-ffi-cubin']",
        "[]",  # the interpreter-start hook found nothing to refuse
    ]


def _site(venv: Path) -> Path:
    return venv / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"


PRINT_VERSION = "python -c 'import tvm_ffi; print(tvm_ffi.__version__)'"


def _import_error(python: Path) -> str:
    proc = subprocess.run([str(python), "-c", "import tvm_ffi"], capture_output=True, text=True)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    return proc.stderr.splitlines()[-1]


def _mixed(folder: Path) -> str:
    fix = (
        f"Fix: `{_mixed_install.FIX_PIP}` (with uv: `{_mixed_install.FIX_UV}`). "
        "See docs/install.md, 'Next to FlashInfer and sglang'."
    )
    return (
        f"ImportError: tvm_ffi in {folder} mixes two distributions: tvm-ffi-cubin and "
        "apache-tvm-ffi (its _ffi_api.py is there). Both install the package `tvm_ffi` and "
        f"overwrite each other's files. {fix}"
    )


@pytest.mark.parametrize("apache_last", [True, False], ids=["apache-last", "ours-last"])
def test_pip_mixed_install_names_the_fix_in_both_orders(apache_last, wheelhouse, tmp_path):
    venv = _venv(tmp_path, with_pip=True)
    env = _env(tmp_path, wheelhouse, venv)
    order = ["sglang flashinfer-python", "tvm-ffi-cubin"]
    for what in reversed(order) if apache_last else order:
        proc = _bash(f"python -m pip install {what}", tmp_path, env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    folder = _site(venv)
    # apache-last: its __init__.py won and only the hook speaks; ours-last: our __init__.py.
    assert (folder / "tvm_ffi" / "__init__.py").read_text().startswith(
        "__version__ = '0.1.11'"
    ) is apache_last
    assert _import_error(venv / "bin" / "python") == _mixed(folder / "tvm_ffi")
    proc = _bash(
        f"{_mixed_install.FIX_PIP} && {PRINT_VERSION}",
        tmp_path,
        env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1] == __version__


def test_pip_uninstall_of_apache_alone_names_the_reinstall(wheelhouse, tmp_path):
    venv = _venv(tmp_path, with_pip=True)
    env = _env(tmp_path, wheelhouse, venv)
    proc = _bash("python -m pip install tvm-ffi-cubin && python -m pip install sglang && "
                 "python -m pip uninstall -y apache-tvm-ffi", tmp_path, env)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    folder = (
        venv
        / "lib"
        / f"python{sys.version_info[0]}.{sys.version_info[1]}"
        / "site-packages"
        / "tvm_ffi"
    )
    assert _import_error(venv / "bin" / "python") == (
        f"ImportError: tvm_ffi in {folder} is incomplete: its __init__.py is missing "
        "(uninstalling apache-tvm-ffi deletes the files it shared with tvm-ffi-cubin). "
        f"Fix: `{_mixed_install.FIX_PIP}` (with uv: `{_mixed_install.FIX_UV}`). "
        "See docs/install.md, 'Next to FlashInfer and sglang'."
    )


@needs_uv
def test_uv_mixed_install_names_the_fix(wheelhouse, tmp_path):
    venv = _venv(tmp_path, with_pip=False)
    env = _env(tmp_path, wheelhouse, venv)
    proc = _bash("uv pip install tvm-ffi-cubin && uv pip install sglang", tmp_path, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    folder = _site(venv)
    assert _import_error(venv / "bin" / "python") == _mixed(folder / "tvm_ffi")
    proc = _bash(
        f"{_mixed_install.FIX_UV} && {PRINT_VERSION}",
        tmp_path,
        env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1] == __version__
