"""What a user would run instead of our trainer, measured in the same process on the same model shapes:

- decode: Hugging Face `generate` with its default dynamic cache, and with a static cache — which on CUDA makes
  transformers compile the forward with `torch.compile(mode="reduce-overhead")`, i.e. CUDA graphs
  (generation/utils.py `_valid_auto_compile_criteria`) — greedy, `min_new_tokens` = `max_new_tokens` so every row
  writes the same count as ours;
- SFT: a plain transformers training step in bf16 with Liger-Kernel's fused linear cross-entropy, RMSNorm, SwiGLU
  and RoPE (`apply_liger_kernel_to_qwen2`, the way TRL and Axolotl turn it on), fused AdamW, dense 8 × 2,048-token
  rows, no activation checkpointing. On CPU (no Triton) the same step without Liger.

Liger's `apply_liger_kernel_to_qwen2` patches transformers' Qwen2 classes for the whole process, so run.py measures
this SFT anchor last."""

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
    kw: dict[str, Any] = dict(max_new_tokens=new, min_new_tokens=new, do_sample=False, pad_token_id=0,
                              eos_token_id=None, attention_mask=torch.ones_like(prompts))
    if static:
        kw["cache_implementation"] = "static"
    sync(dev)
    t0 = time.perf_counter()
    with torch.no_grad():
        out = lm.generate(prompts, **kw)
    sync(dev)
    return out[:, prompts.shape[1]:], time.perf_counter() - t0


def hf_sft_step_setup(lm: Any, dev: torch.device, rows: int, length: int, vocab: int, seed: int = 7):
    """(step function returning the loss, tokens per step, whether Liger is on) for a plain HF training step."""
    liger = False
    if dev.type == "cuda":
        from liger_kernel.transformers import apply_liger_kernel_to_qwen2

        apply_liger_kernel_to_qwen2(rope=True, rms_norm=True, swiglu=True, fused_linear_cross_entropy=True,
                                    cross_entropy=False, model=lm)
        liger = True
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
