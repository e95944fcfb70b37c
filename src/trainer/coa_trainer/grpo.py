"""GRPO: group-relative advantages and the clipped policy loss with a k3 KL to a frozen reference.

The loss is a token mean over model-generated tokens only: observation tokens (loss mask 0) are out of the
numerator, the denominator *and* the KL — AutoCoA masks them only in the advantages. Masked positions are replaced
before any exp(), so whatever log-probs or advantages sit there cannot leak in (not even as inf · 0 = NaN).
Returns (sum, count, extras) like the other stage losses so the trainer divides by the global count under DDP."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from .losses import autocast


@dataclass
class Sample:
    """One trajectory to train on: response ids with loss mask, the sampler's log-probs (None where mask 0)."""

    prompt_ids: list[int]
    ids: list[int]
    loss_mask: list[int]
    logprobs: list[float | None]
    advantage: float


def group_advantages(rewards: list[float], group_size: int, std_normalize: bool, eps: float = 1e-6) -> list[float]:
    """r − mean(group), optionally ÷ (std(group) + eps); groups are consecutive runs of `group_size` rewards."""
    if len(rewards) % group_size:
        raise ValueError(f"{len(rewards)} rewards do not split into groups of {group_size}")
    out: list[float] = []
    for g in range(0, len(rewards), group_size):
        r = torch.tensor(rewards[g:g + group_size], dtype=torch.float64)
        a = r - r.mean()
        if std_normalize:
            # population std (unbiased=False) so G = 1 gives 0 advantage, not NaN
            a = a / (r.std(unbiased=False) + eps)
        out += a.tolist()
    return out


def grpo_token_terms(logp: torch.Tensor, old_logp: torch.Tensor, ref_logp: torch.Tensor, adv: torch.Tensor,
                     mask: torch.Tensor, clip_eps: float, kl_coef: float) -> tuple[torch.Tensor, float, dict]:
    """Per-token GRPO terms on [B, T] tensors (adv broadcast per row or per token); mask 1 = model-generated.
    loss_t = −min(ρ·A, clip(ρ, 1±ε)·A) + β·k3,  ρ = exp(logp − old),  k3 = exp(ref − logp) − (ref − logp) − 1."""
    m = mask > 0
    zero = torch.zeros_like(logp)
    if adv.dim() == 1:
        adv = adv[:, None].expand_as(logp)
    adv = torch.where(m, adv, zero)
    log_ratio = torch.where(m, logp - old_logp, zero)
    ratio = torch.exp(log_ratio)
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * adv
    pg = -torch.minimum(unclipped, clipped)
    d = torch.where(m, ref_logp - logp, zero)
    k3 = torch.exp(d) - d - 1
    per_token = torch.where(m, pg + kl_coef * k3, zero)
    count = float(m.sum().item())
    with torch.no_grad():
        clip_hit = m & (clipped < unclipped)  # the clipped branch is the active one
        extras = {"kl_sum": float((k3 * m).sum()), "clip_sum": float(clip_hit.sum()),
                  "pg_sum": float((pg * m).sum()), "ratio_sum": float((ratio * m).sum())}
    return per_token.sum(), count, extras


def _collate(samples: list[Sample], pad_id: int, device: torch.device) -> tuple[torch.Tensor, ...]:
    """Right-padded ids/attention, and per shifted target: mask, old log-probs, advantages, all [B, T-1]."""
    seqs = [s.prompt_ids + s.ids for s in samples]
    T = max(2, max(len(x) for x in seqs))
    B = len(samples)
    ids = torch.full((B, T), pad_id, dtype=torch.long)
    attn = torch.zeros((B, T), dtype=torch.long)
    mask = torch.zeros((B, T), dtype=torch.float32)
    old = torch.zeros((B, T), dtype=torch.float32)
    for i, (s, x) in enumerate(zip(samples, seqs)):
        ids[i, :len(x)] = torch.tensor(x, dtype=torch.long)
        attn[i, :len(x)] = 1
        p = len(s.prompt_ids)
        mask[i, p:p + len(s.ids)] = torch.tensor(s.loss_mask, dtype=torch.float32)
        old[i, p:p + len(s.ids)] = torch.tensor([lp if lp is not None else 0.0 for lp in s.logprobs])
    adv = torch.tensor([s.advantage for s in samples], dtype=torch.float32)
    return ids.to(device), attn.to(device), mask[:, 1:].to(device), old[:, 1:].to(device), adv.to(device)


def _logits_logp(model: Any, ids: torch.Tensor, attn: torch.Tensor, temperature: float,
                 dtype: torch.dtype | None) -> tuple[torch.Tensor, torch.Tensor]:
    """All-vocabulary log-probs at the sampling temperature [B, T-1, V], and the targets' [B, T-1]."""
    with autocast(ids.device, dtype):
        logits = model(input_ids=ids, attention_mask=attn, use_cache=False).logits
    logp_all = F.log_softmax(logits[:, :-1].float() / temperature, dim=-1)
    return logp_all, logp_all.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)


def grpo_loss_parts(model: Any, ref_model: Any | None, samples: list[Sample], pad_id: int, device: torch.device,
                    dtype: torch.dtype | None, clip_eps: float, kl_coef: float, temperature: float
                    ) -> tuple[torch.Tensor, float, dict[str, float]]:
    """The GRPO loss pieces of a batch of trajectories (policy forward with grad, reference without)."""
    ids, attn, mask, old, adv = _collate(samples, pad_id, device)
    logp_all, logp = _logits_logp(model, ids, attn, temperature, dtype)
    if ref_model is not None and kl_coef > 0:
        with torch.no_grad():
            _, ref = _logits_logp(ref_model, ids, attn, temperature, dtype)
    else:
        ref = logp.detach()  # no reference: k3 = 0
    loss_sum, count, extras = grpo_token_terms(logp, old, ref, adv, mask, clip_eps, kl_coef)
    with torch.no_grad():
        ent = -(logp_all.exp() * logp_all).sum(-1)
        extras["entropy_sum"] = float((ent * mask).sum())
        extras["train_tokens"] = float(attn.sum())
    return loss_sum, count, extras
