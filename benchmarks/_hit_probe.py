"""Subprocess probe: one cache hit of the guide's wrapper in a fresh process, import included.

Run by build_time.py as ``python _hit_probe.py --worker ours|ref SOURCE IMAGE`` with
TVM_FFI_CACHE_DIR holding the wrapper that _jit_worker.py's cold mode built. Unlike that
worker, it imports nothing before the clock but what every Python process has (sys, os,
time): modules the package needs are paid for inside the measurement, as in a user's
process. A worker that has already imported argparse, json, importlib.metadata, ... would
hide that part of an implementation's import. Prints one marked JSON line.
"""

import os
import sys
import time


def main() -> None:
    impl, source_path, image_path = sys.argv[2], sys.argv[3], sys.argv[4]
    with open(source_path, encoding="utf-8") as f:
        source = f.read()
    with open(image_path, "rb") as f:
        image = f.read()
    wall0, cpu0 = time.perf_counter(), time.process_time()
    import tvm_ffi  # noqa: F401  (part of what is measured)
    from tvm_ffi import cpp

    # The same name and arguments as _jit_worker.py's "wrapper" case, so this is its hit.
    mod = cpp.load_inline("bench_wrapper", cuda_sources=source, embed_cubin={"all": image})
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    if not hasattr(mod, "launch_k0"):
        raise RuntimeError("the cached wrapper lacks launch_k0")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import _ref

    _ref.emit_result({"impl": impl, "hit_s": wall, "cpu_s": cpu})


if __name__ == "__main__":
    main()
