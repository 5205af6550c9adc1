"""A CuTe-DSL kernel compiled with ``--enable-tvm-ffi`` and run with this package as tvm_ffi.

An elementwise add over 1-D float32 CUDA tensors: compiled once by the DSL's JIT (the host
entry ``__tvm_ffi_<name>`` the DSL generates on the tvm-ffi C ABI, wrapped by
``tvm_ffi.Function.__from_extern_c__``) and called with torch tensors; then exported to an
object file and loaded back with ``cute.runtime.load_module(..., enable_tvm_ffi=True)``, the
path FlashInfer's CuTe-DSL cache takes (which loads ``tvm_ffi.libinfo.find_libtvm_ffi()``).
Both results are compared with torch. A profile hook records every function of ``tvm_ffi``
the DSL's own code called, printed at the end with the libtvm_ffi.so files mapped.

Usage: python cute_dsl_kernel.py WORKDIR   (prints a SUMMARY line last; exit 1 on failure)
"""

# No `from __future__ import annotations`: the DSL reads the kernels' annotations as types.
import collections
import sys
import traceback
from pathlib import Path

import tvm_ffi

TVM_FFI_DIR = str(Path(tvm_ffi.__file__).parent)
CALLS: collections.Counter = collections.Counter()
RESULTS: list[tuple[str, bool]] = []


def record(what: str, ok: bool, detail: str = "") -> None:
    RESULTS.append((what, ok))
    print(f"{'PASS' if ok else 'FAIL'} {what}{': ' + detail if detail else ''}", flush=True)


def _c_functions() -> dict[int, str]:
    """id -> name of the C-level callables tvm_ffi exposes (module functions, class methods
    such as ``Function.__from_extern_c__``): a profile hook sees only the object called."""
    known = {}
    for name in getattr(tvm_ffi, "__all__", ()):
        value = getattr(tvm_ffi, name, None)
        members = vars(value).items() if isinstance(value, type) else [("", value)]
        for attr, _ in members:
            obj = getattr(value, attr) if attr else value
            if type(obj).__name__ == "builtin_function_or_method":
                known[id(obj)] = f"tvm_ffi.{name}" + (f".{attr}" if attr else "")
    return known


def _profile(dsl_dir: str):
    """A sys.setprofile hook counting calls from the DSL's files into tvm_ffi."""
    known = _c_functions()

    def hook(frame, event, arg):
        if event == "call":
            caller = frame.f_back
            if (
                caller is not None
                and frame.f_code.co_filename.startswith(TVM_FFI_DIR)
                and caller.f_code.co_filename.startswith(dsl_dir)
            ):
                module = frame.f_globals.get("__name__", "?")
                CALLS[f"{module}.{frame.f_code.co_qualname}"] += 1
        elif event == "c_call" and frame.f_code.co_filename.startswith(dsl_dir):
            name = known.get(id(arg))
            module = getattr(arg, "__module__", None) or ""
            if name is None and module.startswith("tvm_ffi"):
                name = f"{module}.{getattr(arg, '__qualname__', repr(arg))}"
            if name is not None:
                CALLS[f"{name} (C)"] += 1

    return hook


def mapped(fragment: str) -> list[str]:
    paths = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            parts = line.split(maxsplit=5)
            if len(parts) == 6 and fragment in parts[5] and parts[5].strip() not in paths:
                paths.append(parts[5].strip())
    return paths


def _gpu() -> bool:
    """Whether torch sees a GPU; without one the kernel is compiled and loaded, not called."""
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def check_add(func, n: int, what: str) -> None:
    import torch

    a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    c = torch.empty_like(a)
    with tvm_ffi.use_torch_stream():
        func(a, b, c, n)
    torch.cuda.synchronize()
    err = (c - (a + b)).abs().max().item()
    record(what, err == 0, f"max abs error {err:.3g}")


def run(work: Path) -> None:
    import cuda.bindings.driver as cuda
    import cutlass
    import cutlass.cute as cute

    gpu = _gpu()
    dsl_dir = str(Path(cutlass.__file__).parent)
    print(f"tvm_ffi {getattr(tvm_ffi, '__version__', '?')} from {tvm_ffi.__file__}")
    print(f"cutlass DSL from {dsl_dir}")

    @cute.kernel
    def add_kernel(g_a: cute.Tensor, g_b: cute.Tensor, g_c: cute.Tensor, n: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        i = bidx * 128 + tidx
        if i < n:
            g_c[i] = g_a[i] + g_b[i]

    @cute.jit
    def add(
        m_a: cute.Tensor,
        m_b: cute.Tensor,
        m_c: cute.Tensor,
        n: cutlass.Int32,
        stream: cuda.CUstream,
    ):
        add_kernel(m_a, m_b, m_c, n).launch(
            grid=((n + 127) // 128, 1, 1), block=(128, 1, 1), stream=stream
        )

    def fake():
        return cute.runtime.make_fake_compact_tensor(
            cutlass.Float32, (cute.sym_int(),), assumed_align=4
        )

    sys.setprofile(_profile(dsl_dir))
    try:
        stream = cute.runtime.make_fake_stream(use_tvm_ffi_env_stream=True)
        compiled = cute.compile(
            add, fake(), fake(), fake(), cutlass.Int32(1), stream, options="--enable-tvm-ffi"
        )
        record("cute.compile(..., options='--enable-tvm-ffi')", True, type(compiled).__name__)
        # With keyword support (the env stream argument) the DSL wraps the Function.
        inner = (
            compiled if isinstance(compiled, tvm_ffi.Function) else compiled.__tvm_ffi_object__()
        )
        record(
            "the compiled function is (or wraps) a tvm_ffi.Function of this package",
            isinstance(inner, tvm_ffi.Function),
            f"{type(compiled).__name__} over {type(inner).__module__}.{type(inner).__name__}",
        )
        for n in (1, 1000, 4099) if gpu else ():
            check_add(compiled, n, f"JIT-compiled add, n={n}")

        obj = work / "evid_add.o"
        compiled.export_to_c(str(obj), function_name="evid_add")
        module = cute.runtime.load_module(str(obj), enable_tvm_ffi=True)
        loaded = module.evid_add
        what = "exported .o loaded by cute.runtime.load_module(enable_tvm_ffi=True)"
        if gpu:
            check_add(loaded, 3000, what + ", n=3000")
        else:
            record(what, isinstance(loaded, tvm_ffi.Function), type(loaded).__name__)
        libs = cute.runtime.find_runtime_libraries(enable_tvm_ffi=True)
        ours = tvm_ffi.libinfo.find_libtvm_ffi()
        record(
            "the DSL's runtime libraries name this package's libtvm_ffi.so",
            ours in libs,
            ", ".join(libs),
        )
    finally:
        sys.setprofile(None)


def main() -> int:
    work = Path(sys.argv[1])
    work.mkdir(parents=True, exist_ok=True)
    try:
        run(work)
    except Exception as exc:  # the summary names it; the traceback is above it
        traceback.print_exc()
        record("raised", False, f"{type(exc).__name__}: {exc}")
    print("tvm_ffi functions the DSL called (calls):")
    for name, count in sorted(CALLS.items()):
        print(f"  {name}: {count}")
    libs = [p for p in mapped("libtvm_ffi") if Path(p).name == "libtvm_ffi.so"]
    ours = str(Path(tvm_ffi.libinfo.find_libtvm_ffi()).resolve())
    record(
        "the only libtvm_ffi.so mapped is this package's",
        [str(Path(p).resolve()) for p in libs] == [ours],
        ", ".join(libs),
    )
    failed = [what for what, ok in RESULTS if not ok]
    where = "" if _gpu() else "no GPU: compiled and loaded only; "
    print(
        f"SUMMARY cute-dsl: {'PASS' if not failed else 'FAIL'} ({where}"
        f"{len(RESULTS) - len(failed)}/{len(RESULTS)} checks; "
        f"{len(CALLS)} distinct tvm_ffi functions called by the DSL)"
        + (f"; failed: {'; '.join(failed)}" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
