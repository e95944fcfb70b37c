"""A Hugging Face decoder run over the rollout engine's own static KV cache, with its linear layers packed.

The engine needs what transformers' caches do not give together: one cache row per slot with its own length (a
slot is refilled while its neighbours are mid-sequence, and a trajectory appends an observation after a tool call
without re-reading its earlier turns), fixed shapes so a decode step can be compiled and captured in a CUDA graph,
and grouped-query attention that reads each KV head once (transformers' SDPA path repeats K and V per query head
whenever a mask is given). So the model's own modules — embeddings, norms, rotary embedding, activation — are called
here in the order its decoder layer calls them, and attention is one call over the slot's cache:

- compiled (the engine's default on CUDA): `flex_attention` with a block mask made from each row's positions — no
  dense mask exists anywhere, and a row visits only the key blocks (`KV_BLOCK` positions each) up to its own last
  position: a slot's read is bounded by its own length, not by the attention length the batch shares, and blocks
  past it are never loaded. Inductor compiles it into one fused kernel (Triton on CUDA, C++ on CPU);
- eager (no compiler: the CPU default, and the fallback when compilation fails): `scaled_dot_product_attention`
  with a per-row boolean length mask. Run eagerly, flex attention is torch's unfused reference (it materialises the
  scores), and this path keeps CPU rollouts bit-identical to earlier runs.

The linear layers are read from packed weights (`DecodeWeights`): q, k and v as one [q + k + v, hidden] matrix, gate
and up as one, each in the compute dtype, with any LoRA adapter merged in (W + B·A·scaling, what peft's merge
computes). A layer is then 4 matrix products instead of 7 (+ 2 per LoRA-wrapped projection), and under autocast no
fp32 weight is cast to bf16 at every step. The packed copy is refreshed from the model at the start of every engine
call (`sync`, in place, so captured graphs stay valid): the rollout samples from the weights as they are now, and a
LoRA model's dropout never applies (its merged weights are the eval-mode layer).

Supported: the Llama family as transformers writes it (llama, qwen2, qwen3, mistral without a sliding window), its
projections plain `nn.Linear` or peft LoRA layers without a variant (DoRA and the like). Other models (and
FSDP-sharded ones) go through `generate.reference_generate`, the plain HF forward; `engine_support` says why."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch.nn.attention.flex_attention import BlockMask, flex_attention

from ..model.family import base_model, full_attention_reason


# Rows (slots, or a prefill's chunks) the compiled attention serves at most (`KVModel.starts`)
MAX_ROWS = 4096
# Key positions per block of the compiled attention's block mask: flex attention's default block size, which its
# kernels on every backend and torch version are built for (a smaller one must divide their tile sizes)
KV_BLOCK = 128


def block_mask(starts: torch.Tensor, start: torch.Tensor, bound: torch.Tensor, C: int, L: int) -> BlockMask:
    """The block mask of n rows of `C` queries at positions start[b], start[b] + 1, … over `L` cache positions: query
    (b, i) sees keys 0…start[b] + i; a block of row b's queries visits the key blocks up to its own last query's
    position and none past bound[b] (the row's last real position: padding queries past it are dropped by the
    caller). Made from [n] vectors alone — [n, 1, query blocks] counts, [n, 1, query blocks, key blocks] indices —
    never from a dense [n, C, L] mask. The mask function reads `starts` (`KVModel.starts`: `start` in its first n
    entries), indexed by row."""
    n = start.shape[0]
    # one block more than the queries and keys fill, at least 2 either way: a count of 1 would be a second
    # compilation (the compiler specialises sizes of 1), for chunks or attention lengths past one block
    q_blocks, blocks = C // KV_BLOCK + 2, L // KV_BLOCK + 2
    offs = (torch.arange(q_blocks, device=start.device) * KV_BLOCK + (KV_BLOCK - 1)).clamp(max=C - 1)
    last = torch.minimum(start[:, None] + offs, bound[:, None])  # each query block's last real query
    counts = (last // KV_BLOCK + 1).clamp(max=(L + KV_BLOCK - 1) // KV_BLOCK).to(torch.int32)[:, None, :]
    indices = torch.arange(blocks, dtype=torch.int32, device=start.device).expand(n, 1, q_blocks, blocks)

    def visible(b: torch.Tensor, h: torch.Tensor, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        return k <= starts[b] + q

    # no query-major copy (compute_q_blocks): only a backward pass reads it, and it sorts a dense block grid
    return BlockMask.from_kv_blocks(
        counts, indices, BLOCK_SIZE=(KV_BLOCK, KV_BLOCK), mask_mod=visible, seq_lengths=(C, L), compute_q_blocks=False
    )


# peft's LoraLayer class, or why it cannot be imported — found once per process (`lora_class`)
_LORA: tuple[type | None, str | None] | None = None


def lora_class() -> tuple[type | None, str | None]:
    """(peft's LoraLayer, None), or (None, why not): peft is optional, and a peft built against another transformers
    fails at import with AttributeError, TypeError or RuntimeError as well as ImportError. Without it no layer is
    taken for a LoRA layer: plain linear layers run in the engine, anything else in the reference loop."""
    global _LORA
    if _LORA is None:
        try:
            from peft.tuners.lora import LoraLayer

            _LORA = (LoraLayer, None)
        except Exception as e:  # noqa: BLE001 — whatever a broken install raises at import: the engine goes on
            _LORA = (None, f"peft cannot be imported ({type(e).__name__}: {str(e)[:200]})")
    return _LORA


def _lora_layer(mod: object) -> bool:
    cls = lora_class()[0]
    return cls is not None and isinstance(mod, cls)


def linear_reason(mod: torch.nn.Module, name: str) -> str | None:
    """None when `mod` is a linear layer the packed weights can stand for; otherwise why not."""
    if isinstance(mod, torch.nn.Linear) and type(mod).forward is torch.nn.Linear.forward:
        return None
    peft_layer: Any = mod  # a peft LoraLayer's attributes and methods (peft is optional: no type to name)
    lora = _lora_layer(mod)
    base = peft_layer.get_base_layer() if lora else None
    if lora and isinstance(base, torch.nn.Linear) and hasattr(mod, "get_delta_weight"):
        variants = [a for a in getattr(mod, "lora_variant", {}) if a in peft_layer.active_adapters]
        if variants:
            return f"{name}: a LoRA variant (DoRA or the like: {', '.join(variants)}) cannot be merged into one weight"
        return None
    return f"{name} is a {type(mod).__name__}, not a linear layer or a plain LoRA layer"


@torch.no_grad()
def effective_linear(layer: torch.nn.Module) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(weight, bias) of what `layer` computes in eval mode: a plain layer's own parameters (not copied), or a LoRA
    layer's base weight with its active adapters merged (a new tensor) — removed again if they are merged into the
    base weight while adapters are disabled."""
    mod: Any = layer  # nn.Linear's or a peft LoraLayer's attributes (peft is optional: no type to name)
    if not _lora_layer(mod):
        return mod.weight.detach(), None if mod.bias is None else mod.bias.detach()
    base = mod.get_base_layer()
    w = base.weight.detach()
    b = None if base.bias is None else base.bias.detach()
    sign, adapters = 0.0, []
    if mod.disable_adapters and mod.merged:
        sign, adapters = -1.0, list(mod.merged_adapters)
    elif not mod.disable_adapters and not mod.merged:
        sign, adapters = 1.0, [a for a in mod.active_adapters if a in mod.lora_A]
    for a in adapters:
        w = w + sign * mod.get_delta_weight(a).to(w.dtype)
        if getattr(mod, "lora_bias", {}).get(a) and b is not None:
            b = b + sign * (mod.lora_B[a].bias * mod.scaling[a]).to(b.dtype)
    return w, b


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
    for i, layer in enumerate(inner.layers):
        if not all(hasattr(layer.mlp, a) for a in ("gate_proj", "up_proj", "down_proj", "act_fn")):
            return f"layer {i}: {type(layer.mlp).__name__} is not a gated MLP (gate/up/down projections)"
        for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
            if (reason := linear_reason(getattr(layer.self_attn, name), f"layer {i} {name}")) is not None:
                return reason
        for name in ("gate_proj", "up_proj", "down_proj"):
            if (reason := linear_reason(getattr(layer.mlp, name), f"layer {i} {name}")) is not None:
                return reason
    head = base.get_output_embeddings()
    if head is None:
        return f"{type(base).__name__} has no output embeddings"
    return linear_reason(head, "lm_head")


@dataclass
class LayerWeights:
    """One decoder layer's linear weights in the compute dtype: q|k|v and gate|up packed along the output rows."""

    qkv: torch.Tensor
    qkv_bias: torch.Tensor | None
    o: torch.Tensor
    o_bias: torch.Tensor | None
    gate_up: torch.Tensor
    gate_up_bias: torch.Tensor | None
    down: torch.Tensor
    down_bias: torch.Tensor | None


class DecodeWeights:
    """The packed linear weights of a model (see the module doc). `sync()` refreshes them from the modules; packed
    buffers are written in place, and a weight that needs no packing, merging or cast is the parameter itself.
    Returns whether any tensor the layers read was replaced (captured graphs then read stale memory)."""

    def __init__(self, layers: list[Any], head: torch.nn.Module, dtype: torch.dtype | None):
        self.mods, self.head_mod, self.dtype = layers, head, dtype
        self.layers: list[LayerWeights] = []
        self.head: torch.Tensor | None = None
        self.head_bias: torch.Tensor | None = None

    def tensors(self) -> list[torch.Tensor]:
        out = [t for lw in self.layers for t in vars(lw).values() if t is not None]
        return out + [t for t in (self.head, self.head_bias) if t is not None]

    def nbytes(self) -> int:
        """Bytes held by packed copies (not the parameters the layers read as they are)."""
        params = {p.data_ptr() for m in [*self.mods, self.head_mod] for p in m.parameters()}
        return sum(t.numel() * t.element_size() for t in self.tensors() if t.data_ptr() not in params)

    def free(self) -> None:
        self.layers, self.head, self.head_bias = [], None, None

    def _dtype(self, w: torch.Tensor) -> torch.dtype:
        return self.dtype or w.dtype

    def _packed(
        self, old: torch.Tensor | None, parts: list[torch.Tensor | None], rows: list[int], like: torch.Tensor
    ) -> tuple[torch.Tensor | None, bool]:
        """`parts` (None: zeros of `rows[i]` rows) concatenated into `old` when it fits, else a new tensor."""
        if all(p is None for p in parts):
            return None, old is not None
        shape = (sum(rows), *like.shape[1:])
        dt = self._dtype(like)
        fresh = old is None or old.shape != shape or old.dtype != dt or old.device != like.device
        out = torch.empty(shape, dtype=dt, device=like.device) if fresh or old is None else old
        at = 0
        for p, n in zip(parts, rows):
            if p is None:
                out[at : at + n].zero_()
            else:
                out[at : at + n].copy_(p)
            at += n
        return out, fresh

    def _single(
        self, old: torch.Tensor | None, w: torch.Tensor | None, merged: bool
    ) -> tuple[torch.Tensor | None, bool]:
        """`w` itself when it is a parameter already in the compute dtype, else a copy into `old` (when it fits)."""
        if w is None:
            return None, old is not None
        if not merged and w.dtype == self._dtype(w):
            return w, old is not w
        return self._packed(old, [w], [w.shape[0]], w)

    @torch.no_grad()
    def sync(self) -> bool:
        replaced = False
        new_layers = []
        for i, layer in enumerate(self.mods):
            old = self.layers[i] if i < len(self.layers) else None
            a, m = layer.self_attn, layer.mlp
            q, k, v = (effective_linear(getattr(a, n)) for n in ("q_proj", "k_proj", "v_proj"))
            o = effective_linear(a.o_proj)
            g, u = effective_linear(m.gate_proj), effective_linear(m.up_proj)
            d = effective_linear(m.down_proj)
            rows_qkv = [q[0].shape[0], k[0].shape[0], v[0].shape[0]]
            rows_gu = [g[0].shape[0], u[0].shape[0]]
            qkv, r1 = self._packed(old and old.qkv, [q[0], k[0], v[0]], rows_qkv, q[0])
            qkv_bias, r2 = self._packed(old and old.qkv_bias, [q[1], k[1], v[1]], rows_qkv, q[0][:, 0])
            gate_up, r3 = self._packed(old and old.gate_up, [g[0], u[0]], rows_gu, g[0])
            gate_up_bias, r4 = self._packed(old and old.gate_up_bias, [g[1], u[1]], rows_gu, g[0][:, 0])
            o_w, r5 = self._single(old and old.o, o[0], _lora_layer(a.o_proj))
            o_bias, r6 = self._single(old and old.o_bias, o[1], _lora_layer(a.o_proj))
            down, r7 = self._single(old and old.down, d[0], _lora_layer(m.down_proj))
            down_bias, r8 = self._single(old and old.down_bias, d[1], _lora_layer(m.down_proj))
            replaced |= old is None or any((r1, r2, r3, r4, r5, r6, r7, r8))
            assert qkv is not None and o_w is not None and gate_up is not None and down is not None
            new_layers.append(LayerWeights(qkv, qkv_bias, o_w, o_bias, gate_up, gate_up_bias, down, down_bias))
        self.layers = new_layers
        hw, hb = effective_linear(self.head_mod)
        merged = _lora_layer(self.head_mod)
        self.head, r1 = self._single(self.head, hw, merged)
        self.head_bias, r2 = self._single(self.head_bias, hb, merged)
        return replaced or r1 or r2


class KVModel:
    """`forward(ids, pos, write, rows, L, mask, last)` → float32 logits [n, V] at position `last` of each row, after
    writing the chunk's keys and values at cache positions `write` of slots `rows` (None: every slot, in order).
    `mask` None: flex attention bounded per row by its position at `last` (compiled callers only: `start` [n] is
    pos[:, 0] — a chunk's positions are consecutive — and the caller has written it into `starts[:n]`, the copy the
    mask function reads); otherwise the boolean [n, 1, C, L] mask SDPA applies (see the module doc).
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
        self.qkv_split = [self.heads * self.head_dim, self.kv_heads * self.head_dim, self.kv_heads * self.head_dim]
        self.rope = sys.modules[type(attn).__module__].apply_rotary_pos_emb
        self.qk_norm = hasattr(attn, "q_norm") and hasattr(attn, "k_norm")
        self.device = device
        self.cache_dtype = dtype or self.inner.embed_tokens.weight.dtype
        self.weights = DecodeWeights(self.layers, self.head, dtype)
        self.slots, self.capacity = 0, 0
        self.k: list[torch.Tensor] = []
        self.v: list[torch.Tensor] = []
        self._heads = torch.arange(self.kv_heads, device=device)[None, :, None]
        # each row's first position, as the compiled attention's mask function reads it (`block_mask`): written by
        # the engine before a prefill and a decode block, and by each decode step for the next. Of a static size
        # (marked so for the compiler) and never computed in the compiled graph: inductor's C++ flex template (torch
        # 2.15) fails to compile a mask reading a tensor of symbolic size (an undeclared size variable in the
        # generated C++) and rejects one computed in the graph
        self.starts = torch.zeros(MAX_ROWS, dtype=torch.long, device=device)
        torch._dynamo.mark_static(self.starts, 0)

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

    def forward(
        self,
        ids: torch.Tensor,
        pos: torch.Tensor,
        write: torch.Tensor,
        rows: torch.Tensor | None,
        L: int,
        mask: torch.Tensor | None,
        last: torch.Tensor | None,
        start: torch.Tensor | None = None,
    ) -> torch.Tensor:
        n, C = ids.shape
        H, KV, d = self.heads, self.kv_heads, self.head_dim
        rep = H // KV
        h = self.inner.embed_tokens(ids)
        cos, sin = self.inner.rotary_emb(h, pos)
        blocks = m = None
        if mask is None:  # compiled: flex attention over each row's own key blocks (module doc)
            assert start is not None, "flex attention needs each row's first position (pos[:, 0])"
            bound = start + (C - 1 if last is None else last)
            blocks = block_mask(self.starts, start, bound, C, L)
        else:  # the mask of every query head sharing a KV head: [n, 1, rep·C, L] (queries packed per KV head below)
            m = mask if rep == 1 else mask.unsqueeze(2).expand(n, 1, rep, C, L).reshape(n, 1, rep * C, L)
        slot = torch.arange(n, device=ids.device) if rows is None else rows
        where = (slot[:, None, None], self._heads, write[:, None, :])
        for layer, w, kc, vc in zip(self.layers, self.weights.layers, self.k, self.v):
            attn = layer.self_attn
            res = h
            q, k, v = F.linear(layer.input_layernorm(h), w.qkv, w.qkv_bias).split(self.qkv_split, -1)
            q, k = q.view(n, C, H, d), k.view(n, C, KV, d)
            if self.qk_norm:
                q, k = attn.q_norm(q), attn.k_norm(k)
            q, k = q.transpose(1, 2), k.transpose(1, 2)
            v = v.view(n, C, KV, d).transpose(1, 2)
            q, k = self.rope(q, k, cos, sin)
            # under autocast the rotary embedding promotes q and k back to fp32: the cache keeps autocast's dtype
            kc.index_put_(where, k.to(kc.dtype))
            vc.index_put_(where, v.to(vc.dtype))
            if rows is None:
                keys, values = kc[:n, :, :L], vc[:n, :, :L]
            else:
                keys, values = kc[rows, :, :L], vc[rows, :, :L]
            if blocks is not None:  # query head g·rep + r uses KV head g (enable_gqa: transformers' repeat_kv order)
                o = flex_attention(
                    q.to(keys.dtype), keys, values, block_mask=blocks, scale=self.scaling, enable_gqa=rep > 1
                )
                assert isinstance(o, torch.Tensor)  # (no log-sum-exp asked for)
            else:  # [n, H, C, d] → [n, kv, rep·C, d]: query head g·rep + r uses KV head g (repeat_kv's order)
                qg = q.reshape(n, KV, rep * C, d)
                o = F.scaled_dot_product_attention(qg.to(keys.dtype), keys, values, attn_mask=m, scale=self.scaling)
            o = o.reshape(n, H, C, d).transpose(1, 2).reshape(n, C, H * d)
            h = res + F.linear(o, w.o, w.o_bias)
            gate, up = F.linear(layer.post_attention_layernorm(h), w.gate_up, w.gate_up_bias).chunk(2, -1)
            h = h + F.linear(layer.mlp.act_fn(gate) * up, w.down, w.down_bias)
        if last is None:
            h = h[:, -1]
        else:
            h = h[torch.arange(n, device=ids.device), last]
        head = self.weights.head
        assert head is not None, "the packed weights are synced at the start of every engine call"
        return F.linear(self.inner.norm(h), head, self.weights.head_bias).float()
