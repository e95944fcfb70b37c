"""A Hugging Face decoder run over the rollout engine's own static KV cache.

The engine needs what transformers' caches do not give together: one cache row per slot with its own length (a
slot is refilled while its neighbours are mid-sequence, and a trajectory appends an observation after a tool call
without re-reading its earlier turns), fixed shapes so a decode step can be captured in a CUDA graph, and grouped
-query attention that reads each KV head once (transformers' SDPA path repeats K and V per query head whenever a
mask is given). So the model's own modules — embeddings, norms, q/k/v/o projections, rotary embedding, MLP, LM
head, LoRA-wrapped or not — are called here in the order its decoder layer calls them, and attention is one
`scaled_dot_product_attention` over the slot's cache with a per-row length mask.

Supported: the Llama family as transformers writes it (llama, qwen2, qwen3, mistral without a sliding window).
Other models (and FSDP-sharded ones) go through `generate.reference_generate`, the plain HF forward; the engine's
`engine_support` says why."""

from __future__ import annotations

import sys

import torch
import torch.nn.functional as F

from ..model.family import base_model, full_attention_reason


def engine_support(model: torch.nn.Module) -> str | None:
    """None when the engine can run `model`; otherwise the reason it cannot (the reference loop runs it)."""
    reason = full_attention_reason(model)
    if reason is not None:
        return reason
    base = base_model(model)
    cfg = base.config
    inner = getattr(base, "model", None)
    if inner is None or not all(hasattr(inner, a) for a in ("embed_tokens", "layers", "norm", "rotary_emb")):
        return f"{type(base).__name__} is not laid out as a transformers decoder (model.embed_tokens/layers/norm)"
    rope = (getattr(cfg, "rope_parameters", None) or {}).get("rope_type", "default")
    if rope in ("dynamic", "longrope"):
        return f"rope type {rope!r} changes with the sequence length"
    try:
        from torch.distributed.fsdp import FSDPModule

        if any(isinstance(m, FSDPModule) for m in base.modules()):
            return "FSDP-sharded parameters"
    except ImportError:
        pass
    attn = inner.layers[0].self_attn
    if not all(hasattr(attn, a) for a in ("q_proj", "k_proj", "v_proj", "o_proj", "head_dim", "scaling")):
        return f"{type(attn).__name__} has no separate q/k/v/o projections"
    if getattr(sys.modules.get(type(attn).__module__), "apply_rotary_pos_emb", None) is None:
        return f"{type(attn).__module__} has no apply_rotary_pos_emb"
    return None


class KVModel:
    """`forward(ids, pos, write, rows, L, mask, last)` → float32 logits [n, V] at position `last` of each row, after
    writing the chunk's keys and values at cache positions `write` of slots `rows` (None: every slot, in order).
    The cache holds `capacity` positions per slot plus one scratch position (`capacity`) where padding and idle
    rows write, so nothing they compute lands where a real token lives."""

    def __init__(self, model: torch.nn.Module, device: torch.device, dtype: torch.dtype | None):
        base = base_model(model)
        # submodules only, never the model itself: the engine registry (generate.engine_for) holds engines in a
        # WeakKeyDictionary keyed by the model, which a reference back to it would keep alive forever
        self.inner = base.model
        self.layers = list(self.inner.layers)
        self.head = base.get_output_embeddings()
        attn = self.layers[0].self_attn
        cfg = base.config
        self.model_type = cfg.model_type
        self.heads, self.kv_heads = cfg.num_attention_heads, cfg.num_key_value_heads
        self.head_dim, self.scaling = attn.head_dim, attn.scaling
        self.rope = sys.modules[type(attn).__module__].apply_rotary_pos_emb
        self.qk_norm = hasattr(attn, "q_norm") and hasattr(attn, "k_norm")
        self.device = device
        self.cache_dtype = dtype or self.inner.embed_tokens.weight.dtype
        self.slots, self.capacity = 0, 0
        self.k: list[torch.Tensor] = []
        self.v: list[torch.Tensor] = []
        self._arange: dict[int, torch.Tensor] = {}
        self._heads = torch.arange(self.kv_heads, device=device)[None, :, None]

    def _rows(self, n: int) -> torch.Tensor:
        r = self._arange.get(n)
        if r is None:
            r = self._arange[n] = torch.arange(n, device=self.device)[:, None, None]
        return r

    def parameters(self) -> list[torch.Tensor]:
        return [*self.inner.parameters(), *self.head.parameters()]

    def bytes_per_token(self) -> int:
        return 2 * len(self.layers) * self.kv_heads * self.head_dim * torch.finfo(self.cache_dtype).bits // 8

    def allocate(self, slots: int, capacity: int) -> None:
        """(Re)allocate for `slots` × `capacity`, keeping what the first min(slots) slots hold."""
        old_k, old_v, old_s, old_c = self.k, self.v, self.slots, self.capacity
        shape = (slots, self.kv_heads, capacity + 1, self.head_dim)
        self.k = [torch.zeros(shape, dtype=self.cache_dtype, device=self.device) for _ in self.layers]
        self.v = [torch.zeros(shape, dtype=self.cache_dtype, device=self.device) for _ in self.layers]
        s, c = min(slots, old_s), min(capacity, old_c)
        for new, old in zip(self.k + self.v, old_k + old_v):
            new[:s, :, :c].copy_(old[:s, :, :c])
        self.slots, self.capacity = slots, capacity

    def forward(self, ids: torch.Tensor, pos: torch.Tensor, write: torch.Tensor, rows: torch.Tensor | None, L: int,
                mask: torch.Tensor, last: torch.Tensor | None) -> torch.Tensor:
        n, C = ids.shape
        rep = self.heads // self.kv_heads
        h = self.inner.embed_tokens(ids)
        cos, sin = self.inner.rotary_emb(h, pos)
        # the mask of every query head sharing a KV head: [n, 1, rep·C, L] (queries packed per KV head below)
        m = mask if rep == 1 else mask.unsqueeze(2).expand(n, 1, rep, C, L).reshape(n, 1, rep * C, L)
        where = (self._rows(n) if rows is None else rows[:, None, None], self._heads, write[:, None, :])
        for layer, kc, vc in zip(self.layers, self.k, self.v):
            attn = layer.self_attn
            res = h
            x = layer.input_layernorm(h)
            q = attn.q_proj(x).view(n, C, self.heads, self.head_dim)
            k = attn.k_proj(x).view(n, C, self.kv_heads, self.head_dim)
            if self.qk_norm:
                q, k = attn.q_norm(q), attn.k_norm(k)
            q, k = q.transpose(1, 2), k.transpose(1, 2)
            v = attn.v_proj(x).view(n, C, self.kv_heads, self.head_dim).transpose(1, 2)
            q, k = self.rope(q, k, cos, sin)
            # under autocast the rotary embedding promotes q and k back to fp32: the cache keeps autocast's dtype
            kc.index_put_(where, k.to(kc.dtype))
            vc.index_put_(where, v.to(vc.dtype))
            if rows is None:
                keys, values = kc[:n, :, :L], vc[:n, :, :L]
            else:
                keys, values = kc[rows, :, :L], vc[rows, :, :L]
            # [n, H, C, d] → [n, kv, rep·C, d]: query head g·rep + r uses KV head g (transformers' repeat_kv order)
            qg = q.reshape(n, self.kv_heads, rep * C, self.head_dim)
            o = F.scaled_dot_product_attention(qg.to(keys.dtype), keys, values, attn_mask=m, scale=self.scaling)
            o = o.reshape(n, self.heads, C, self.head_dim).transpose(1, 2).reshape(n, C, self.heads * self.head_dim)
            h = res + attn.o_proj(o)
            res = h
            h = res + layer.mlp(layer.post_attention_layernorm(h))
        if last is None:
            h = h[:, -1]
        else:
            h = h[torch.arange(n, device=ids.device), last]
        return self.head(self.inner.norm(h)).float()
