"""Packed attention alone, forward + backward, on one micro-batch's worth of packed tokens at the model's head shape:
the choice model/packing.py made, measured against the alternatives.

- "sdpa + dense mask": what transformers does for packed position ids with sdpa — a [T, T] block-diagonal boolean mask
  (masking_utils), which keeps SDPA off its flash kernel;
- "unpacked, is_causal": the sequences unpacked into a padded [n, longest] batch, SDPA with is_causal and no mask
  (ours on CPU, and on CUDA where torch has no varlen attention);
- "varlen flash": torch.nn.attention.varlen.varlen_attn (ours on CUDA)."""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F


def _lengths(total: int, seed: int = 11) -> list[int]:
    """Sequence lengths of ¼…1 × total/4 filling `total` tokens, as packed SFT rows of varied length are."""
    g = torch.Generator().manual_seed(seed)
    out, left = [], total
    while left > 0:
        n = min(left, int(total / 4 * (0.25 + 0.75 * float(torch.rand(1, generator=g)))))
        out.append(max(1, n))
        left -= out[-1]
    return out


def measure(
    dev: torch.device, dtype: torch.dtype, heads: int, kv_heads: int, head_dim: int, tokens: int, reps: int
) -> dict:
    from coa_trainer.model.fastpath import installed_varlen
    from coa_trainer.model.packing import unpacked_causal, varlen_causal

    lens = _lengths(tokens)
    cu = torch.tensor([0, *torch.tensor(lens).cumsum(0).tolist()], dtype=torch.int32, device=dev)
    T, longest = sum(lens), max(lens)
    g = torch.Generator(device=dev).manual_seed(0)
    q = torch.randn(T, heads, head_dim, device=dev, dtype=dtype, generator=g)
    k = torch.randn(T, kv_heads, head_dim, device=dev, dtype=dtype, generator=g)
    v = torch.randn(T, kv_heads, head_dim, device=dev, dtype=dtype, generator=g)
    doc = torch.repeat_interleave(torch.arange(len(lens), device=dev), torch.tensor(lens, device=dev))
    pos = torch.arange(T, device=dev)
    dense = (doc[:, None] == doc[None, :]) & (pos[:, None] >= pos[None, :])  # [T, T] as transformers builds it
    rep = heads // kv_heads

    def sdpa_dense(q, k, v):
        qq, kk, vv = q.transpose(0, 1)[None], k.transpose(0, 1)[None], v.transpose(0, 1)[None]
        kk, vv = kk.repeat_interleave(rep, 1), vv.repeat_interleave(rep, 1)  # transformers' repeat_kv with a mask
        return F.scaled_dot_product_attention(qq, kk, vv, attn_mask=dense[None, None])[0].transpose(0, 1)

    def unpacked(q, k, v):  # the portable path, also on CUDA
        return unpacked_causal(q, k, v, cu, longest, None)

    def ours(q, k, v):
        return varlen_causal(q, k, v, cu, longest, None)

    runs = {"sdpa + dense mask": sdpa_dense, "unpacked, is_causal": unpacked}
    if dev.type == "cuda" and not isinstance(installed_varlen("cuda"), str):
        runs["varlen flash"] = ours
    out: dict = {
        "tokens": T,
        "sequences": len(lens),
        "longest": longest,
        "heads": heads,
        "kv_heads": kv_heads,
        "head_dim": head_dim,
        "ms": {},
    }
    ref = None
    for name, fn in runs.items():
        x = [t.clone().requires_grad_(True) for t in (q, k, v)]
        for _ in range(2):  # warm-up
            fn(*x).sum().backward()
        if dev.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(reps):
            o = fn(*x)
            o.float().square().sum().backward()
        if dev.type == "cuda":
            torch.cuda.synchronize()
        out["ms"][name] = round((time.perf_counter() - t0) / reps * 1e3, 3)
        with torch.no_grad():
            o = fn(q, k, v).float()
        ref = o if ref is None else ref
        out.setdefault("max_diff_vs_dense", {})[name] = float((o - ref).abs().max())
    return out
