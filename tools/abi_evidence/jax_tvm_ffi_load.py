"""jax-tvm-ffi 0.1.3's prebuilt jax_tvm_ffi.so, loaded and called with this package's tvm_ffi.

The library was built against apache-tvm-ffi (it links libtvm_ffi.so and imports
TVMFFIErrorSetRaised, TVMFFIGetTypeInfo, ...). Its three exported functions need no jax:
``registered_count`` and ``get_last_workspace_peak`` (ints), and ``register_tvm_ffi_handler``,
which takes a tvm_ffi.Function and an Array of strings across the C ABI, counts it, and
raises a C++ error on a bad argument spec (which must come back as a Python exception).

Usage: python jax_tvm_ffi_load.py [WHEEL]   (default: the jax_tvm_ffi-0.1.3 wheel under
.client-wheels/abi, $EVID_ROOT/wheels or /tmp/abi_wheels). Prints a SUMMARY line last.
"""

from __future__ import annotations

import glob
import os
import sys
import tempfile
import traceback
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PATTERN = "jax_tvm_ffi-0.1.3-*.whl"
RESULTS: list[tuple[str, bool]] = []


def record(what: str, ok: bool, detail: str = "") -> None:
    RESULTS.append((what, ok))
    print(f"{'PASS' if ok else 'FAIL'} {what}{': ' + detail if detail else ''}", flush=True)


def find_wheel() -> Path:
    roots = [
        REPO / ".client-wheels" / "abi",
        Path(os.environ.get("EVID_ROOT", "/tmp/abi-evidence")) / "wheels",
    ]
    for root in [*roots, Path("/tmp/abi_wheels")]:
        found = sorted(glob.glob(str(root / PATTERN)))
        if found:
            return Path(found[0])
    raise FileNotFoundError(f"no {PATTERN} in {', '.join(map(str, roots))} or /tmp/abi_wheels")


def run(wheel: Path, work: Path) -> None:
    import tvm_ffi

    print(f"tvm_ffi {getattr(tvm_ffi, '__version__', '?')} from {tvm_ffi.__file__}")
    with zipfile.ZipFile(wheel) as zf:  # the .so alone: the package's __init__ imports jax
        so = Path(zf.extract("jax_tvm_ffi/jax_tvm_ffi.so", work))
    mod = tvm_ffi.load_module(str(so))
    record("tvm_ffi.load_module(jax_tvm_ffi.so)", True, f"{so} from {wheel.name}")
    count = mod.registered_count()
    record("registered_count() before any registration", count == 0, repr(count))
    peak = mod.get_last_workspace_peak()
    record("get_last_workspace_peak()", peak == 0, repr(peak))

    tvm_ffi.register_global_func("abi_evidence.add_one", lambda x: x + 1)
    func = tvm_ffi.get_global_func("abi_evidence.add_one")
    record("a Python function as tvm_ffi.Function", func(41) == 42, "add_one(41) == 42")
    handler = mod.register_tvm_ffi_handler(
        func, ["args", "rets"], int(tvm_ffi.DLDeviceType.kDLCPU), 0, False, False
    )
    record(
        "register_tvm_ffi_handler(Function, Array<String>, ...)",
        handler is not None,
        f"returned {handler!r}",
    )
    # jax.ffi.pycapsule takes either; apache-tvm-ffi hands a void* back as ctypes.c_void_p.
    print(
        f"INFO the handler (a void*) came back as {type(handler).__name__} "
        "(apache-tvm-ffi: c_void_p)"
    )
    count = mod.registered_count()
    record("registered_count() after one registration", count == 1, repr(count))
    try:
        mod.register_tvm_ffi_handler(
            func, ["no_such_spec"], int(tvm_ffi.DLDeviceType.kDLCPU), 0, False, False
        )
    except Exception as exc:  # the library's C++ error, raised through TVMFFIErrorSetRaised
        record(
            "a C++ error of the library comes back as a Python exception",
            True,
            f"{type(exc).__name__}: {exc}",
        )
    else:
        record(
            "a C++ error of the library comes back as a Python exception", False, "nothing raised"
        )


def main() -> int:
    try:
        wheel = Path(sys.argv[1]) if len(sys.argv) > 1 else find_wheel()
        with tempfile.TemporaryDirectory() as work:
            run(wheel, Path(work))
    except Exception as exc:  # the summary names it; the traceback is above it
        traceback.print_exc()
        record("raised", False, f"{type(exc).__name__}: {exc}")
    failed = [what for what, ok in RESULTS if not ok]
    print(
        f"SUMMARY jax-tvm-ffi load: {'PASS' if not failed else 'FAIL'} "
        f"({len(RESULTS) - len(failed)}/{len(RESULTS)} checks)"
        + (f"; failed: {'; '.join(failed)}" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
