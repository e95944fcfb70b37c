"""GRPO: group-relative advantages and the clipped policy loss with a k3 KL to a frozen reference.

The loss is a token mean over model-generated tokens only: observation tokens (loss mask 0) are out of the
numerator, the denominator *and* the KL — AutoCoA masks them only in the advantages. Masked positions are replaced
before any exp(), so whatever log-probs or advantages sit there cannot leak in (not even as inf · 0 = NaN).
Returns (sum, count, extras) like the other stage losses so the trainer divides by the global count under DDP."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch


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
        r = torch.tensor(rewards[g : g + group_size], dtype=torch.float64)
        a = r - r.mean()
        if std_normalize:
            # population std (unbiased=False) so G = 1 gives 0 advantage, not NaN
            a = a / (r.std(unbiased=False) + eps)
        out += a.tolist()
    return out


def _pg_k3(log_ratio: torch.Tensor, adv: torch.Tensor, d: torch.Tensor, clip_eps: float) -> tuple:
    """The clipped policy-gradient term and k3 per token: (pg, k3, ratio, unclipped, clipped)."""
    ratio = torch.exp(log_ratio)
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * adv
    pg = -torch.minimum(unclipped, clipped)
    k3 = torch.exp(d) - d - 1
    return pg, k3, ratio, unclipped, clipped


def grpo_token_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    ref_logp: torch.Tensor,
    adv: torch.Tensor,
    clip_eps: float,
    kl_coef: float,
) -> torch.Tensor:
    """loss_t of trained tokens only (1-D, no mask): what grpo_token_terms sums, token by token — the token-local
    loss the fused GRPO head differentiates in its one pass (model/linear_ce.ChunkedLinearTokenLoss)."""
    pg, k3, *_ = _pg_k3(logp - old_logp, adv, ref_logp - logp, clip_eps)
    return pg + kl_coef * k3


def grpo_token_terms(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    ref_logp: torch.Tensor,
    adv: torch.Tensor,
    mask: torch.Tensor,
    clip_eps: float,
    kl_coef: float,
) -> tuple[torch.Tensor, float, dict]:
    """Per-token GRPO terms on [B, T] tensors (adv broadcast per row or per token); mask 1 = model-generated.
    loss_t = −min(ρ·A, clip(ρ, 1±ε)·A) + β·k3,  ρ = exp(logp − old),  k3 = exp(ref − logp) − (ref − logp) − 1."""
    m = mask > 0
    zero = torch.zeros_like(logp)
    if adv.dim() == 1:
        adv = adv[:, None].expand_as(logp)
    adv = torch.where(m, adv, zero)
    log_ratio = torch.where(m, logp - old_logp, zero)
    d = torch.where(m, ref_logp - logp, zero)
    pg, k3, ratio, unclipped, clipped = _pg_k3(log_ratio, adv, d, clip_eps)
    per_token = torch.where(m, pg + kl_coef * k3, zero)
    count = float(m.sum().item())
    with torch.no_grad():
        clip_hit = m & (clipped < unclipped)  # the clipped branch is the active one
        extras = {
            "kl_sum": float((k3 * m).sum()),
            "clip_sum": float(clip_hit.sum()),
            "pg_sum": float((pg * m).sum()),
            "ratio_sum": float((ratio * m).sum()),
        }
    return per_token.sum(), count, extras


def logprob_diff_parts(
    logp: torch.Tensor, old_logp: torch.Tensor, mask: torch.Tensor, edges: list[float]
) -> dict[str, float]:
    """|trainer − sampler| log-prob of every trained token: the sum, the largest and a histogram over `edges` (bin 0
    below edges[0], bin i in [edges[i-1], edges[i]), the last at or above edges[-1]: the core's `histogram` event).
    Before the step's first optimiser update the two policies are the same weights, so any difference is the rollout
    engine's numerics against the trainer's (KV cache vs full forward, another dtype or kernel)."""
    with torch.no_grad():
        d = (logp.detach().double() - old_logp.double()).abs()[mask > 0]
        e = torch.tensor(edges, dtype=torch.float64, device=d.device)
        counts = torch.bincount(torch.bucketize(d, e, right=True), minlength=len(edges) + 1)
        out = {"lpd_sum": float(d.sum()), "lpd_max": float(d.max()) if d.numel() else 0.0}
        out.update({f"lpd_bin{i}": float(c) for i, c in enumerate(counts.tolist())})
    return out


def _targets(s: Sample, values: list[float]) -> list[float]:
    """Per-target values of one sample's sequence (prompt + response), aligned with its targets (token t+1)."""
    return ([0.0] * len(s.prompt_ids) + values)[1:]


def grpo_count(samples: list[Sample]) -> float:
    """Trained tokens of a batch (what grpo_loss_parts returns as count), known before any forward."""
    return float(sum(sum(_targets(s, [float(m > 0) for m in s.loss_mask])) for s in samples))


def grpo_lengths(samples: list[Sample]) -> list[list[int]]:
    return [[len(s.prompt_ids) + len(s.ids)] for s in samples]


def grpo_loss_parts(
    model: torch.nn.Module,
    ref_model: Any | None,
    samples: list[Sample],
    pad_id: int,
    device: torch.device,
    dtype: torch.dtype | None,
    clip_eps: float,
    kl_coef: float,
    temperature: float,
    packed: bool = False,
    lpd_edges: list[float] | None = None,
) -> tuple[torch.Tensor, float, dict[str, float]]:
    """The GRPO loss pieces of a batch of trajectories (policy forward with grad, reference without). Log-probs and
    entropy come a chunk of positions at a time, only at trained positions (logprobs.TokenScorer). With
    `lpd_edges`, the extras also carry the sampler/trainer log-prob difference (logprob_diff_parts)."""
    from ..model.scoring import as_scorer, fused_token_loss
    from ..model.packing import layout

    lay = layout([s.prompt_ids + s.ids for s in samples], pad_id, packed, device)
    mask = lay.place([_targets(s, [float(m) for m in s.loss_mask]) for s in samples])
    old = lay.place([_targets(s, [lp if lp is not None else 0.0 for lp in s.logprobs]) for s in samples])
    adv = lay.place([[s.advantage] * (len(s.prompt_ids) + len(s.ids) - 1) for s in samples])
    sel = mask > 0
    scorer = as_scorer(model)
    use_ref = ref_model is not None and kl_coef > 0
    if fused_token_loss(scorer):  # CUDA: the head's matmuls and this loss's gradient in one pass
        ref = None
        if use_ref and ref_model is not None:
            with torch.no_grad():
                ref, _ = as_scorer(ref_model)(
                    lay.ids, lay.attn, lay.pos, select=sel, temperature=temperature, dtype=dtype
                )
        old_flat, adv_flat = old.reshape(-1), adv.reshape(-1)
        ref_flat = None if ref is None else ref.reshape(-1)

        def token_loss(lp: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
            r = lp.detach() if ref_flat is None else ref_flat[pos]  # no reference: k3 = 0
            return grpo_token_loss(lp, old_flat[pos], r, adv_flat[pos], clip_eps, kl_coef)

        logp, ent, loss_sum = scorer(
            lay.ids,
            lay.attn,
            lay.pos,
            select=sel,
            temperature=temperature,
            with_entropy=True,
            dtype=dtype,
            token_loss=token_loss,
        )
        with torch.no_grad():  # the count and the metrics, from the same log-probs
            _, count, extras = grpo_token_terms(logp, old, logp if ref is None else ref, adv, mask, clip_eps, kl_coef)
    else:
        logp, ent = scorer(
            lay.ids, lay.attn, lay.pos, select=sel, temperature=temperature, with_entropy=True, dtype=dtype
        )
        if use_ref and ref_model is not None:
            with torch.no_grad():
                ref, _ = as_scorer(ref_model)(
                    lay.ids, lay.attn, lay.pos, select=sel, temperature=temperature, dtype=dtype
                )
        else:
            ref = logp.detach()  # no reference: k3 = 0
        loss_sum, count, extras = grpo_token_terms(logp, old, ref, adv, mask, clip_eps, kl_coef)
    if lpd_edges is not None:
        extras.update(logprob_diff_parts(logp, old, mask, lpd_edges))
    with torch.no_grad():
        extras.update({"entropy_sum": float((ent * mask).sum()), "train_tokens": float(lay.tokens)})
    return loss_sum, count, extras
