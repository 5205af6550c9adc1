"""The Python launchers that are not this project: Triton, CuPy, cuda.core, torch, a Python def.

Each becomes a batch row (see _interleave) when its package imports and sets up; otherwise its
rows are n/a with the reason. Every row launches on the stream given (torch's current stream
while measuring): CuPy through an ExternalStream, cuda.core through a Stream wrapping the
handle, Triton and torch by reading torch's current stream.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import _common
import _interleave
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


class _StreamRef:
    """A raw stream handle in the __cuda_stream__ protocol, for cuda.core's create_stream."""

    def __init__(self, handle: int):
        self.handle = handle

    def __cuda_stream__(self):
        return (0, self.handle)


def other_rows(
    cubin_path: Path, tensors: list, stream_handle: int, launches: int
) -> tuple[dict[str, _interleave.Row], dict[str, str]]:
    """Batch rows of Triton, CuPy, cuda.core, torch and a Python def, and {row: reason} for
    the launchers that could not be set up. Each launcher is independent of the others."""
    import torch

    t = tensors
    rows: dict[str, _interleave.Row] = {}
    failed: dict[str, str] = {}
    batch = _interleave.python_batch

    def triton_rows():
        import _triton_kernels as tk

        l3, l16 = tk.empty3[(1,)], tk.empty16[(1,)]
        return {
            "triton3": _interleave.Row(batch(l3, (t[0], t[1], t[2], N_VALUE), launches)),
            "triton16": _interleave.Row(batch(l16, (*t, N_VALUE), launches)),
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
        stream = cp.cuda.ExternalStream(stream_handle)
        return {
            "cupy3": _interleave.Row(
                batch(k3, ((1,), (1,), args3), launches), context=lambda: stream
            ),
            "cupy16": _interleave.Row(
                batch(k16, ((1,), (1,), args16), launches), context=lambda: stream
            ),
        }

    def cuda_core_rows():
        import numpy as np

        try:
            from cuda.core import Device, LaunchConfig, ObjectCode, Stream, launch
        except ImportError:
            from cuda.core.experimental import Device, LaunchConfig, ObjectCode, Stream, launch
        dev = Device(torch.cuda.current_device())
        dev.set_current()
        code = ObjectCode.from_cubin(cubin_path.read_bytes())
        k3, k16 = code.get_kernel("empty"), code.get_kernel("empty16")
        try:  # the documented way to wrap a foreign stream
            stream = dev.create_stream(_StreamRef(stream_handle))
        except Exception:
            stream = Stream.from_handle(stream_handle)
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
            "cuda_core3": _interleave.Row(batch(launch, (*head3, *ptrs[:3], n32), launches)),
            "cuda_core16": _interleave.Row(batch(launch, (*head16, *ptrs, n32), launches)),
        }

    factories: dict[str, Callable[[], dict]] = {
        "triton": triton_rows,
        "cupy": cupy_rows,
        "cuda_core": cuda_core_rows,
    }
    for prefix, factory in factories.items():
        try:
            rows.update(factory())
        except Exception as exc:
            reason = _common.error_reason(exc)
            failed.update({f"{prefix}{n}": reason for n in (3, 16)})

    x = torch.rand(1, device="cuda")
    rows["torch_add"] = _interleave.Row(batch(x.add_, (1,), launches))
    rows["python_def"] = _interleave.Row(
        batch(_python_nolaunch, (t[0], t[1], t[2], N_VALUE), launches)
    )
    return rows, failed


def _python_nolaunch(a, b, c, n):
    pass
