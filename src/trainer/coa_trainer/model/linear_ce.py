"""Linear + cross-entropy fused: the summed NLL of target tokens through the LM head, with no [tokens × vocab] logits
kept for backward.

`ChunkedLinearNLL` computes, a chunk of rows at a time, the logits, their log-sum-exp and — while they exist —
the gradients with respect to the hidden states and the head's weight (softmax − one-hot), which is all backward
needs: the loss is a plain sum, so its gradient is those times one scalar. That is three LM-head matmuls per
token, as an ordinary forward + backward, instead of the four of a checkpointed chunk (model/scoring.py recomputes
each chunk's logits in backward, because a log-prob's gradient there depends on the loss it feeds), and at most one
chunk of logits alive at a time. The method and its shape are Liger-Kernel's fused linear cross-entropy
(linkedin/Liger-Kernel, src/liger_kernel/ops/fused_linear_cross_entropy.py), whose Triton kernel
(model/liger.py, imported on CUDA only) runs instead on a CUDA device."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import torch


class _Ctx(Protocol):
    """What these functions use of autograd's context object, and the two fields they keep on it for backward."""

    needs_input_grad: tuple[bool, ...]
    saved_tensors: tuple[torch.Tensor, ...]
    kinds: tuple[bool, bool, bool]  # which of grad_h, grad_w, grad_b were computed (and saved, in that order)
    dtypes: tuple[torch.dtype, torch.dtype, torch.dtype | None]

    def save_for_backward(self, *tensors: torch.Tensor) -> None: ...

    def mark_non_differentiable(self, *tensors: torch.Tensor) -> None: ...


# f(log p of some selected targets, their flat positions) -> per-token losses
TokenLoss = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


class ChunkedLinearNLL(torch.autograd.Function):
    """Σ_i −log softmax(h_i Wᵀ + b)[t_i]; h [N, H], weight [V, H], bias [V] or None, targets [N]."""

    @staticmethod
    def forward(
        ctx: _Ctx,
        h: torch.Tensor,
        weight: torch.Tensor,
        bias: torch.Tensor | None,
        targets: torch.Tensor,
        rows: int,
        grads: bool,
    ) -> torch.Tensor:
        # `grads`: whether the caller's grad mode was on — inside forward it is always off, and needs_input_grad
        # stays True under no_grad, so without it an evaluation would build gradients nobody reads
        need = ctx.needs_input_grad if grads else (False, False, False)
        grad_h = torch.empty_like(h) if need[0] else None
        grad_w = torch.zeros(weight.shape, dtype=torch.float32, device=weight.device) if need[1] else None
        grad_b = (
            torch.zeros(bias.shape, dtype=torch.float32, device=bias.device) if bias is not None and need[2] else None
        )
        total = torch.zeros((), dtype=torch.float32, device=h.device)
        for s in range(0, h.shape[0], rows):
            hc, tc = h[s : s + rows], targets[s : s + rows]
            logits = (hc @ weight.t().to(hc.dtype)).float()
            if bias is not None:
                logits = logits + bias.float()
            lse = torch.logsumexp(logits, dim=-1)
            total = total + (lse - logits.gather(-1, tc[:, None]).squeeze(-1)).sum()
            if grad_h is None and grad_w is None and grad_b is None:
                continue
            g = torch.softmax(logits, dim=-1)  # d loss / d logits = softmax − one-hot
            g[torch.arange(g.shape[0], device=g.device), tc] -= 1.0
            if grad_h is not None:
                grad_h[s : s + rows] = (g.to(hc.dtype) @ weight.to(hc.dtype)).to(h.dtype)
            if grad_w is not None:
                grad_w += (g.t().to(hc.dtype) @ hc).float()
            if grad_b is not None:
                grad_b += g.sum(0)
        ctx.save_for_backward(*(x for x in (grad_h, grad_w, grad_b) if x is not None))
        ctx.kinds = (grad_h is not None, grad_w is not None, grad_b is not None)
        ctx.dtypes = (h.dtype, weight.dtype, None if bias is None else bias.dtype)
        return total

    @staticmethod
    def backward(ctx: _Ctx, grad_out: torch.Tensor) -> tuple:  # pyright: ignore[reportIncompatibleMethodOverride]
        saved = iter(ctx.saved_tensors)
        out: list[torch.Tensor | None] = []
        for has, dtype in zip(ctx.kinds, ctx.dtypes):
            out.append((next(saved) * grad_out).to(dtype) if has else None)
        return out[0], out[1], out[2], None, None, None


def linear_nll_sum(
    h: torch.Tensor, head: torch.nn.Linear, targets: torch.Tensor, rows: int, kernel: str = "auto"
) -> torch.Tensor:
    """Σ −log p(target) of hidden states h [N, H] through `head`, `rows` at a time (model/scoring.chunk_rows: the
    chunk size the scorer uses). `kernel`: "liger" (CUDA), "chunked", or "auto"
    (Liger-Kernel's Triton kernel on CUDA when installed, the chunked PyTorch function otherwise). With grad mode off
    (evaluation) only the loss is computed: Liger's kernel always computes gradients in its forward, so "auto"
    takes the chunked function then."""
    from .liger import fused_linear_ce_class

    grads = torch.is_grad_enabled()
    wanted = kernel == "liger" or (kernel == "auto" and grads)
    cls = fused_linear_ce_class() if wanted and h.is_cuda else None
    if kernel == "liger" and cls is None:
        raise RuntimeError("linear_nll_sum(kernel='liger') needs liger-kernel and a CUDA device")
    if cls is not None:
        return cls(reduction="sum")(head.weight, h, targets, head.bias)
    return ChunkedLinearNLL.apply(h, head.weight, head.bias, targets, rows, grads)


class ChunkedLinearTokenLoss(torch.autograd.Function):
    """Σ_i f_i(log p_i) for a token-local loss f — GRPO's clipped ratio and k3 KL, whose every term depends on its own
    token's log-prob only — through the LM head in one pass: per chunk of rows the logits give log p_i = log
    softmax(z_i)[t_i] (z = logits ÷ temperature) and the entropy; f's derivative in log p_i (autograd on the chunk's
    [n] vector: the loss's own code differentiates itself) times (one-hot − softmax) ÷ temperature is d loss / d
    logits, from which the gradients of h and the head are taken while the logits exist. Three head matmuls per token
    instead of the four of a checkpointed chunk, and no log-sum-exp kept or recomputed for backward — the structure of
    Liger-Kernel's fused linear GRPO loss (src/liger_kernel/chunked_loss/grpo_loss.py), with the loss supplied by the
    caller. Returns (Σ f, log p [N], entropy [N]); only Σ f carries gradients."""

    @staticmethod
    def forward(
        ctx: _Ctx,
        h: torch.Tensor,
        weight: torch.Tensor,
        bias: torch.Tensor | None,
        targets: torch.Tensor,
        rows: int,
        temperature: float,
        token_loss: TokenLoss,
        positions: torch.Tensor,
        grads: bool,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        need = ctx.needs_input_grad if grads else (False, False, False)
        grad_h = torch.empty_like(h) if need[0] else None
        grad_w = torch.zeros(weight.shape, dtype=torch.float32, device=weight.device) if need[1] else None
        grad_b = (
            torch.zeros(bias.shape, dtype=torch.float32, device=bias.device) if bias is not None and need[2] else None
        )
        N = h.shape[0]
        logp = torch.empty(N, dtype=torch.float32, device=h.device)
        ent = torch.empty(N, dtype=torch.float32, device=h.device)
        total = torch.zeros((), dtype=torch.float32, device=h.device)
        for s in range(0, N, rows):
            hc, tc = h[s : s + rows], targets[s : s + rows]
            z = (hc @ weight.t().to(hc.dtype)).float()
            if bias is not None:
                z = z + bias.float()
            if temperature != 1.0:
                z = z / temperature
            lse = torch.logsumexp(z, dim=-1)
            lp = z.gather(-1, tc[:, None]).squeeze(-1) - lse
            prob = torch.exp(z - lse[:, None])
            logp[s : s + rows] = lp
            ent[s : s + rows] = lse - (prob * z).sum(-1)
            with torch.enable_grad():
                leaf = lp.detach().requires_grad_(True)
                loss = token_loss(leaf, positions[s : s + rows])
                (g,) = torch.autograd.grad(loss.sum(), leaf)
            total = total + loss.detach().sum()
            if grad_h is None and grad_w is None and grad_b is None:
                continue
            dz = prob.mul_(-g[:, None])  # d loss / d z = g · (one-hot − softmax), in place of the softmax
            dz[torch.arange(dz.shape[0], device=dz.device), tc] += g
            if temperature != 1.0:
                dz = dz / temperature
            if grad_h is not None:
                grad_h[s : s + rows] = (dz.to(hc.dtype) @ weight.to(hc.dtype)).to(h.dtype)
            if grad_w is not None:
                grad_w += (dz.t().to(hc.dtype) @ hc).float()
            if grad_b is not None:
                grad_b += dz.sum(0)
        ctx.save_for_backward(*(x for x in (grad_h, grad_w, grad_b) if x is not None))
        ctx.kinds = (grad_h is not None, grad_w is not None, grad_b is not None)
        ctx.dtypes = (h.dtype, weight.dtype, None if bias is None else bias.dtype)
        ctx.mark_non_differentiable(logp, ent)
        return total, logp, ent

    @staticmethod
    def backward(ctx: _Ctx, grad_total: torch.Tensor, *_: object) -> tuple:  # pyright: ignore[reportIncompatibleMethodOverride]
        saved = iter(ctx.saved_tensors)
        out: list[torch.Tensor | None] = []
        for has, dtype in zip(ctx.kinds, ctx.dtypes):
            out.append((next(saved) * grad_total).to(dtype) if has else None)
        return out[0], out[1], out[2], None, None, None, None, None, None
