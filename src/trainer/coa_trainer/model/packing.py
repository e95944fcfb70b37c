"""Batch layouts for the losses: right-padded rows (one sequence per row, attention mask), or packed — every
sequence of a micro-batch in one row, no padding, position ids restarting at 0 for each sequence and no attention
mask. The losses only read targets through `Layout.place`, which puts each sequence's per-target values at its own
positions: the last token of one sequence never gets the next sequence's first token as a target (that position
holds 0 = not trained).

Attention must not cross a sequence boundary in a packed row. transformers' sdpa path builds a dense
block-diagonal [T, T] mask from the position ids (masking_utils.find_packed_sequence_indices) — which also takes SDPA
off its flash kernel. `packed_attention` ("coa_packed", registered with transformers' attention and mask interfaces
and set on the models the trainer scores with: `use_packed_attention`) builds no mask: given the sequences'
boundaries (`cu_seq_lens_q`, computed once per forward by model/scoring.TokenScorer, or from the position ids) it
runs PyTorch's variable-length flash attention on CUDA (`torch.nn.attention.varlen.varlen_attn`) and, elsewhere,
SDPA with `is_causal` over the sequences unpacked into a padded batch (the padding queries are computed and
dropped; no key is ever masked). Anything else — padded rows, generation with a cache — is transformers' sdpa
unchanged.

`micro_batches` cuts a batch into consecutive groups within a token budget, so short trajectories do not pay for the
longest one of the whole batch (packed: a group costs its tokens; padded: rows × its longest row)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from .family import base_model, full_attention_reason
from .fastpath import attention_registry, varlen_plan

PACKED_ATTENTION = "coa_packed"


@dataclass
class Layout:
    ids: torch.Tensor  # [R, L]
    attn: torch.Tensor | None  # [R, L] (padded), None (packed)
    pos: torch.Tensor | None  # [R, L] restarting per sequence (packed), None (padded: 0..L-1 per row)
    spans: list[tuple[int, int, int]]  # (row, start, length) of each sequence, in input order
    tokens: int  # real tokens (no padding)

    def place(self, per_seq: Sequence[Sequence[float]], dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """[R, L-1] with per_seq[i][j] (the value of sequence i's j-th target, i.e. its token j+1) at that target's
        position; 0 everywhere else (padding, and the position between two packed sequences)."""
        R, L = self.ids.shape
        out = torch.zeros((R, L - 1), dtype=dtype)
        for (row, start, n), vals in zip(self.spans, per_seq):
            k = min(len(vals), n - 1)
            if k > 0:
                out[row, start : start + k] = torch.as_tensor(list(vals[:k]), dtype=dtype)
        return out.to(self.ids.device)

    def seq_index(self) -> torch.Tensor:
        """[R, L-1] long: which sequence each target belongs to, -1 where none."""
        R, L = self.ids.shape
        out = torch.full((R, L - 1), -1, dtype=torch.long)
        for i, (row, start, n) in enumerate(self.spans):
            out[row, start : start + max(0, n - 1)] = i
        return out.to(self.ids.device)


def layout(seqs: list[list[int]], pad_id: int, packed: bool, device: torch.device) -> Layout:
    if packed:
        flat: list[int] = []
        pos: list[int] = []
        spans = []
        for s in seqs:
            spans.append((0, len(flat), len(s)))
            flat += s
            pos += range(len(s))
        if len(flat) < 2:  # a row needs one target at least (same rule as the padded layout's T ≥ 2)
            flat, pos = flat + [pad_id] * (2 - len(flat)), pos + [0] * (2 - len(pos))
        ids = torch.tensor([flat], dtype=torch.long)
        return Layout(
            ids.to(device), None, torch.tensor([pos], dtype=torch.long).to(device), spans, sum(len(s) for s in seqs)
        )
    T = max(2, max(len(s) for s in seqs))
    ids = torch.full((len(seqs), T), pad_id, dtype=torch.long)
    attn = torch.zeros((len(seqs), T), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(s, dtype=torch.long)
        attn[i, : len(s)] = 1
    return Layout(
        ids.to(device), attn.to(device), None, [(i, 0, len(s)) for i, s in enumerate(seqs)], sum(len(s) for s in seqs)
    )


def micro_batches(lengths: list[list[int]], budget: int | None, packed: bool) -> list[slice]:
    """Consecutive groups of items (each item: the lengths of its sequences — an SFT-1 pair has two, which stay
    together) whose cost fits `budget` tokens (packed: a group costs its tokens; padded: rows × its longest row), as
    few as fit and as even as that count allows: 20k tokens at a 16k budget are two micro-batches of ~10k, not 16k
    and a ragged 4k whose kernels run the GPU half idle for the same fixed cost per micro-batch. An item bigger than
    the budget is a group of its own. None: one group."""
    if budget is None or not lengths:
        return [slice(0, len(lengths))]
    fewest = _cut(lengths, budget, packed)
    if len(fewest) == 1:
        return fewest
    lo, hi = 1, budget  # the smallest cap that still needs no more groups: greedy count is monotone in the cap
    while lo < hi:
        mid = (lo + hi) // 2
        if len(_cut(lengths, mid, packed)) <= len(fewest):
            hi = mid
        else:
            lo = mid + 1
    return _cut(lengths, lo, packed)


def _cut(lengths: list[list[int]], cap: int, packed: bool) -> list[slice]:
    """Greedy consecutive groups of cost ≤ cap (the fewest such groups: a group's cost only grows as it grows)."""
    out, start, seqs = [], 0, []
    for i, item in enumerate(lengths):
        trial = seqs + list(item)
        cost = sum(trial) if packed else len(trial) * max(trial, default=0)
        if seqs and cost > cap:
            out.append(slice(start, i))
            start, trial = i, list(item)
        seqs = trial
    out.append(slice(start, len(lengths)))
    return out


# ---------------------------------------------------------------- packed attention without a dense mask


def cu_seqlens(position_ids: torch.Tensor) -> tuple[torch.Tensor, int] | None:
    """(cumulative sequence starts [n + 1] int32, longest sequence) of a packed row [1, T]; None if it holds one
    sequence. One host synchronisation."""
    if position_ids.shape[0] != 1:
        return None
    starts = (position_ids[0] == 0).nonzero().flatten()
    if starts.numel() <= 1 or int(starts[0]) != 0:
        return None
    T = position_ids.shape[1]
    cu = torch.cat([starts, starts.new_tensor([T])]).to(torch.int32)
    return cu, int((cu[1:] - cu[:-1]).max())


def varlen_causal(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu: torch.Tensor, max_len: int, scale: float | None
) -> torch.Tensor:
    """Causal attention within each sequence of packed [T, heads, d] tensors (kv heads may be fewer: GQA): torch's
    varlen flash attention where model/fastpath.varlen_plan finds it usable, else the padded path below."""
    plan = varlen_plan(q, scale)
    if not isinstance(plan, str):
        api, dtype = plan
        return api(q.to(dtype), k.to(dtype), v.to(dtype), cu, max_len, scale)
    return unpacked_causal(q, k, v, cu, max_len, scale)


def unpacked_causal(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu: torch.Tensor, max_len: int, scale: float | None
) -> torch.Tensor:
    """The portable path: the sequences unpacked into [n, heads, max_len, d], SDPA is_causal. Causal within each
    sequence needs no mask (padding sits after the keys any real query may see), and no key of one sequence is in
    another's row; the padding queries are computed and dropped."""
    starts, lens = cu[:-1].long(), (cu[1:] - cu[:-1]).long()
    offs = torch.arange(max_len, device=q.device)
    idx = (starts[:, None] + offs[None, :]).clamp(max=q.shape[0] - 1)
    valid = offs[None, :] < lens[:, None]

    def unpack(x: torch.Tensor) -> torch.Tensor:
        return x[idx].transpose(1, 2)  # [n, heads, max_len, d]

    o = F.scaled_dot_product_attention(
        unpack(q), unpack(k), unpack(v), is_causal=True, scale=scale, enable_gqa=k.shape[1] != q.shape[1]
    )
    return o.transpose(1, 2)[valid]  # [T, heads, d], the sequences back in order


def packed_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    is_causal: bool | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """transformers' attention-function signature ([B, heads, T, d] in, [B, T, heads, d] out)."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    cu, max_len = kwargs.pop("cu_seq_lens_q", None), kwargs.pop("max_length_q", None)
    kwargs.pop("cu_seq_lens_k", None)
    kwargs.pop("max_length_k", None)
    if (
        cu is None
        and attention_mask is None
        and query.shape[0] == 1
        and kwargs.get("position_ids") is not None
        and query.shape[2] == key.shape[2]
    ):
        found = cu_seqlens(kwargs["position_ids"])  # a packed row whose caller gave no boundaries
        cu, max_len = found if found is not None else (None, None)
    if cu is None or dropout > 0:
        if cu is not None:
            raise ValueError("packed attention with dropout is not supported")
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, is_causal=is_causal, **kwargs
        )
    if max_len is None:
        raise ValueError("packed attention needs max_length_q beside cu_seq_lens_q")
    out = varlen_causal(
        query[0].transpose(0, 1), key[0].transpose(0, 1), value[0].transpose(0, 1), cu, int(max_len), scaling
    )
    return out.unsqueeze(0), None


def packed_mask(
    batch_size: int,
    q_length: int,
    kv_length: int,
    q_offset: int = 0,
    kv_offset: int = 0,
    attention_mask: torch.Tensor | None = None,
    **kwargs: Any,
) -> torch.Tensor | None:
    """No mask for a forward over whole sequences without padding (packed or one sequence: `packed_attention`
    keeps it causal within each); transformers' sdpa mask for anything else."""
    from transformers.masking_utils import sdpa_mask

    if attention_mask is None and q_offset == 0 and kv_offset == 0 and q_length == kv_length:
        return None
    return sdpa_mask(
        batch_size, q_length, kv_length, q_offset=q_offset, kv_offset=kv_offset, attention_mask=attention_mask, **kwargs
    )


_REGISTERED = False


def use_packed_attention(lm: torch.nn.Module) -> bool:
    """Switch a model from transformers' sdpa to `packed_attention` (the same for everything but packed rows);
    False, unchanged, when `packed_attention_reason` says why not. Not saved with the model (transformers keeps it
    out of config.json)."""
    global _REGISTERED
    if packed_attention_reason(lm) is not None:
        return False
    base = base_model(lm)
    cfg = base.config
    if cfg._attn_implementation == PACKED_ATTENTION:
        return True
    if not _REGISTERED:
        from transformers import AttentionInterface
        from transformers.masking_utils import AttentionMaskInterface

        AttentionInterface.register(PACKED_ATTENTION, packed_attention)
        AttentionMaskInterface.register(PACKED_ATTENTION, packed_mask)
        _REGISTERED = True
    base.set_attn_implementation(PACKED_ATTENTION)
    return cfg._attn_implementation == PACKED_ATTENTION


def packed_attention_reason(lm: torch.nn.Module) -> str | None:
    """None when `use_packed_attention` can switch the model; otherwise why it keeps transformers' attention: not a
    decoder whose layers all attend fully, another implementation (eager, flash-attention: its varlen path
    already), or a transformers without the registries and mask arguments packed attention uses."""
    why = full_attention_reason(lm)
    if why is not None:
        return why
    base = base_model(lm)
    impl = base.config._attn_implementation
    if impl == PACKED_ATTENTION:
        return None
    if impl != "sdpa":
        return f"attn_implementation {impl}"
    if not hasattr(base, "set_attn_implementation"):
        return f"{type(base).__name__} has no set_attn_implementation"
    return attention_registry()
