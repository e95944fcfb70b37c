"""What a user would run instead of our trainer, measured in the same process on the same model shapes:

- decode: Hugging Face `generate` with its default dynamic cache, and with a static cache — which on CUDA makes
  transformers compile the forward with `torch.compile(mode="reduce-overhead")`, i.e. CUDA graphs
  (generation/utils.py `_valid_auto_compile_criteria`) — greedy, `min_new_tokens` = `max_new_tokens` so every row
  writes the same count as ours;
- SFT: a plain transformers training step in bf16 with Liger-Kernel's fused linear cross-entropy, RMSNorm, SwiGLU
  and RoPE (`apply_liger_kernel_to_qwen2`, the way TRL and Axolotl turn it on), fused AdamW, dense 8 × 2,048-token
  rows, no activation checkpointing. On CPU (no Triton) the same step without Liger.
- the RL update: the same model set-up (Liger's RoPE / RMSNorm / SwiGLU, bf16 weights, fused AdamW, no activation
  checkpointing) stepping GRPO as TRL's GRPOTrainer lays a batch out: rows of prompt + completion, padded, a fixed
  number of rows per micro-batch (`per_device_train_batch_size`), the completions' log-probs from the model's logits
  (`logits_to_keep`, a log-softmax and gather per row: trl/trainer/utils.py `selective_log_softmax`), the reference
  model's the same way without gradients, the clipped ratio against the sampler's log-probs with a k3 KL, token mean
  over the batch. On CPU the same without Liger.

Liger's `apply_liger_kernel_to_qwen2` patches transformers' Qwen2 classes for the whole process, so run.py measures
these anchors after ours, or in a process of their own (device-check.sh)."""

from __future__ import annotations

import time
from typing import Any

import torch


def sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize()


def hf_generate(lm: Any, prompts: torch.Tensor, new: int, static: bool) -> tuple[torch.Tensor, float]:
    """(generated ids [B, new], seconds) for one greedy `generate` call of equal-length prompts [B, P]."""
    dev = prompts.device
    kw: dict[str, Any] = dict(
        max_new_tokens=new,
        min_new_tokens=new,
        do_sample=False,
        pad_token_id=0,
        eos_token_id=None,
        attention_mask=torch.ones_like(prompts),
    )
    if static:
        kw["cache_implementation"] = "static"
    sync(dev)
    t0 = time.perf_counter()
    with torch.no_grad():
        out = lm.generate(prompts, **kw)
    sync(dev)
    return out[:, prompts.shape[1] :], time.perf_counter() - t0


def hf_sft_step_setup(lm: Any, dev: torch.device, rows: int, length: int, vocab: int, seed: int = 7):
    """(step function returning the loss, tokens per step, whether Liger is on) for a plain HF training step."""
    liger = apply_liger(lm, dev, fused_linear_cross_entropy=True)
    lm.train()
    opt = torch.optim.AdamW(lm.parameters(), lr=1e-5, fused=dev.type == "cuda")
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab, (rows, length), generator=g).to(dev)

    def step() -> float:
        opt.zero_grad(set_to_none=True)
        loss = lm(input_ids=ids, labels=ids).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(lm.parameters(), 1.0)
        opt.step()
        return float(loss.detach())

    return step, rows * length, liger


def apply_liger(lm: Any, dev: torch.device, fused_linear_cross_entropy: bool) -> bool:
    """Liger's Qwen2 kernels on `lm` the way TRL / Axolotl turn them on (CUDA only); whether they are on."""
    if dev.type != "cuda":
        return False
    from liger_kernel.transformers import apply_liger_kernel_to_qwen2

    apply_liger_kernel_to_qwen2(
        rope=True,
        rms_norm=True,
        swiglu=True,
        fused_linear_cross_entropy=fused_linear_cross_entropy,
        cross_entropy=False,
        model=lm,
    )
    return True


def _row_logps(logits: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """log-softmax → gather, one row at a time (the peak-memory loop of TRL's selective_log_softmax)."""
    return torch.stack(
        [torch.log_softmax(lg.float(), dim=-1).gather(-1, ix[:, None]).squeeze(-1) for lg, ix in zip(logits, index)]
    )


def hf_grpo_update_setup(
    lm: Any,
    ref: Any,
    prompts: list[list[int]],
    completions: list[list[int]],
    advantages: list[float],
    dev: torch.device,
    rows: int,
    clip_eps: float = 0.2,
    kl_coef: float = 0.001,
):
    """(update function returning the loss, tokens per update, whether Liger is on) for a plain HF + Liger GRPO
    update of these trajectories (equal-length prompts, as the bench's are): `rows` trajectories per micro-batch,
    gradients accumulated, one AdamW step. The sampler's log-probs are the model's own before the first update."""
    liger = apply_liger(lm, dev, fused_linear_cross_entropy=False)
    apply_liger(ref, dev, fused_linear_cross_entropy=False)
    lm.train()
    ref.requires_grad_(False)
    opt = torch.optim.AdamW(lm.parameters(), lr=1e-6, fused=dev.type == "cuda")
    keep = max(map(len, completions))
    P = len(prompts[0])
    ids = torch.zeros((len(prompts), P + keep), dtype=torch.long)
    mask = torch.zeros((len(prompts), keep))
    old = torch.zeros((len(prompts), keep))
    for i, (p, c) in enumerate(zip(prompts, completions)):
        ids[i, : P + len(c)] = torch.tensor(p + c)
        mask[i, : len(c)] = 1.0
    attn = (torch.arange(P + keep)[None, :] < torch.tensor([P + len(c) for c in completions])[:, None]).long()
    ids, attn, mask, old = ids.to(dev), attn.to(dev), mask.to(dev), old.to(dev)
    adv = torch.tensor(advantages, dtype=torch.float32, device=dev)
    total = float(mask.sum())

    def logps(model: Any, s: slice) -> torch.Tensor:
        logits = model(input_ids=ids[s], attention_mask=attn[s], logits_to_keep=keep + 1).logits[:, :-1]
        return _row_logps(logits, ids[s, -keep:])

    with torch.no_grad():
        for start in range(0, len(prompts), rows):
            s = slice(start, start + rows)
            old[s] = logps(lm, s) * mask[s]

    def step() -> float:
        opt.zero_grad(set_to_none=True)
        loss_sum = 0.0
        for start in range(0, len(prompts), rows):
            s = slice(start, start + rows)
            with torch.no_grad():
                ref_lp = logps(ref, s)
            lp = logps(lm, s)
            m = mask[s]
            ratio = torch.exp((lp - old[s]) * m)
            a = adv[s, None]
            pg = -torch.minimum(ratio * a, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * a)
            d = (ref_lp - lp) * m
            loss = ((pg + kl_coef * (torch.exp(d) - d - 1)) * m).sum() / total
            loss.backward()
            loss_sum += float(loss.detach())
        torch.nn.utils.clip_grad_norm_(lm.parameters(), 1.0)
        opt.step()
        return loss_sum

    return step, int(attn.sum()), liger
