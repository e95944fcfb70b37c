"""Batching, per-token log-probs and the stage losses. Losses return (sum, count) pieces so the trainer can divide
by the *global* count under DDP (equal losses to one process with the same global batch)."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from ..model.scoring import token_logprobs


def lm_count(batch: list[Any]) -> float:
    """The trained targets of a batch (what lm_loss_parts returns as count), known before any forward."""
    return float(sum(sum(e.target_mask[1 : len(e.input_ids)]) for e in batch))


def lm_loss_parts(
    model: torch.nn.Module,
    batch: list[Any],
    pad_id: int,
    device: torch.device,
    dtype: torch.dtype | None,
    packed: bool = False,
) -> tuple[torch.Tensor, float, dict[str, float]]:
    """Sum of masked token NLL and the number of trained tokens (pretrain, SFT-2, SFT-3)."""
    from ..model.packing import layout
    from ..model.scoring import as_scorer

    lay = layout([e.input_ids for e in batch], pad_id, packed, device)
    tmask = lay.place([e.target_mask[1 : len(e.input_ids)] for e in batch])
    # target masks are 0/1: the loss is the sum of the selected targets' NLL, fused with the LM head (no logits kept)
    nll_sum, _ = as_scorer(model)(lay.ids, lay.attn, lay.pos, select=tmask > 0, dtype=dtype, nll=True)
    count = float(tmask.sum().item())
    return nll_sum, count, {"tokens": float(lay.tokens)}


def _pair_seqs(pairs: list[Any]) -> tuple[list[list[int]], list[list[int]]]:
    seqs, masks = [], []
    for p in pairs:
        for cont, cmask in ((p.chosen_ids, p.chosen_mask), (p.rejected_ids, p.rejected_mask)):
            ctx = p.prompt_ids + p.prefix_ids
            seqs.append(ctx + cont)
            # the mean runs over model-written tokens only (a whole trajectory's observations are the env's)
            masks.append([0] * len(ctx) + (list(cmask) if cmask is not None else [1] * len(cont)))
    return seqs, masks


def sft1_lengths(pairs: list[Any]) -> list[list[int]]:
    """Each pair's two sequence lengths (a pair stays in one micro-batch: its loss needs both means)."""
    seqs, _ = _pair_seqs(pairs)
    return [[len(seqs[2 * i]), len(seqs[2 * i + 1])] for i in range(len(pairs))]


def sft1_loss_parts(
    model: torch.nn.Module,
    pairs: list[Any],
    pad_id: int,
    device: torch.device,
    dtype: torch.dtype | None,
    beta: float,
    margin: float,
    alpha: float,
    packed: bool = False,
) -> tuple[torch.Tensor, float, dict[str, float]]:
    """AutoCoA SFT-1: −log σ(β·(P̄c − P̄r) − margin) + α·(−P̄c), P̄ = mean token log-prob of the continuation.
    Returns the sum over pairs and the pair count; extras are sums (divided by the count when logged)."""
    from ..model.packing import layout

    seqs, masks = _pair_seqs(pairs)
    lay = layout(seqs, pad_id, packed, device)
    tmask = lay.place([m[1 : len(s)] for s, m in zip(seqs, masks)])
    lp = token_logprobs(model, lay.ids, lay.attn, dtype, lay.pos, tmask > 0)
    # per-sequence sums through the sequence index (rows in the padded layout, spans of one row when packed)
    seq = lay.seq_index()
    valid = seq >= 0
    sums = torch.zeros(len(seqs), dtype=lp.dtype, device=lp.device).index_add(0, seq[valid], (lp * tmask)[valid])
    counts = torch.zeros(len(seqs), dtype=lp.dtype, device=lp.device).index_add(0, seq[valid], tmask[valid])
    mean_lp = sums / counts.clamp(min=1)
    pc, pr = mean_lp[0::2], mean_lp[1::2]
    per_pair = -F.logsigmoid(beta * (pc - pr) - margin) + alpha * (-pc)
    correct = (pc > pr).float()
    act = torch.tensor([p.act for p in pairs], dtype=torch.float32, device=device)
    extras = {
        "pair_correct": float(correct.sum().item()),
        "act_pairs": float(act.sum().item()),
        "act_correct": float((correct * act).sum().item()),
        "logp_chosen": float(pc.detach().sum().item()),
        "logp_rejected": float(pr.detach().sum().item()),
        "tokens": float(lay.tokens),
    }
    return per_pair.sum(), float(len(pairs)), extras
