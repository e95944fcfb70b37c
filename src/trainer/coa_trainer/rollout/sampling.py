"""Next-token choice on the device — greedy, temperature, top-p — with no host synchronisation and randomness that
belongs to each trajectory.

Sampling draws one uniform number per row from a counter-based hash of (the trajectory's seed, its token index),
then inverts the (top-p truncated) distribution's cumulative sum. So a trajectory's tokens do not depend on which
other rows share its batch, when it was refilled into a slot, or how many rows were padding — the same seed gives the
same trajectory whether it was generated alone, in a batch of 256, or on another device (up to floating-point
differences in the logits). torch.multinomial with one generator, as the reference loop uses, cannot give that: its
stream is consumed by the whole batch at once.

The log-prob returned is log softmax(logits / T) at the chosen token — the full distribution at the sampling
temperature, what the trainer's scorer computes for the PPO ratio (top-p truncation is not renormalised into it,
as in verl and TRL). Greedy (T = 0) returns log softmax(logits)."""

from __future__ import annotations

import torch

_M32 = 0xFFFFFFFF


def _mix(x: torch.Tensor) -> torch.Tensor:
    """A 32-bit integer hash (hash-prospector's two-multiply family) on int64 tensors holding values < 2^32: both
    multipliers are < 2^31, so no product overflows int64."""
    x = x ^ (x >> 16)
    x = (x * 0x21F0AAAD) & _M32
    x = x ^ (x >> 15)
    x = (x * 0x735A2D97) & _M32
    return x ^ (x >> 15)


def uniform(seeds: torch.Tensor, counters: torch.Tensor) -> torch.Tensor:
    """One float32 in (0, 1) per row, a pure function of (seed, counter) (int64 tensors, seeds < 2^62)."""
    h = _mix(_mix(seeds & _M32) ^ ((seeds >> 32) & _M32))
    h = _mix(h ^ _mix(counters & _M32))
    return ((h >> 8).to(torch.float32) + 0.5) * (1.0 / (1 << 24))


def trajectory_seed(base: int, index: int) -> int:
    """The seed of trajectory `index` of a rollout call whose generator gave `base` (both Python ints)."""
    import hashlib

    digest = hashlib.blake2b(f"{base}/{index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 2  # < 2^62: int64 arithmetic stays positive


def nucleus(p: torch.Tensor, top_p: float) -> torch.Tensor:
    """Probabilities [B, V] with the tokens outside the top-p nucleus set to 0 — those whose more likely tokens already
    hold top_p of the mass; the most likely token is always kept. Not renormalised: `choose` scales its cumulative
    sum and torch.multinomial (the reference loop) takes weights."""
    if top_p >= 1.0:
        return p
    sp, order = p.sort(dim=-1, descending=True)
    keep = (sp.cumsum(-1) - sp) < top_p
    return p * torch.zeros_like(keep).scatter(-1, order, keep)


def choose(
    logits: torch.Tensor,
    temperature: float,
    top_p: float,
    seeds: torch.Tensor,
    counters: torch.Tensor,
    bias: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(token [B], log-prob [B]) from float logits [B, V]. `temperature` and `top_p` are Python numbers (a captured
    CUDA graph bakes them in); `bias` an additive [V] logit bias or None."""
    z = logits.float()
    if bias is not None:
        z = z + bias
    if temperature <= 0:
        # the reference loop's arithmetic exactly (argmax of the logits; PyTorch's fused log-softmax, the fastest way
        # to the normaliser on CPU: logsumexp is a chain of unfused ops there)
        tok = z.argmax(-1)
        return tok, torch.log_softmax(z, dim=-1).gather(-1, tok[:, None]).squeeze(-1)
    logp_all = torch.log_softmax(z / temperature, dim=-1)
    p = logp_all.exp()
    u = uniform(seeds, counters)[:, None]
    c = nucleus(p, top_p).cumsum(-1)  # the tokens outside the nucleus have no width in the cumulative sum
    tok = torch.searchsorted(c, u * c[:, -1:]).squeeze(-1).clamp_(max=p.shape[-1] - 1)
    return tok, logp_all.gather(-1, tok[:, None]).squeeze(-1)
