"""The Python launchers that are not this project: Triton, CuPy, cuda.core, torch, a Python def.

Each is measured when its package imports and sets up; otherwise its rows are n/a with the
reason. Used by launch_overhead.py, which times this project and the C++ floor itself.
"""

from __future__ import annotations

from pathlib import Path

import _common
import _sources

N_VALUE = 1024  # the kernels' int argument


def torch_setup():
    """torch, and 15 CUDA tensors of 4 random floats (the kernels never touch them)."""
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("torch sees no CUDA device")
    torch.cuda.init()
    tensors = [torch.rand(4, device="cuda") for _ in range(_sources.N_WIDE - 1)]
    return torch, tensors


def measure_others(cubin_path: Path, p: dict) -> dict:
    """Triton, CuPy, cuda.core, torch and a Python def, each row independent of the others."""
    torch, t = torch_setup()
    kw = {
        "iters": p["iters"],
        "samples": p["samples"],
        "warmup": p["warmup"],
        "sync": torch.cuda.synchronize,
    }
    rows = {}

    def triton_rows():
        import _triton_kernels as tk

        l3, l16 = tk.empty3[(1,)], tk.empty16[(1,)]
        return {
            "triton3": lambda: _common.time_calls(l3, (t[0], t[1], t[2], N_VALUE), **kw),
            "triton16": lambda: _common.time_calls(l16, (*t, N_VALUE), **kw),
        }

    def cupy_rows():
        import cupy as cp
        import numpy as np

        module = cp.RawModule(path=str(cubin_path))
        k3, k16 = module.get_function("empty"), module.get_function("empty16")
        arrays = [cp.asarray(x) for x in t]
        n32 = np.int32(N_VALUE)
        args3 = (arrays[0], arrays[1], arrays[2], n32)
        args16 = (*arrays, n32)
        return {
            "cupy3": lambda: _common.time_calls(k3, ((1,), (1,), args3), **kw),
            "cupy16": lambda: _common.time_calls(k16, ((1,), (1,), args16), **kw),
        }

    def cuda_core_rows():
        import numpy as np

        try:
            from cuda.core import Device, LaunchConfig, ObjectCode, launch
        except ImportError:
            from cuda.core.experimental import Device, LaunchConfig, ObjectCode, launch
        dev = Device(torch.cuda.current_device())
        dev.set_current()
        code = ObjectCode.from_cubin(cubin_path.read_bytes())
        k3, k16 = code.get_kernel("empty"), code.get_kernel("empty16")
        stream = dev.default_stream
        ptrs = [np.intp(x.data_ptr()) for x in t]
        n32 = np.int32(N_VALUE)
        cfg = LaunchConfig(grid=1, block=1)
        try:  # cuda.core >= 0.3: launch(stream, config, kernel, *args)
            launch(stream, cfg, k3, ptrs[0], ptrs[1], ptrs[2], n32)
            head3, head16 = (stream, cfg, k3), (stream, cfg, k16)
        except TypeError:  # older: launch(kernel, config-with-stream, *args)
            cfg = LaunchConfig(grid=1, block=1, stream=stream)
            head3, head16 = (k3, cfg), (k16, cfg)
        return {
            "cuda_core3": lambda: _common.time_calls(launch, (*head3, *ptrs[:3], n32), **kw),
            "cuda_core16": lambda: _common.time_calls(launch, (*head16, *ptrs, n32), **kw),
        }

    for prefix, factory in (
        ("triton", triton_rows),
        ("cupy", cupy_rows),
        ("cuda_core", cuda_core_rows),
    ):
        try:
            measures = factory()
        except Exception as exc:
            reason = _common.error_reason(exc)
            rows.update({f"{prefix}{n}": _common.na_row(f"{prefix}{n}", reason) for n in (3, 16)})
            continue
        rows.update({k: _common.measure_row(k, m) for k, m in measures.items()})

    x = torch.rand(1, device="cuda")
    rows["torch_add"] = _common.measure_row(
        "torch_add", lambda: _common.time_calls(x.add_, (1,), **kw)
    )
    rows["python_def"] = _common.measure_row(
        "python_def",
        lambda: _common.time_calls(_python_nolaunch, (t[0], t[1], t[2], N_VALUE), **kw),
    )
    return rows


def _python_nolaunch(a, b, c, n):
    pass
