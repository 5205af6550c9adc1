"""The client modules the suite builds, loads and (on a GPU) calls.

Each case names one JIT module of FlashInfer or sglang, how the client's own code builds
and loads it (``build``), and how the client's own Python API is called on it against a
torch reference (``check``). Both run in the child process of ``driver.py``, where the
clients are importable; importing this file imports neither torch nor a client.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import client_checks as checks


@dataclasses.dataclass(frozen=True)
class ClientModule:
    name: str  # "<client>.<what>", unique; the test ids and the report's rows
    client: str  # "flashinfer" or "sglang"
    kind: str  # what part of the client's build it exercises (a report column)
    build: Callable[[], object]  # the client's JIT: generate, build, load; returns the module
    # The client's Python API vs torch (needs a GPU); None: built and loaded only (the
    # kernels need Blackwell, or their API has no simple torch reference).
    check: Callable[[], None] | None
    ci: bool = False  # built and loaded by CPU CI (small, quick builds only)
    run_on: tuple[tuple[int, int], ...] | None = None  # capabilities it runs on; None: sm_90+


def _fi(name, kind, build, check, **kw):
    return ClientModule(f"flashinfer.{name}", "flashinfer", kind, build, check, **kw)


def _sg(name, kind, build, check, **kw):
    return ClientModule(f"sglang.{name}", "sglang", kind, build, check, **kw)


CASES: tuple[ClientModule, ...] = (
    _fi("norm", "jit spec", checks.fi_norm_build, checks.fi_norm),
    _fi("activation", "jit spec", checks.fi_activation_build, checks.fi_activation, ci=True),
    _fi("rope", "jit spec", checks.fi_rope_build, checks.fi_rope),
    _fi("page", "jit spec", checks.fi_page_build, checks.fi_page),
    _fi("sampling", "jit spec", checks.fi_sampling_build, checks.fi_sampling),
    _fi("cascade", "jit spec", checks.fi_cascade_build, checks.fi_cascade),
    _fi("quantization", "jit spec", checks.fi_quantization_build, checks.fi_quantization),
    _fi(
        "fp8_blockscale_gemm_sm90",
        "jit spec, Module from init()",
        checks.fi_fp8_gemm_build,
        checks.fi_fp8_gemm,
        run_on=((9, 0),),
    ),
    _fi(
        "cake_vsa_sm90",
        "jit spec, sm_90a",
        checks.fi_cake_vsa_sm90_build,
        None,
    ),
    _fi(
        "cake_vsa_sm100",
        "jit spec, embedded sm_100a CUBIN (cubin_launcher.h)",
        checks.fi_cake_vsa_sm100_build,
        None,
    ),
    _fi(
        "cake_selective_state_update",
        "load_inline, cpp_sources + embedded sm_100a CUBIN",
        checks.fi_cake_ssu_build,
        None,
        ci=True,
    ),
    _fi(
        "cake_gdn",
        "load_inline, cpp_sources + embedded sm_100a CUBIN",
        checks.fi_cake_gdn_build,
        None,
    ),
    _sg("activation", "load_jit", checks.sg_activation_build, checks.sg_activation),
    _sg("bias_gelu", "load_jit", checks.sg_bias_gelu_build, checks.sg_bias_gelu, ci=True),
    _sg("add_constant", "load_jit", checks.sg_add_constant_build, checks.sg_add_constant, ci=True),
    _sg("add3", "load_jit", checks.sg_add3_build, checks.sg_add3),
    _sg("rmsnorm", "load_jit", checks.sg_rmsnorm_build, checks.sg_rmsnorm),
    _sg(
        "fused_add_rmsnorm",
        "load_jit",
        checks.sg_fused_add_rmsnorm_build,
        checks.sg_fused_add_rmsnorm,
    ),
    _sg("rotary_embedding", "load_jit", checks.sg_rope_build, checks.sg_rope),
    _sg("kvcache", "load_jit", checks.sg_kvcache_build, checks.sg_kvcache),
    _sg("clamp_position", "load_jit", checks.sg_clamp_position_build, checks.sg_clamp_position),
)

BY_NAME = {case.name: case for case in CASES}
