"""FlashInfer modules built against apache-tvm-ffi, loaded and called with this package.

``build`` (run with apache-tvm-ffi as ``tvm_ffi``): FlashInfer's own JIT builds the modules
of MODULES into a fresh workspace, each is called once against torch where a GPU is
present (the baseline), and each ``.so`` is copied to FlashInfer's prebuilt (AOT) folder
``flashinfer/data/aot/<name>/<name>.so``, with a manifest of their digests.

``load`` (run with this package as ``tvm_ffi``, FLASHINFER_DISABLE_JIT=1): FlashInfer's
public API finds those prebuilt files (``JitSpec.try_load`` loads an AOT artifact before any
build), so the very files apache's build produced are loaded and called; the checks then
show that no build happened (the files are unchanged, FlashInfer's spec reports the AOT
path, no compiler ran, the fresh workspace holds no module) and which ``tvm_ffi`` and
``libtvm_ffi.so`` the process used.

Usage: python flashinfer_evidence.py {build,load} MANIFEST
       python flashinfer_evidence.py env WORKDIR  (prints the exports both processes need)
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import sys
import traceback
from pathlib import Path

# The modules: (flashinfer.jit submodule, its JitSpec generator). fp8_gemm_sm90 (sm_90a only,
# a CUTLASS GEMM: minutes of nvcc) is left out unless EVID_FLASHINFER_MODULES names it.
SPECS = {
    "norm": ("norm", "gen_norm_module"),
    "page": ("page", "gen_page_module"),
    "fp8_gemm_sm90": ("gemm", "gen_fp8_blockscale_gemm_sm90_module"),
}
MODULES = tuple(os.environ.get("EVID_FLASHINFER_MODULES", "norm,page").split(","))
RESULTS: list[tuple[str, bool, str]] = []


def record(what: str, ok: bool, detail: str = "") -> None:
    RESULTS.append((what, ok, detail))
    print(f"{'PASS' if ok else 'FAIL'} {what}{': ' + detail if detail else ''}", flush=True)


def brief(exc: BaseException) -> str:
    """The exception's type and its first error line (a failed build's message is ninja's log)."""
    lines = str(exc).splitlines() or [""]
    errors = [line.strip() for line in lines if "error" in line.lower() and "FAILED" not in line]
    return f"{type(exc).__name__}: {lines[0]}" + (f" ... {errors[0]}" if errors else "")


def digest(path: Path) -> dict:
    st = path.stat()
    return {
        "path": str(path),
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "mtime_ns": st.st_mtime_ns,
        "size": st.st_size,
    }


def mapped_files(fragment: str) -> list[str]:
    """Files mapped into this process whose path contains ``fragment`` (/proc/self/maps)."""
    found = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            parts = line.split(maxsplit=5)
            if len(parts) == 6 and fragment in parts[5] and parts[5].strip() not in found:
                found.append(parts[5].strip())
    return found


def spec(name: str):
    import importlib

    if name not in SPECS:
        raise ValueError(
            f"EVID_FLASHINFER_MODULES: unknown module {name!r} (known: {', '.join(SPECS)})"
        )
    module, gen = SPECS[name]
    return getattr(importlib.import_module(f"flashinfer.jit.{module}"), gen)()


# ------------------------------------------------------------------ calls vs torch


def max_err(out, ref) -> float:
    return (out.float() - ref.float()).abs().max().item()


def compare(what: str, out, ref, tol: float) -> None:
    """PASS when |out - ref| <= tol + tol * |ref| everywhere (ref rounded to out's dtype: the
    kernels compute in fp32 and round once); prints the max abs error either way."""
    ref = ref.to(out.dtype).float()
    ok = bool(((out.float() - ref).abs() <= tol + tol * ref.abs()).all())
    record(what, ok, f"max abs error {max_err(out, ref):.3g} (rtol = atol = {tol})")


def check_norm() -> None:
    import torch
    from flashinfer.norm import fused_add_rmsnorm, rmsnorm

    for dtype, tol in ((torch.float16, 1e-2), (torch.bfloat16, 2e-2)):
        x = torch.randn(37, 1024, dtype=dtype, device="cuda")
        w = torch.randn(1024, dtype=dtype, device="cuda")

        def ref_norm(v, w=w):
            v = v.float()
            return v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()

        compare(f"norm.rmsnorm {dtype}", rmsnorm(x, w, eps=1e-6), ref_norm(x), tol)
        res = torch.randn_like(x)
        ref_res = x.float() + res.float()
        x2 = x.clone()
        fused_add_rmsnorm(x2, res, w, eps=1e-6)  # in place: x2 <- norm(x + res), res <- x + res
        compare(f"norm.fused_add_rmsnorm residual {dtype}", res, ref_res, tol)
        compare(f"norm.fused_add_rmsnorm {dtype}", x2, ref_norm(ref_res.to(dtype)), tol)


def check_page() -> None:
    import torch
    from flashinfer.page import append_paged_kv_cache, get_batch_indices_positions, get_seq_lens

    dev, page_size, heads, dim = "cuda", 16, 4, 64
    # Appends shorter than the sequences: positions start past the tokens already cached.
    append_len = torch.tensor([40, 5, 25, 20], dtype=torch.int32, device=dev)
    append_indptr = torch.cat([append_len.new_zeros(1), append_len.cumsum(0)]).int()
    pages = torch.tensor([3, 1, 2, 2], dtype=torch.int32, device=dev)
    kv_indptr = torch.cat([pages.new_zeros(1), pages.cumsum(0)]).int()
    kv_indices = torch.randperm(20, device=dev)[: int(pages.sum())].int()  # pages out of order
    last_len = torch.tensor([13, 8, 9, 6], dtype=torch.int32, device=dev)
    nnz = int(append_len.sum())
    k = torch.randn(nnz, heads, dim, dtype=torch.float16, device=dev)
    v = torch.randn_like(k)
    cache = torch.randn(20, 2, page_size, heads, dim, dtype=torch.float16, device=dev)
    seq_lens = get_seq_lens(kv_indptr, last_len, page_size)
    batch, pos = get_batch_indices_positions(append_indptr, seq_lens, nnz)
    ref_batch = torch.repeat_interleave(torch.arange(4, device=dev), append_len.long())
    starts = (seq_lens - append_len).long()[ref_batch]
    ref_pos = starts + torch.arange(nnz, device=dev) - append_indptr.long()[ref_batch]
    ok = torch.equal(batch.long(), ref_batch) and torch.equal(pos.long(), ref_pos)
    record(
        "page.get_batch_indices_positions", ok, "equal to the torch reference" if ok else "differs"
    )
    ref = cache.clone()
    page = kv_indices.long()[kv_indptr.long()[ref_batch] + ref_pos // page_size]
    ref[page, 0, ref_pos % page_size] = k
    ref[page, 1, ref_pos % page_size] = v
    append_paged_kv_cache(k, v, batch, pos, cache, kv_indices, kv_indptr, last_len)
    err = max_err(cache, ref)
    record("page.append_paged_kv_cache", err == 0, f"max abs error {err:.3g} (tol 0)")


def check_fp8_gemm_sm90() -> None:
    import torch
    from flashinfer.gemm import fp8_blockscale_gemm_sm90

    a = torch.randn(64, 512, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(256, 512, dtype=torch.bfloat16, device="cuda")
    out = fp8_blockscale_gemm_sm90(a, b, out_dtype=torch.bfloat16)
    ref = a.float() @ b.float().T
    # Both operands are quantized to e4m3 in 128-wide blocks: a relative error over the whole.
    err = ((out.float() - ref).norm() / ref.norm()).item()
    record("fp8_blockscale_gemm_sm90", err < 0.05, f"relative error {err:.3g} (limit 0.05)")


CHECKS = {"norm": check_norm, "page": check_page, "fp8_gemm_sm90": check_fp8_gemm_sm90}


def gpu_present() -> bool:
    import torch

    return torch.cuda.is_available()


def describe_tvm_ffi() -> dict:
    import tvm_ffi

    lib = tvm_ffi.libinfo.find_libtvm_ffi()
    print(
        f"tvm_ffi {getattr(tvm_ffi, '__version__', '?')} from {tvm_ffi.__file__}; libtvm_ffi: {lib}"
    )
    return {
        "tvm_ffi": tvm_ffi.__file__,
        "version": getattr(tvm_ffi, "__version__", "?"),
        "lib": lib,
    }


# ------------------------------------------------------------------ the two processes


def build_one(name: str, inc: str, aot_dir: Path) -> dict:
    """Builds one module by FlashInfer's JIT, copies it to the AOT folder, calls it on a GPU."""
    s = spec(name)
    aot = aot_dir / s.name / f"{s.name}.so"
    if aot.exists():  # a prebuilt file from an earlier run would be loaded, not built
        aot.unlink()
    s.build_and_load()
    so = s.jit_library_path
    ninja = (s.build_dir / "build.ninja").read_text()
    record(f"{name}: built by FlashInfer's JIT", so.is_file(), str(so))
    record(f"{name}: compiled against {inc}", str(inc) in ninja, "include path in build.ninja")
    aot.parent.mkdir(parents=True, exist_ok=True)
    tmp = aot.with_suffix(".so.partial")
    shutil.copy2(so, tmp)  # copy2 keeps the mtime: the AOT file is the built file
    os.replace(tmp, aot)
    entry = {"jit": digest(so), "aot": digest(aot)}
    if gpu_present():
        CHECKS[name]()
    return entry


def build(manifest: Path) -> None:
    from flashinfer.jit import env as jit_env

    import tvm_ffi

    built_with = describe_tvm_ffi()
    inc = tvm_ffi.libinfo.find_include_path()
    entries = {}
    for name in MODULES:
        try:  # a module that fails to build leaves the others to build
            entries[name] = build_one(name, inc, jit_env.FLASHINFER_AOT_DIR)
        except Exception as exc:
            traceback.print_exc()
            record(f"{name}: build", False, brief(exc))
    manifest.write_text(json.dumps({"built_with": built_with, "modules": entries}, indent=1))
    print(f"manifest: {manifest}")


def load(manifest: Path) -> None:
    from flashinfer.jit import env as jit_env

    import tvm_ffi

    data = json.loads(manifest.read_text())
    ours = describe_tvm_ffi()
    apache_dir = str(Path(data["built_with"]["tvm_ffi"]).parent.parent)
    record(
        "tvm_ffi is this package, not the one the modules were built with",
        ours["tvm_ffi"] != data["built_with"]["tvm_ffi"]
        and not any(p and Path(p).resolve() == Path(apache_dir).resolve() for p in sys.path),
        f"{ours['tvm_ffi']} (built with {data['built_with']['tvm_ffi']}; "
        f"{apache_dir} not on sys.path)",
    )
    for name in MODULES:
        if name not in data["modules"]:
            record(f"{name}: in the manifest", False, f"built: {', '.join(data['modules'])}")
            continue
        entry = data["modules"][name]
        s = spec(name)
        path = s.get_library_path()
        record(
            f"{name}: FlashInfer resolves the prebuilt file",
            s.is_aot and str(path) == entry["aot"]["path"],
            f"is_aot={s.is_aot}, {path}",
        )
        try:  # the plain load first: its error (an undefined symbol) is the first thing to see
            tvm_ffi.load_module(str(path))
            record(f"{name}: tvm_ffi.load_module(prebuilt .so)", True)
        except Exception as exc:
            record(f"{name}: tvm_ffi.load_module(prebuilt .so)", False, brief(exc))
        try:
            if gpu_present():
                CHECKS[name]()
            else:  # no GPU: load only, through FlashInfer's own fast path
                record(f"{name}: loaded by JitSpec.try_load", s.try_load() is not None, str(path))
        except Exception as exc:  # the next module still runs; the traceback says where
            traceback.print_exc()
            record(f"{name}: calls", False, brief(exc))
        now = digest(Path(entry["aot"]["path"]))
        record(
            f"{name}: the file is the one apache's build wrote",
            now == entry["aot"] and now["sha256"] == entry["jit"]["sha256"],
            f"sha256 {now['sha256'][:16]}, mtime_ns {now['mtime_ns']} unchanged",
        )
        record(f"{name}: mapped into this process", entry["aot"]["path"] in mapped_files(".so"))
    built = (
        sorted(str(p) for p in jit_env.FLASHINFER_JIT_DIR.rglob("*.so"))
        if jit_env.FLASHINFER_JIT_DIR.exists()
        else []
    )
    record(
        "no module in this process's FlashInfer workspace",
        not built,
        str(jit_env.FLASHINFER_JIT_DIR),
    )
    libs = [p for p in mapped_files("libtvm_ffi") if Path(p).name == "libtvm_ffi.so"]
    record(
        "the only libtvm_ffi.so mapped is this package's",
        [str(Path(p).resolve()) for p in libs] == [str(Path(ours["lib"]).resolve())],
        ", ".join(libs),
    )
    theirs = mapped_files(apache_dir + "/")
    record(
        "nothing of the apache-tvm-ffi install is mapped",
        not theirs,
        ", ".join(theirs) or apache_dir,
    )
    record(
        "tvm_ffi.load_module is this package's",
        tvm_ffi.load_module.__module__.startswith("tvm_ffi"),
    )
    builds = compiler_runs()
    record(
        "no compiler, linker or ninja ran",
        not builds,
        "; ".join(builds) or "trap log empty of builds",
    )


# Invocations that only ask a tool about itself (torch and FlashInfer probe versions/archs).
_QUERIES = ("--version", "-v", "--list-gpu-arch", "-dumpversion", "-dumpfullversion")


def compiler_runs() -> list[str]:
    """The builds the trap wrappers (flashinfer_load_here.sh) logged: every nvcc, c++, g++,
    gcc, cc, ld and ninja call in this process and its children that is not a query."""
    log = Path(os.environ["EVID_TRAP_LOG"])
    lines = log.read_text().splitlines() if log.exists() else []
    return [line for line in lines if not (len(line.split()) == 2 and line.split()[1] in _QUERIES)]


def env_exports(work: Path) -> None:
    """Prints ``export`` lines for what FlashInfer's build and load need beyond the toolkit,
    as the client suite sets them (tests/clients/client_env.py): CPATH for the library
    headers it includes (cublasLt.h, curand.h) from pip's nvidia wheels, and where no
    driver is installed a link-time libcuda.so stand-in."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "clients"))
    import client_env

    env = client_env.child_env(work / "unused", work)
    for key in ("CPATH", "LIBRARY_PATH", "LD_LIBRARY_PATH"):
        if env.get(key) and env[key] != os.environ.get(key):
            print(f"export {key}={shlex.quote(env[key])}")


def main() -> int:
    mode, manifest = sys.argv[1], Path(sys.argv[2])
    if mode == "env":
        env_exports(manifest)
        return 0
    if mode not in ("build", "load"):
        raise SystemExit(f"mode must be build or load (got {mode!r})")
    unknown = [name for name in MODULES if name not in SPECS]
    if unknown:
        record("EVID_FLASHINFER_MODULES", False, f"unknown {unknown} (known: {', '.join(SPECS)})")
    else:
        try:
            (build if mode == "build" else load)(manifest)
        except Exception as exc:  # the summary line names it; the traceback is above it
            traceback.print_exc()
            record(f"{mode} raised", False, brief(exc))
    failed = [what for what, ok, _ in RESULTS if not ok]
    where = "GPU" if RESULTS and gpu_present() else "no GPU: built/loaded only"
    print(
        f"SUMMARY flashinfer {mode}: {'PASS' if not failed else 'FAIL'} "
        f"({len(RESULTS) - len(failed)}/{len(RESULTS)} checks, {where})"
        + (f"; failed: {'; '.join(failed)}" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
