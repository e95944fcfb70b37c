"""The stages' AdamW, with fp32 master weights for low-precision parameters.

`model.dtype: bfloat16` without FSDP keeps the model's parameters (what forward, backward and generation read) in
bf16, but AdamW runs on fp32 copies with fp32 moments: in pure bf16 an update smaller than 2^-8 of its weight
rounds away (at lr 1e-5 most of a fine-tune's updates would), and bf16 second moments underflow. Before each step
the bf16 gradients are copied to the masters; after it the masters are rounded back into the parameters. Memory per
trained parameter: 2 (bf16 weight) + 2 (bf16 grad) + 4 (master) + 8 (moments) = 16 bytes, the same as fp32
training, but the forward reads bf16 weights without autocast re-casting them every call (a decode step reads half
the bytes) and the frozen reference model is bf16. Under FSDP2 the sharded fp32 parameters are the masters already
(model/fsdp.py); LoRA adapters are fp32 (peft), so neither needs this."""

from __future__ import annotations

import math

from typing import Any

import torch

LOW = (torch.bfloat16, torch.float16)


def make_optimizer(params: list[Any], lr: float, weight_decay: float) -> torch.optim.Optimizer:
    low = [p for p in params if p.dtype in LOW and not hasattr(p, "device_mesh")]  # DTensors: FSDP's policy
    if not low:
        return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay, betas=(0.9, 0.95))
    masters = {id(p): p.detach().float().clone().requires_grad_(True) for p in low}
    opt_params = [masters.get(id(p), p) for p in params]
    opt = torch.optim.AdamW(opt_params, lr=lr, weight_decay=weight_decay, betas=(0.9, 0.95))
    pairs = [(p, masters[id(p)]) for p in low]
    opt.coa_master_pairs = pairs  # read by master_state / load_master_state (checkpoints)

    def to_masters(*_: Any) -> None:
        for p, m in pairs:
            m.grad = None if p.grad is None else p.grad.float()

    @torch.no_grad()
    def from_masters(*_: Any) -> None:
        for p, m in pairs:
            p.copy_(m)
            p.grad = None
            m.grad = None

    opt.register_step_pre_hook(to_masters)
    opt.register_step_post_hook(from_masters)
    return opt


def master_state(opt: Any) -> list[torch.Tensor] | None:
    """The fp32 master weights (a checkpoint must keep them: the bf16 parameters alone lose their low bits)."""
    pairs = getattr(opt, "coa_master_pairs", None)
    return None if pairs is None else [m.detach().cpu().clone() for _, m in pairs]


@torch.no_grad()
def load_master_state(opt: Any, state: list[torch.Tensor] | None) -> None:
    pairs = getattr(opt, "coa_master_pairs", None)
    if pairs is None or state is None:
        return
    if len(state) != len(pairs):
        raise RuntimeError(f"checkpoint has {len(state)} master weights, the model {len(pairs)}")
    for (p, m), s in zip(pairs, state):
        m.copy_(s)
        p.copy_(s)


def lr_lambda(warmup: int, total: int):
    def f(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        progress = (step - warmup) / max(1, total - warmup)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))
    return f
