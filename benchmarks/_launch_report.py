"""The tables and the target line of launch_overhead.py, from its raw rows (no GPU needed)."""

from __future__ import annotations

import _common

NAME = "launch_overhead"
TARGET_DELTA_US = 0.3
# tvm_ffi.cuda (a Python launcher with no C++ wrapper): its own target over the same floor.
PYCUDA_TARGET_DELTA_US = 0.5
PYCUDA_KEY = "pycuda_launch3"
FLOOR_KEY = "cpp_rt3"
# The Python launchers the target compares with: name -> row.
PY_LAUNCHERS = {
    "ref": "ref_launch3",
    "triton": "triton3",
    "cupy": "cupy3",
    "cuda_core": "cuda_core3",
}
HEADERS = ["path", "median us", "min us", "p10-p90 us", "vs floor", "note"]


def _labels(ref_name: str) -> dict[str, str]:
    return {
        "cpp_rt3": "C++ cudaLaunchKernel, cudaKernel_t from cudaLibraryLoadData (floor)",
        "cpp_rt_static3": "C++ cudaLaunchKernel, kernel compiled into the module",
        "cpp_drv3": "C++ cuLaunchKernel, CUkernel from cuLibraryLoadData",
        "cpp_drv_ex3": "C++ cuLaunchKernelEx, CUkernel from cuLibraryLoadData",
        "ours_launch3": "tvm_ffi (this project), embedded CUBIN, 3 torch tensors + int",
        "ours_launch3_null": "tvm_ffi (this project), same on the default (NULL) stream",
        "pycuda_launch3": "tvm_ffi.cuda launch: kernel.launch(1, 1, args), no C++ wrapper",
        "pycuda_item3": "tvm_ffi.cuda kernel[grid, block](...), kernel[1, 1] per launch",
        "pycuda_bound3": "tvm_ffi.cuda kernel[grid, block](...), kernel[1, 1] bound once",
        "pycuda_stream3": "tvm_ffi.cuda: the same, stream given (no stream lookup)",
        "pycuda_raw3": "tvm_ffi.cuda: the same, stream given, raw int pointers (no tensors)",
        "ref_launch3": f"{ref_name} load_inline + embed_cubin (own process)",
        "triton3": "Triton @triton.jit launcher",
        "cupy3": "CuPy RawKernel",
        "cuda_core3": "cuda.core launch",
        "torch_add": "torch x.add_(1), 1 element (reference op)",
        "cpp_rt16": "C++ cudaLaunchKernel (floor)",
        "cpp_drv16": "C++ cuLaunchKernel, CUkernel",
        "cpp_drv_ex16": "C++ cuLaunchKernelEx, CUkernel",
        "ours_launch16": "tvm_ffi (this project), 15 torch tensors + int",
        "pycuda_launch16": "tvm_ffi.cuda launch: kernel.launch(1, 1, args)",
        "pycuda_bound16": "tvm_ffi.cuda kernel[grid, block](...), kernel[1, 1] bound once",
        "ref_launch16": f"{ref_name} (own process)",
        "triton16": "Triton @triton.jit launcher",
        "cupy16": "CuPy RawKernel",
        "cuda_core16": "cuda.core launch",
        "cpp_rt_attrs3": "C++ cudaLaunchKernelExC + attributes (floor)",
        "cpp_drv_attrs3": "C++ cuLaunchKernelEx + attributes",
        "ours_attrs3": "tvm_ffi (this project), LaunchConfig SetCluster + PDL",
        "ours_nolaunch": "tvm_ffi (this project): the binding alone (no-op, same args)",
        "ours_getstream": "tvm_ffi (this project): binding + TVMFFIEnvGetStream",
        "ours_launch3@": "tvm_ffi (this project): binding + GetStream + CubinKernel::Launch",
        "ref_nolaunch": f"{ref_name}: the binding alone (own process)",
        "ref_getstream": f"{ref_name}: binding + TVMFFIEnvGetStream",
        "ref_launch3@": f"{ref_name}: binding + GetStream + CubinKernel::Launch",
        "python_def": "Python def f(a, b, c, n): pass",
    }


SECTIONS = [
    (
        "3 pointers + int (grid 1, block 1)",
        "cpp_rt3",
        [
            "cpp_rt3",
            "cpp_rt_static3",
            "cpp_drv3",
            "cpp_drv_ex3",
            "ours_launch3",
            "ours_launch3_null",
            "pycuda_launch3",
            "pycuda_item3",
            "pycuda_bound3",
            "pycuda_stream3",
            "pycuda_raw3",
            "ref_launch3",
            "triton3",
            "cupy3",
            "cuda_core3",
            "torch_add",
        ],
    ),
    (
        "16 arguments: 15 pointers + int",
        "cpp_rt16",
        [
            "cpp_rt16",
            "cpp_drv16",
            "cpp_drv_ex16",
            "ours_launch16",
            "pycuda_launch16",
            "pycuda_bound16",
            "ref_launch16",
            "triton16",
            "cupy16",
            "cuda_core16",
        ],
    ),
    (
        "cluster 2x1x1 + programmatic stream serialization (PDL), grid 2",
        "cpp_rt_attrs3",
        ["cpp_rt_attrs3", "cpp_drv_attrs3", "ours_attrs3"],
    ),
    (
        "where the time goes: the same call without the launch, step by step",
        None,
        [
            "ours_nolaunch",
            "ours_getstream",
            "ours_launch3@",
            "ref_nolaunch",
            "ref_getstream",
            "ref_launch3@",
            "python_def",
        ],
    ),
]
# Own-process floors of the reference rows: its deltas are taken against them when measured.
REF_FLOOR_OF = {"cpp_rt3": "ref_floor_rt3", "cpp_rt16": "ref_floor_rt16"}
# Breakdown rows: the row above which each one adds a step, and what the step is.
STEPS = {
    "ours_getstream": ("ours_nolaunch", "TVMFFIEnvGetStream"),
    "ours_launch3@": ("ours_getstream", "CubinKernel::Launch"),
    "ref_getstream": ("ref_nolaunch", "TVMFFIEnvGetStream"),
    "ref_launch3@": ("ref_getstream", "CubinKernel::Launch"),
}


def _median(rows: dict, key: str) -> float | None:
    row = rows.get(key.rstrip("@"))
    return row["median"] if row and row.get("status") == "ok" else None


def _spread_cell(row: dict | None) -> str:
    if row is None or row.get("status") != "ok" or "p10" not in row:
        return "-"
    return f"{_common.fmt_num(row['p10'])}-{_common.fmt_num(row['p90'])}"


def _floor_for(rows: dict, key: str, floor_key: str | None) -> tuple[float | None, str]:
    """(floor median, note) for a row: the reference's own in-process floor when measured."""
    if floor_key is None:
        return None, ""
    if key.startswith("ref_"):
        own = _median(rows, REF_FLOOR_OF.get(floor_key, ""))
        if own is not None:
            return own, f"vs its own in-process floor ({own:.3f} us)"
        return _median(rows, floor_key), "vs this process's floor (its own floor not measured)"
    return _median(rows, floor_key), ""


def _step_note(rows: dict, key: str) -> str:
    if key not in STEPS:
        return ""
    prev, what = STEPS[key]
    here, before = _median(rows, key), _median(rows, prev)
    if here is None or before is None:
        return ""
    note = f"{what}: {here - before:+.3f}"
    if what == "CubinKernel::Launch" and _median(rows, "cpp_drv3") is not None:
        note += f" (C++ cuLaunchKernel loop: {_median(rows, 'cpp_drv3'):.3f})"
    return note


def make_report(raw: dict, mode: str, env: dict) -> dict:
    rows = raw["rows"]
    p = raw["params"]
    ref_name = f"apache-tvm-ffi {raw.get('versions', {}).get('ref', '')}".strip()
    labels = _labels(ref_name)
    sections = []
    for title, floor_key, keys in SECTIONS:
        cells = []
        for key in keys:
            row = rows.get(key.rstrip("@"))
            med = _median(rows, key)
            floor, floor_note = _floor_for(rows, key, floor_key)
            delta = med - floor if (med is not None and floor is not None) else None
            text = "; ".join(n for n in (floor_note, _step_note(rows, key)) if n)
            cells.append(
                [
                    labels[key],
                    *_common.stat_cells(row),
                    _spread_cell(row),
                    _common.fmt_delta(delta) if floor_key else "-",
                    _common.note_cell(row, text),
                ]
            )
        sections.append({"title": title, "headers": HEADERS, "cells": cells})

    notes = [
        f"host us per launch = enqueue time of a batch of {p['launches']} launches / "
        f"{p['launches']} (the GPU synchronized after each batch, untimed); {p['rounds']} rounds "
        f"after {p['warmup_rounds']} warm-up rounds, each round measuring every row once in an "
        f"order rotated by one, so drift reaches all rows alike; 'vs floor' = median minus the "
        f"section's first row",
        "all rows launch on one torch.cuda.Stream() (current for torch, Triton and this "
        "project; CuPy ExternalStream and cuda.core Stream on its handle; the C++ floors get "
        "the handle), except the row marked default (NULL) stream",
        "the C++ floors are a module loaded into this process (load_inline, cudart; driver "
        "entry points via cudaGetDriverEntryPointByVersion) looping in C++ on the same CUBIN "
        "and arguments: one Python call per batch, its cost spread over the batch",
        f"{ref_name} ran afterwards in its own process (same import name tvm_ffi), from "
        f"{raw.get('ref', '?')}, with the same batch method, interleaved with its own rows and "
        f"its own build of the same C++ floor only: it cannot be interleaved with this "
        f"process's rows; Triton is called as a pre-bound kernel[(1,)]",
        "tvm_ffi.cuda loads the same CUBIN from Python (CubinModule(bytes)) and launches with "
        "the same torch tensors + int on torch's current stream, with no C++ wrapper; its "
        "'per launch' row writes kernel[1, 1](...) in the loop, the 'bound once' row calls a "
        "launcher made before the loop (as Triton's kernel[(1,)])",
        "rows with no equivalent in a launcher (attributes in Triton/CuPy/cuda.core) are omitted",
    ]
    notes += raw.get("notes", [])
    notes.append(pycuda_target_line(rows))
    notes.append(target_line(rows))
    return _common.report(NAME, mode, env, raw, sections, notes)


def _comparable(rows: dict, name: str, key: str, floor: float) -> tuple[float | None, str]:
    """A launcher's median as measured here; the reference's moved onto this process's floor
    (its median - its own floor + this floor) when its own floor was measured."""
    med = _median(rows, key)
    if med is None or name != "ref":
        return med, ""
    own = _median(rows, REF_FLOOR_OF[FLOOR_KEY])
    return (med - own + floor, ", floor-adjusted") if own is not None else (med, "")


def _target(rows: dict, key: str, limit: float, label: str, what: str) -> str:
    """``label``'s verdict: the row ``key`` <= floor + ``limit`` us, and faster than every
    other Python launcher."""
    ours, floor = _median(rows, key), _median(rows, FLOOR_KEY)
    if ours is None or floor is None:
        return f"{label} (<= floor + {limit} us, fastest Python launcher): not measured"
    others = {name: _comparable(rows, name, k, floor) for name, k in PY_LAUNCHERS.items()}
    others = {k: v for k, v in others.items() if v[0] is not None}
    delta = ours - floor
    verdict = _common.verdict(delta, limit)
    if not others:
        rank = "no other Python launcher measured"
    else:
        name, (value, how) = min(others.items(), key=lambda kv: kv[1][0])
        rank = (
            "fastest Python launcher: MET"
            if ours < value
            else f"fastest Python launcher: MISSED ({name} {value:.3f} us{how})"
        )
    return f"{label}: {what} {ours:.3f} us = floor {delta:+.3f} us (<= +{limit}: {verdict}); {rank}"


def target_line(rows: dict) -> str:
    return _target(rows, "ours_launch3", TARGET_DELTA_US, "target", "this project")


def pycuda_target_line(rows: dict) -> str:
    """tvm_ffi.cuda's target: <= floor + 0.5 us and faster than every other Python launcher."""
    return _target(rows, PYCUDA_KEY, PYCUDA_TARGET_DELTA_US, "target tvm_ffi.cuda", "kernel.launch")
