"""Builds and checks of the client modules, run in the child process of client_driver.py.

A ``*_build`` function builds and loads a module through the client's own JIT code and
returns it. A check calls the client's public Python API (which loads that module) on
random CUDA inputs and compares with a torch reference; it raises on a mismatch.
Everything is imported inside the functions: this file is also imported by pytest's
process, where neither torch's CUDA nor the clients need to be importable.
"""

from __future__ import annotations

import importlib

# (rtol, atol) per dtype name: the kernels compute in fp32 and round once to the output
# dtype, with fast-math intrinsics (exp, rsqrt) on the way.
TOLERANCES = {
    "float32": (1e-4, 1e-4),
    "float16": (1e-2, 1e-2),
    "bfloat16": (2e-2, 2e-2),
}


def _torch():
    return importlib.import_module("torch")


def _rand(*shape, dtype):
    torch = _torch()
    return torch.randn(*shape, dtype=dtype, device="cuda")


def assert_close(out, ref, what: str) -> None:
    torch = _torch()
    rtol, atol = TOLERANCES[str(out.dtype).removeprefix("torch.")]
    torch.testing.assert_close(
        out, ref.to(out.dtype), rtol=rtol, atol=atol, msg=lambda m: f"{what}: {m}"
    )


_HALF = ("float16", "bfloat16")


def _dtypes(names=_HALF):
    torch = _torch()
    return [getattr(torch, name) for name in names]


# ---------------------------------------------------------------- FlashInfer


def _fi_spec(module: str, gen: str, *args):
    return getattr(importlib.import_module(f"flashinfer.jit.{module}"), gen)(*args)


def fi_norm_build():
    return _fi_spec("norm", "gen_norm_module").build_and_load()


def fi_norm() -> None:
    torch = _torch()
    from flashinfer.norm import rmsnorm

    for dtype in _dtypes():
        x, w = _rand(37, 1024, dtype=dtype), _rand(1024, dtype=dtype)
        ref = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()
        assert_close(rmsnorm(x, w, eps=1e-6), ref, f"rmsnorm {dtype}")


def fi_activation_build():
    return _fi_spec("activation", "gen_act_and_mul_module", "silu").build_and_load()


def fi_activation() -> None:
    torch = _torch()
    from flashinfer.activation import gelu_tanh_and_mul, silu_and_mul

    for dtype in _dtypes():
        x = _rand(19, 2 * 768, dtype=dtype)
        a, b = x.float().chunk(2, -1)
        assert_close(silu_and_mul(x), torch.nn.functional.silu(a) * b, f"silu_and_mul {dtype}")
        ref = torch.nn.functional.gelu(a, approximate="tanh") * b
        assert_close(gelu_tanh_and_mul(x), ref, f"gelu_tanh_and_mul {dtype}")


def fi_rope_build():
    return _fi_spec("rope", "gen_rope_module").build_and_load()


def _neox_rope(x, pos, theta: float):
    """Rotate-half RoPE over the whole head dim; x: (nnz, heads, dim), fp32 result."""
    torch = _torch()
    dim = x.shape[-1]
    inv_freq = 1.0 / theta ** (torch.arange(0, dim, 2, device=x.device, dtype=torch.float32) / dim)
    freqs = pos.float()[:, None] * inv_freq[None, :]
    cos, sin = freqs.cos()[:, None, :], freqs.sin()[:, None, :]
    x1, x2 = x.float().chunk(2, -1)
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)


def fi_rope() -> None:
    torch = _torch()
    from flashinfer.rope import apply_rope_pos_ids

    for dtype in _dtypes():
        q, k = _rand(29, 8, 128, dtype=dtype), _rand(29, 2, 128, dtype=dtype)
        pos = torch.randint(0, 64, (29,), device="cuda", dtype=torch.int32)
        q_out, k_out = apply_rope_pos_ids(q, k, pos, interleave=False, rope_theta=1e4)
        assert_close(q_out, _neox_rope(q, pos, 1e4), f"apply_rope_pos_ids q {dtype}")
        assert_close(k_out, _neox_rope(k, pos, 1e4), f"apply_rope_pos_ids k {dtype}")


def fi_page_build():
    return _fi_spec("page", "gen_page_module").build_and_load()


def fi_page() -> None:
    torch = _torch()
    from flashinfer.page import get_batch_indices_positions

    append = [3, 0, 7, 1]
    seq_lens = [5, 2, 7, 9]
    indptr = torch.tensor([0, 3, 3, 10, 11], dtype=torch.int32, device="cuda")
    lens = torch.tensor(seq_lens, dtype=torch.int32, device="cuda")
    batch, positions = get_batch_indices_positions(indptr, lens, 11)
    ref_batch = [b for b, n in enumerate(append) for _ in range(n)]
    ref_pos = [seq_lens[b] - n + i for b, n in enumerate(append) for i in range(n)]
    assert batch.tolist() == ref_batch, (batch.tolist(), ref_batch)
    assert positions.tolist() == ref_pos, (positions.tolist(), ref_pos)


def fi_sampling_build():
    return _fi_spec("sampling", "gen_sampling_module").build_and_load()


def fi_sampling() -> None:
    torch = _torch()
    from flashinfer.sampling import softmax, top_k_renorm_probs

    logits = _rand(6, 1000, dtype=torch.float32)
    assert_close(softmax(logits), torch.softmax(logits, -1), "softmax")
    probs = torch.softmax(logits, -1)
    top = probs.topk(20, -1)
    ref = torch.zeros_like(probs).scatter_(-1, top.indices, top.values)
    ref = ref / ref.sum(-1, keepdim=True)
    assert_close(top_k_renorm_probs(probs, 20), ref, "top_k_renorm_probs")


def fi_cascade_build():
    return _fi_spec("cascade", "gen_cascade_module").build_and_load()


def fi_cascade() -> None:
    torch = _torch()
    from flashinfer.cascade import merge_state

    for dtype in _dtypes():
        v_a, v_b = _rand(11, 4, 128, dtype=dtype), _rand(11, 4, 128, dtype=dtype)
        s_a, s_b = _rand(11, 4, dtype=torch.float32), _rand(11, 4, dtype=torch.float32)
        v, s = merge_state(v_a, s_a, v_b, s_b)
        # FlashInfer's log-sum-exp values are base 2.
        w_a, w_b = torch.exp2(s_a)[..., None], torch.exp2(s_b)[..., None]
        assert_close(
            v, (v_a.float() * w_a + v_b.float() * w_b) / (w_a + w_b), f"merge_state v {dtype}"
        )
        assert_close(s, torch.log2(torch.exp2(s_a) + torch.exp2(s_b)), f"merge_state s {dtype}")


def fi_quantization_build():
    return _fi_spec("quantization", "gen_quantization_module").build_and_load()


def fi_quantization() -> None:
    torch = _torch()
    import numpy as np
    from flashinfer.quantization import packbits

    bits = torch.randint(0, 2, (1003,), device="cuda").bool()
    for order in ("big", "little"):
        ref = np.packbits(bits.cpu().numpy(), bitorder=order)
        assert packbits(bits, bitorder=order).cpu().numpy().tolist() == ref.tolist(), order


def fi_fp8_gemm_build():
    return _fi_spec("gemm", "gen_fp8_blockscale_gemm_sm90_module").build_and_load()


def fi_fp8_gemm() -> None:
    torch = _torch()
    from flashinfer.gemm import fp8_blockscale_gemm_sm90

    a, b = _rand(64, 512, dtype=torch.bfloat16), _rand(256, 512, dtype=torch.bfloat16)
    out = fp8_blockscale_gemm_sm90(a, b, out_dtype=torch.bfloat16)
    ref = a.float() @ b.float().T
    # Both operands are quantized to e4m3 (3 mantissa bits) in 128-wide blocks: compare
    # as a whole, not element-wise.
    err = (out.float() - ref).norm() / ref.norm()
    assert err < 0.05, f"fp8_blockscale_gemm_sm90: relative error {err:.4f} (limit 0.05)"


def fi_cake_vsa_sm90_build():
    return _fi_spec("cake_vsa_sm90", "gen_cake_vsa_sm90_module", "attention").build_and_load()


def fi_cake_vsa_sm100_build():
    jit = importlib.import_module("flashinfer.jit.cake_vsa")
    return jit.gen_cake_vsa_module(sorted(jit.PROFILES)[0], "sm_100a").build_and_load()


def fi_cake_ssu_build():
    jit = importlib.import_module("flashinfer.jit.mamba.cake_selective_state_update")
    return jit._load_shipped("stp_bf16_direct", "sm_100a")


def fi_cake_gdn_build():
    jit = importlib.import_module("flashinfer.jit.cake_gdn")
    names = [v["name"] for v in jit._manifest()["variants"]]
    return jit.load_cake_gdn_kernel(sorted(names)[0], "sm_100a")


# ---------------------------------------------------------------- sglang


def _sg(module: str):
    return importlib.import_module(f"sglang.kernels.ops.{module}")


def sg_activation_build():
    return _sg("activation.activation").activation_module(_torch().float16)


def sg_activation() -> None:
    torch = _torch()
    run_activation = _sg("activation.activation").run_activation
    F = torch.nn.functional
    for dtype in _dtypes():
        x = _rand(23, 2 * 512, dtype=dtype)
        a, b = x.float().chunk(2, -1)
        assert_close(run_activation("silu", x, None), F.silu(a) * b, f"silu {dtype}")
        assert_close(run_activation("gelu", x, None), F.gelu(a) * b, f"gelu {dtype}")


def sg_bias_gelu_build():
    return _sg("activation.bias_gelu")._jit_bias_gelu_tanh_module(_torch().float16)


def sg_bias_gelu() -> None:
    torch = _torch()
    bias_gelu_tanh = _sg("activation.bias_gelu").bias_gelu_tanh
    for dtype in _dtypes():
        x, bias = _rand(17, 1024, dtype=dtype), _rand(1024, dtype=dtype)
        ref = torch.nn.functional.gelu(x.float() + bias.float(), approximate="tanh")
        assert_close(bias_gelu_tanh(x, bias), ref, f"bias_gelu_tanh {dtype}")


def sg_add_constant_build():
    return _sg("elementwise.add_constant")._jit_add_constant_module(7)


def sg_add_constant() -> None:
    torch = _torch()
    add_constant = _sg("elementwise.add_constant").add_constant
    src = torch.randint(-1000, 1000, (4099,), dtype=torch.int32, device="cuda")
    assert torch.equal(add_constant(src, 7), src + 7)


def sg_add3_build():
    return _sg("elementwise.add3")._jit_add3_module()


def sg_add3() -> None:
    torch = _torch()
    add3 = _sg("elementwise.add3").add3
    a, b, c = (_rand(64, 256, dtype=torch.bfloat16) for _ in range(3))
    assert_close(add3(a, b, c), a.float() + b.float() + c.float(), "add3")


def sg_rmsnorm_build():
    return _sg("layernorm.norm")._jit_rmsnorm_module(1024, _torch().bfloat16)


def _rms(x, w, eps):
    torch = _torch()
    return x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps) * w.float()


def sg_rmsnorm() -> None:
    rmsnorm = _sg("layernorm.norm").rmsnorm
    for dtype in _dtypes():
        x, w = _rand(13, 1024, dtype=dtype), _rand(1024, dtype=dtype)
        ref = _rms(x, w, 1e-6)
        out = x.clone()
        rmsnorm(out, w, eps=1e-6)
        assert_close(out, ref, f"rmsnorm {dtype}")


def sg_fused_add_rmsnorm_build():
    return _sg("layernorm.norm")._jit_fused_add_rmsnorm_module(_torch().bfloat16, False)


def sg_fused_add_rmsnorm() -> None:
    fused_add_rmsnorm = _sg("layernorm.norm").fused_add_rmsnorm
    for dtype in _dtypes():
        x, r, w = (
            _rand(13, 2048, dtype=dtype),
            _rand(13, 2048, dtype=dtype),
            _rand(2048, dtype=dtype),
        )
        ref_residual = (x.float() + r.float()).to(dtype)
        ref = _rms(ref_residual, w, 1e-6)
        fused_add_rmsnorm(x, r, w, 1e-6)
        assert_close(r, ref_residual, f"fused_add_rmsnorm residual {dtype}")
        assert_close(x, ref, f"fused_add_rmsnorm out {dtype}")


def sg_rope_build():
    return _sg("attention.rope")._jit_rotary_embedding_module()


def sg_rope() -> None:
    torch = _torch()
    rotary_embedding = _sg("attention.rope").rotary_embedding
    heads, kv_heads, dim, max_pos = 8, 2, 128, 256
    inv_freq = 1.0 / 1e4 ** (torch.arange(0, dim, 2, device="cuda", dtype=torch.float32) / dim)
    freqs = torch.arange(max_pos, device="cuda", dtype=torch.float32)[:, None] * inv_freq
    cache = torch.cat([freqs.cos(), freqs.sin()], -1)  # (max_pos, dim): [cos | sin]
    for dtype in _dtypes():
        pos = torch.randint(0, max_pos, (21,), device="cuda", dtype=torch.int64)
        q, k = _rand(21, heads * dim, dtype=dtype), _rand(21, kv_heads * dim, dtype=dtype)
        ref_q = _neox_rope(q.view(21, heads, dim), pos, 1e4).view(21, -1)
        ref_k = _neox_rope(k.view(21, kv_heads, dim), pos, 1e4).view(21, -1)
        rotary_embedding(pos, q, k, dim, cache.to(dtype), True)
        assert_close(q, ref_q, f"rotary_embedding q {dtype}")
        assert_close(k, ref_k, f"rotary_embedding k {dtype}")


def sg_kvcache_build():
    return _sg("kvcache.kvcache")._jit_kvcache_module(1024, 1024, 0)


def sg_kvcache() -> None:
    torch = _torch()
    store_cache = _sg("kvcache.kvcache").store_cache
    for dtype in _dtypes():
        k, v = _rand(9, 512, dtype=dtype), _rand(9, 512, dtype=dtype)
        k_cache = torch.full((64, 512), float("nan"), dtype=dtype, device="cuda")
        v_cache = k_cache.clone()
        # Slot 0 is the reserved padding slot, which store_cache skips by default.
        indices = torch.randperm(63, device="cuda")[:9] + 1
        store_cache(k, v, k_cache, v_cache, indices)
        assert torch.equal(k_cache[indices], k) and torch.equal(v_cache[indices], v), dtype


def sg_clamp_position_build():
    return _sg("attention.clamp_position")._jit_clamp_position_module(_torch().int32)


def sg_clamp_position() -> None:
    torch = _torch()
    clamp_position_cuda = _sg("attention.clamp_position").clamp_position_cuda
    for dtype in (torch.int32, torch.int64):
        seq_lens = torch.randint(0, 100, (257,), dtype=dtype, device="cuda")
        assert torch.equal(clamp_position_cuda(seq_lens), (seq_lens - 1).clamp(min=0)), dtype
