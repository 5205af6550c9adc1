"""One folder, two distributions: refusing `import tvm_ffi` with the command that fixes it.

tvm-ffi-cubin and apache-tvm-ffi both install the import package ``tvm_ffi``. FlashInfer and
sglang require apache-tvm-ffi, so pip or uv installs it beside this package, and whichever
is installed last overwrites the other's shared files (``__init__.py``, ``libinfo.py``,
``lib/libtvm_ffi.so``, ...). Uninstalling apache-tvm-ffi afterwards deletes those shared files
too, so the fix is always: uninstall apache-tvm-ffi, then reinstall this package.

Two places detect it, so that both install orders are covered:

* our ``__init__.py`` (this package installed last): it checks for :data:`MARKER`;
* ``tvm_ffi_cubin.pth`` at the top of site-packages (apache-tvm-ffi installed last: its
  ``__init__.py`` would run and none of ours). site.py executes the line of :func:`pth_line`
  at every interpreter start: two ``stat`` calls; only when they find a problem does it load
  this file (by path: importing the package would run apache's ``__init__``) and call
  :func:`install_finder`, whose finder refuses ``tvm_ffi`` and its submodules.

Standard library only; nothing here runs at import.
"""

from __future__ import annotations

import os
import sys

#: A file every apache-tvm-ffi release ships in ``tvm_ffi/`` and this package never does.
MARKER = "_ffi_api.py"
#: The interpreter-start hook, installed beside the ``tvm_ffi`` folder (setup.py writes it).
PTH_NAME = "tvm_ffi_cubin.pth"
FIX_PIP = (
    "python -m pip uninstall -y apache-tvm-ffi && "
    "python -m pip install --force-reinstall --no-deps tvm-ffi-cubin"
)
FIX_UV = "uv pip uninstall apache-tvm-ffi && uv pip install --reinstall --no-deps tvm-ffi-cubin"


def problem(folder: str) -> str | None:
    """The message for the ``tvm_ffi`` folder ``folder``, or None when it is ours alone."""
    fix = (
        f"Fix: `{FIX_PIP}` (with uv: `{FIX_UV}`). "
        "See docs/install.md, 'Next to FlashInfer and sglang'."
    )
    if os.path.exists(os.path.join(folder, MARKER)):
        return (
            f"tvm_ffi in {folder} mixes two distributions: tvm-ffi-cubin and apache-tvm-ffi "
            f"(its {MARKER} is there). Both install the package `tvm_ffi` and overwrite each "
            f"other's files. {fix}"
        )
    if not os.path.exists(os.path.join(folder, "__init__.py")):
        return (
            f"tvm_ffi in {folder} is incomplete: its __init__.py is missing (uninstalling "
            f"apache-tvm-ffi deletes the files it shared with tvm-ffi-cubin). {fix}"
        )
    return None


def refuse(folder: str) -> None:
    """Raises ImportError naming the fix when ``folder`` holds a mixed or broken install."""
    text = problem(folder)
    if text is not None:
        raise ImportError(text, name="tvm_ffi", path=folder)


class _RefuseTvmFfi:
    """A meta path finder that refuses ``tvm_ffi`` and its submodules; other names pass."""

    def __init__(self, folder: str, text: str) -> None:
        self.folder = folder
        self.text = text

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == "tvm_ffi" or name.startswith("tvm_ffi."):
            raise ImportError(self.text, name=name, path=self.folder)
        return None


def install_finder(folder: str) -> None:
    """Called by the interpreter-start hook: refuse ``tvm_ffi`` if ``folder`` is not ours alone."""
    text = problem(folder)
    if text is not None and not any(isinstance(f, _RefuseTvmFfi) for f in sys.meta_path):
        sys.meta_path.insert(0, _RefuseTvmFfi(folder, text))


def pth_line() -> str:
    """The one line of :data:`PTH_NAME`. site.py executes a ``.pth`` line that starts with
    ``import`` inside ``site.addpackage``, where ``sitedir`` names the folder of the file."""
    return (
        "import os; _tvm_ffi = os.path.join(sitedir, 'tvm_ffi'); "
        f"(os.path.exists(os.path.join(_tvm_ffi, {MARKER!r})) "
        "or not os.path.exists(os.path.join(_tvm_ffi, '__init__.py'))) "
        "and os.path.exists(os.path.join(_tvm_ffi, '_mixed_install.py')) "
        "and __import__('runpy').run_path(os.path.join(_tvm_ffi, '_mixed_install.py'))"
        "['install_finder'](_tvm_ffi)\n"
    )
