"""Per-token log-probs and entropy of a causal LM without a [batch, seq, vocab] log-softmax.

The decoder's last hidden states go through the LM head a chunk of positions at a time; each chunk's logits are
recomputed in backward (activation checkpointing of the chunk), so at most one chunk of logits — `CHUNK_ELEMENTS`
floats, 256 MiB in fp32 — exists at once, whatever the batch, sequence length or vocabulary (Qwen2.5: 151,936 entries,
where the full fp32 log-softmax of one 16 × 2,048 micro-batch is 20 GB). The price is one more LM-head matmul per
scored token in backward. Only the positions asked for (`select`: the loss mask) go through the head at all, so
prompt and observation tokens cost nothing there. A loss that is a plain sum of target NLLs (pretrain, SFT-2/3)
asks for `nll=True` instead: the head and its gradients are fused in one pass (model/linear_ce.py, Liger-Kernel's
kernel on CUDA), no recomputation. GRPO's loss is non-linear but token-local, so on CUDA `token_loss=` fuses it the
same way (linear_ce.ChunkedLinearTokenLoss); elsewhere, and for SFT-1's per-sequence means, log-probs and entropy are
checkpointed chunks — never full logits either way.

`TokenScorer` wraps the model as the module the trainer calls (and DDP / FSDP2 wrap), so the LM head's matmuls run
inside the wrapped module's forward: FSDP2's root all-gathers the embedding / head once, DDP sees every parameter
used. A model we cannot split into decoder + head (no `get_decoder`, logit soft-capping or scaling in its forward:
Gemma, Cohere …) is scored from its own logits, still without the fp32 log-softmax copy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeGuard

import contextlib

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from .family import base_model


CHUNK_ELEMENTS = 1 << 26  # logits floats per chunk (256 MiB in fp32; 441 positions at a 151,936 vocabulary)


def _chunk_terms(
    logits: torch.Tensor, targets: torch.Tensor, temperature: float, with_entropy: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """(log p(target), entropy) of [N, V] logits at `temperature`; entropy is 0-sized when not asked."""
    z = logits.float()
    if temperature != 1.0:
        z = z / temperature
    lse = torch.logsumexp(z, dim=-1)
    logp = z.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - lse
    if not with_entropy:
        return logp, z.new_zeros(0)
    with torch.no_grad():  # a metric: no gradient flows through it
        ent = lse - (torch.softmax(z, dim=-1) * z).sum(-1)
    return logp, ent


def _head_chunk(
    head: torch.nn.Module, h: torch.Tensor, targets: torch.Tensor, temperature: float, with_entropy: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    return _chunk_terms(head(h), targets, temperature, with_entropy)


def split_head(lm: torch.nn.Module) -> tuple[torch.nn.Module, torch.nn.Module] | None:
    """(decoder, lm_head) when the model's logits are exactly lm_head(decoder(...).last_hidden_state); else None."""
    base = base_model(lm)
    cfg = getattr(base, "config", None)
    if cfg is None or not hasattr(base, "get_decoder") or not hasattr(base, "get_output_embeddings"):
        return None
    if getattr(cfg, "final_logit_softcapping", None) is not None or getattr(cfg, "logit_scale", None) is not None:
        return None
    try:
        decoder, head = base.get_decoder(), base.get_output_embeddings()
    except (AttributeError, NotImplementedError):
        return None
    if decoder is None or head is None or decoder is base:
        return None
    return decoder, head


def chunk_rows(n_positions: int, vocab: int) -> int:
    return max(1, CHUNK_ELEMENTS // max(1, vocab))


class TokenScorer(torch.nn.Module):
    """`scorer(ids, attention_mask, position_ids, select=…, temperature=…, with_entropy=…)` → (logp, entropy), both
    [B, T-1] float32: log p(ids[:, t+1] | ids[:, :t+1]) at the sampling temperature, 0 where `select` is False
    (entropy: None unless asked). `nll=True` → (Σ −log p over the selected targets, None): a plain sum, so the
    head's matmuls and gradients are fused (model/linear_ce.py: Liger-Kernel on CUDA) instead of checkpointed.
    `attention_mask=None` with `position_ids` restarting at 0 = packed rows: their boundaries go to the attention
    function as `cu_seq_lens_q` (model/packing.packed_attention: no dense mask; flash-attention's varlen path
    reads them too). `token_loss=f` (a token-local loss: f(log p of some selected targets, their flat positions in
    [B·(T-1)]) → per-token losses) → (logp, entropy, Σ f) with the head's matmuls and f's gradient fused in one pass
    (model/linear_ce.ChunkedLinearTokenLoss; `fused_token_loss` says where the trainer uses it)."""

    def __init__(self, lm: torch.nn.Module):
        super().__init__()
        self.lm = lm
        from .liger import patch_model
        from .packing import packed_attention_reason, use_packed_attention

        self.packed_attention = use_packed_attention(lm)
        self.packed_reason = None if self.packed_attention else packed_attention_reason(lm)
        # CUDA only: Liger's RMSNorm / SwiGLU and RoPE kernels on this model's modules (what runs, and why if not)
        self.norms, self.rope = patch_model(lm)
        self.liger = self.norms.fast

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        select: torch.Tensor | None = None,
        temperature: float = 1.0,
        with_entropy: bool = False,
        dtype: torch.dtype | None = None,
        nll: bool = False,
        token_loss: Callable[..., torch.Tensor] | None = None,
    ) -> tuple:
        B, T = input_ids.shape
        targets = input_ids[:, 1:]
        sel = torch.ones_like(targets, dtype=torch.bool) if select is None else select.bool()
        kw: dict[str, Any] = {"input_ids": input_ids, "attention_mask": attention_mask, "use_cache": False}
        if position_ids is not None:
            kw["position_ids"] = position_ids
            if attention_mask is None and B == 1 and self.packed_attention:
                from .packing import cu_seqlens

                found = cu_seqlens(position_ids)
                if found is not None:
                    cu, longest = found
                    kw.update(cu_seq_lens_q=cu, cu_seq_lens_k=cu, max_length_q=longest, max_length_k=longest)
        parts = split_head(self.lm)
        idx = sel.reshape(-1).nonzero().squeeze(-1)
        # nothing selected: still score one position (times 0 below) so every parameter gets a gradient — DDP and
        # FSDP2 expect the same parameters used on every rank
        empty = idx.numel() == 0
        if empty:
            idx = torch.zeros(1, dtype=torch.long, device=input_ids.device)
        flat_t = targets.reshape(-1)
        with autocast(input_ids.device, dtype):
            if parts is None:  # scored from the model's own logits, chunked over positions
                logits = self.lm(**kw).logits[:, :-1].reshape(B * (T - 1), -1)
                h, head = logits, None
            else:
                decoder, head = parts
                h = decoder(**kw).last_hidden_state[:, :-1].reshape(B * (T - 1), -1)
            if nll and temperature == 1.0 and _plain_linear(head):
                from .linear_ce import linear_nll_sum

                total = linear_nll_sum(
                    h.index_select(0, idx),
                    head,
                    flat_t.index_select(0, idx),
                    chunk_rows(idx.numel(), head.weight.shape[0]),
                )
                return total * (0.0 if empty else 1.0), None
            if token_loss is not None:
                if not _plain_linear(head):
                    raise ValueError("token_loss needs a plain Linear LM head (fused_token_loss says when)")
                from .linear_ce import ChunkedLinearTokenLoss

                total, lp, en = ChunkedLinearTokenLoss.apply(
                    h.index_select(0, idx),
                    head.weight,
                    head.bias,
                    flat_t.index_select(0, idx),
                    chunk_rows(idx.numel(), head.weight.shape[0]),
                    temperature,
                    token_loss,
                    idx,
                    torch.is_grad_enabled(),
                )
                where = (idx // (T - 1), idx % (T - 1))
                zero = torch.zeros((B, T - 1), dtype=torch.float32, device=input_ids.device)
                keep = 0.0 if empty else 1.0
                return zero.index_put(where, lp * keep), zero.index_put(where, en * keep), total * keep
            weight = getattr(head, "weight", None)
            vocab = weight.shape[0] if isinstance(weight, torch.Tensor) else h.shape[-1]
            step = chunk_rows(idx.numel(), vocab)
            lp_parts, ent_parts = [], []
            for s in range(0, idx.numel(), step):
                rows = idx[s : s + step]
                hc, tc = h.index_select(0, rows), flat_t.index_select(0, rows)
                if head is None:
                    lp_c, ent_c = _chunk_terms(hc, tc, temperature, with_entropy)
                elif torch.is_grad_enabled() and hc.requires_grad:
                    # recomputed in backward: only this chunk's logits are ever alive
                    lp_c, ent_c = checkpoint(_head_chunk, head, hc, tc, temperature, with_entropy, use_reentrant=False)
                else:
                    lp_c, ent_c = _head_chunk(head, hc, tc, temperature, with_entropy)
                lp_parts.append(lp_c)
                ent_parts.append(ent_c)
        if nll:
            return -(torch.cat(lp_parts) * (0.0 if empty else 1.0)).sum(), None
        logp = torch.zeros((B, T - 1), dtype=torch.float32, device=input_ids.device)
        ent = torch.zeros_like(logp) if with_entropy else None
        # placed by (row, column) into fresh [B, T-1] tensors: no view of a flat buffer is returned (FSDP2 warns
        # about views as module outputs)
        where = (idx // (T - 1), idx % (T - 1))
        logp = logp.index_put(where, torch.cat(lp_parts) * (0.0 if empty else 1.0))
        if ent is not None:
            ent = ent.index_put(where, torch.cat(ent_parts) * (0.0 if empty else 1.0))
        return logp, ent

    def fast_path(self, autocast_dtype: torch.dtype | None, packing: bool, loss: str | None) -> dict[str, str]:
        """What each part of a training forward runs for this model (model/fastpath.py's probes), the fallbacks with
        their reasons: the stage's first event carries it. `packing`: the stage packs its micro-batches; `loss`: the
        stage's loss (lm: a sum of token NLLs; grpo: token-local; pairwise: per-sequence means)."""
        from .fastpath import LIGER_NOTES, Choice, varlen_plan

        first = next(iter(self.lm.parameters()))
        device = first.device
        compute = first.dtype if first.dtype in (torch.bfloat16, torch.float16) else (autocast_dtype or first.dtype)
        if not packing:
            attention = Choice("not used", "packing off: one padded row per sequence, transformers' sdpa")
        elif not self.packed_attention:
            attention = Choice("transformers' dense block mask", self.packed_reason)
        else:
            cfg = base_model(self.lm).config
            head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
            scale = getattr(base_model(self.lm).model.layers[0].self_attn, "scaling", None)
            plan = varlen_plan(torch.empty((0, 1, head_dim), device=device, dtype=compute), scale)
            attention = (
                Choice("varlen flash")
                if not isinstance(plan, str)
                else Choice("padded", f"{plan}; each sequence unpacked into a padded batch, SDPA is_causal")
            )
        parts = split_head(self.lm)
        if parts is None:
            head = Choice("the model's own logits, chunked", "no plain decoder + LM head split")
        elif not _plain_linear(parts[1]):
            head = Choice("checkpointed chunks", f"the LM head is a {type(parts[1]).__name__}, not a plain Linear")
        elif loss == "grpo":
            head = (
                Choice("fused GRPO head")
                if fused_token_loss(self)
                else Choice(
                    "checkpointed chunks",
                    f"{device.type.upper()}: the fused GRPO head runs on CUDA; CPU runs stay "
                    "bit-identical to earlier ones",
                )
            )
        elif loss != "lm":
            head = Choice("checkpointed chunks", f"the {loss} loss is not token-local")
        else:
            head = lm_head_choice(device.type)
        out = {
            "packed attention": str(attention),
            "loss head": str(head),
            "RMSNorm/SwiGLU": str(self.norms),
            "RoPE": str(self.rope),
        }
        if LIGER_NOTES:
            out["liger-kernel"] = "; ".join(LIGER_NOTES)
        return out


def lm_head_choice(device_type: str) -> Any:
    """What a sum of token NLLs through a plain Linear head runs on `device_type` (linear_ce.linear_nll_sum): Liger's
    fused linear cross-entropy on CUDA where its probe (fastpath.liger_linear_ce) found it, the chunked PyTorch loss
    otherwise, with why."""
    from .fastpath import Choice, liger_linear_ce

    if device_type != "cuda":
        return Choice("chunked PyTorch", f"{device_type.upper()}: Liger's Triton kernel runs on CUDA only")
    cls = liger_linear_ce()
    return Choice("liger") if not isinstance(cls, str) else Choice("chunked PyTorch", cls)


FUSED_TOKEN_LOSS = "cuda"  # where GRPO's fused head runs: "cuda", "always" (a CPU measurement or test), "never"


def fused_token_loss(model: torch.nn.Module) -> bool:
    """Whether a token-local loss (GRPO) goes through `TokenScorer(token_loss=…)`: a plain Linear LM head split from
    its decoder, on CUDA. CPU keeps the checkpointed chunks, so CPU runs stay bit-identical to earlier ones (the fused
    pass sums the head's gradient in another order)."""
    inner = model.module if isinstance(model, torch.nn.parallel.DistributedDataParallel) else model
    lm = inner.lm if isinstance(inner, TokenScorer) else inner
    if FUSED_TOKEN_LOSS == "never":
        return False
    parts = split_head(lm)
    if parts is None or not _plain_linear(parts[1]):
        return False
    return FUSED_TOKEN_LOSS == "always" or next(iter(lm.parameters())).is_cuda


def _plain_linear(head: object) -> TypeGuard[torch.nn.Linear]:
    """An nn.Linear computing exactly x Wᵀ + b (not a LoRA- or otherwise wrapped head)."""
    return type(head) is torch.nn.Linear


def as_scorer(model: torch.nn.Module) -> torch.nn.Module:
    """The model itself when it is (or wraps, DDP / FSDP2) a TokenScorer; otherwise a TokenScorer around it."""
    inner = model.module if isinstance(model, torch.nn.parallel.DistributedDataParallel) else model
    return model if isinstance(inner, TokenScorer) else TokenScorer(model)


def full_token_logprobs(
    model: torch.nn.Module, ids: torch.Tensor, attn: torch.Tensor | None, temperature: float = 1.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """The reference: every logit, one [B, T-1, V] log-softmax (what the trainer did before; tests compare)."""
    logits = model(input_ids=ids, attention_mask=attn, use_cache=False).logits
    logp_all = F.log_softmax(logits[:, :-1].float() / temperature, dim=-1)
    ent = -(logp_all.exp() * logp_all).sum(-1)
    return logp_all.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1), ent


def autocast(device: torch.device, dtype: torch.dtype | None) -> Any:
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=dtype)


def token_logprobs(
    model: torch.nn.Module,
    ids: torch.Tensor,
    attn: torch.Tensor | None,
    dtype: torch.dtype | None = None,
    position_ids: torch.Tensor | None = None,
    select: torch.Tensor | None = None,
) -> torch.Tensor:
    """log p(ids[:, t+1] | ids[:, :t+1]) for every position (0 outside `select`), [B, T-1], in float32, without a
    full-vocabulary log-softmax (logprobs.TokenScorer)."""
    return as_scorer(model)(ids, attn, position_ids, select=select, dtype=dtype)[0]
