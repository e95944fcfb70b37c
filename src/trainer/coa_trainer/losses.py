"""Batching, per-token log-probs and the stage losses. Losses return (sum, count) pieces so the trainer can divide
by the *global* count under DDP (equal losses to one process with the same global batch)."""

from __future__ import annotations

import contextlib
from typing import Any

import torch
import torch.nn.functional as F


def collate(seqs: list[list[int]], masks: list[list[int]], pad_id: int, device: torch.device
            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Right-padded input ids, attention mask, and the target mask aligned with the shifted targets [B, T-1]."""
    T = max(2, max(len(s) for s in seqs))
    ids = torch.full((len(seqs), T), pad_id, dtype=torch.long)
    attn = torch.zeros((len(seqs), T), dtype=torch.long)
    tmask = torch.zeros((len(seqs), T), dtype=torch.float32)
    for i, (s, m) in enumerate(zip(seqs, masks)):
        ids[i, : len(s)] = torch.tensor(s, dtype=torch.long)
        attn[i, : len(s)] = 1
        tmask[i, : len(m)] = torch.tensor(m, dtype=torch.float32)
    return ids.to(device), attn.to(device), tmask[:, 1:].to(device)


def autocast(device: torch.device, dtype: torch.dtype | None) -> Any:
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=dtype)


def token_logprobs(model: Any, ids: torch.Tensor, attn: torch.Tensor, dtype: torch.dtype | None = None
                   ) -> torch.Tensor:
    """log p(ids[:, t+1] | ids[:, :t+1]) for every position, [B, T-1], in float32."""
    with autocast(ids.device, dtype):
        logits = model(input_ids=ids, attention_mask=attn, use_cache=False).logits
    logp = F.log_softmax(logits[:, :-1].float(), dim=-1)
    return logp.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)


def lm_loss_parts(model: Any, batch: list[Any], pad_id: int, device: torch.device, dtype: torch.dtype | None
                  ) -> tuple[torch.Tensor, float, dict[str, float]]:
    """Sum of masked token NLL and the number of trained tokens (pretrain, SFT-2, SFT-3)."""
    ids, attn, tmask = collate([e.input_ids for e in batch], [e.target_mask for e in batch], pad_id, device)
    lp = token_logprobs(model, ids, attn, dtype)
    nll_sum = -(lp * tmask).sum()
    count = float(tmask.sum().item())
    return nll_sum, count, {"tokens": float(attn.sum().item())}


def sft1_loss_parts(model: Any, pairs: list[Any], pad_id: int, device: torch.device, dtype: torch.dtype | None,
                    beta: float, margin: float, alpha: float) -> tuple[torch.Tensor, float, dict[str, float]]:
    """AutoCoA SFT-1: −log σ(β·(P̄c − P̄r) − margin) + α·(−P̄c), P̄ = mean token log-prob of the continuation.
    Returns the sum over pairs and the pair count; extras are sums (divided by the count when logged)."""
    seqs, masks = [], []
    for p in pairs:
        for cont, cmask in ((p.chosen_ids, p.chosen_mask), (p.rejected_ids, p.rejected_mask)):
            ctx = p.prompt_ids + p.prefix_ids
            seqs.append(ctx + cont)
            # the mean runs over model-written tokens only (a whole trajectory's observations are the env's)
            masks.append([0] * len(ctx) + (list(cmask) if cmask is not None else [1] * len(cont)))
    ids, attn, tmask = collate(seqs, masks, pad_id, device)
    lp = token_logprobs(model, ids, attn, dtype)
    mean_lp = (lp * tmask).sum(-1) / tmask.sum(-1).clamp(min=1)
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
        "tokens": float(attn.sum().item()),
    }
    return per_pair.sum(), float(len(pairs)), extras
