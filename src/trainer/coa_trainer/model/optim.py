"""The stages' AdamW — fused on CUDA — with fp32 master weights and moments for low-precision parameters.

`model.dtype: bfloat16` without FSDP keeps the model's parameters (what forward, backward and generation read) in
bf16, but AdamW runs on fp32 copies with fp32 moments: in pure bf16 an update smaller than 2^-8 of its weight
rounds away (at lr 1e-5 most of a fine-tune's updates would), and bf16 second moments underflow. Before each step
the bf16 gradients are copied to the masters; after it the masters are rounded back into the parameters. Memory per
trained parameter: 2 (bf16 weight) + 2 (bf16 grad) + 4 (master) + 8 (moments) = 16 bytes, the same as fp32
training, but the forward reads bf16 weights without autocast re-casting them every call (a decode step reads half
the bytes) and the frozen reference model is bf16. (HF + Liger on a model loaded in fp32 under bf16 autocast keeps the
same fp32 state; on a model loaded in bf16 — the bench's anchor — its AdamW moments are bf16, 8 bytes per parameter.)
Under FSDP2 the sharded fp32 parameters are the masters already
(model/fsdp.py); LoRA adapters are fp32 (peft), so neither needs this."""

from __future__ import annotations

import math

from typing import Any

import torch

from .fastpath import Choice, fused_adamw

LOW = (torch.bfloat16, torch.float16)


def make_optimizer(params: list[Any], lr: float, weight_decay: float) -> torch.optim.Optimizer:
    """AdamW over `params` (fp32 masters for bf16 / fp16 ones); `opt.coa_adamw` says which implementation runs."""
    low = [p for p in params if p.dtype in LOW and not hasattr(p, "device_mesh")]  # DTensors: FSDP's policy
    masters = {id(p): p.detach().float().clone().requires_grad_(True) for p in low}
    opt_params = [masters.get(id(p), p) for p in params]
    kw, choice = adamw_implementation(opt_params)
    opt = torch.optim.AdamW(opt_params, lr=lr, weight_decay=weight_decay, betas=(0.9, 0.95), **kw)
    opt.coa_adamw = choice  # type: ignore[attr-defined]  (the stage's first event names it)
    if not low:
        return opt
    pairs = [(p, masters[id(p)]) for p in low]
    opt.coa_master_pairs = pairs  # type: ignore[attr-defined]  (read by master_state / load_master_state)

    def to_masters(*_: object) -> None:
        for p, m in pairs:
            m.grad = None if p.grad is None else p.grad.float()

    @torch.no_grad()
    def from_masters(*_: object) -> None:
        # one multi-tensor copy (bf16 ← fp32 rounds as copy_ does) instead of a kernel per parameter
        torch._foreach_copy_([p for p, _ in pairs], [m for _, m in pairs])  # pyright: ignore[reportPrivateImportUsage]
        for p, m in pairs:
            p.grad = None
            m.grad = None

    opt.register_step_pre_hook(to_masters)
    opt.register_step_post_hook(from_masters)
    return opt


def adamw_implementation(params: list[Any]) -> tuple[dict[str, Any], Choice]:
    """(AdamW keyword arguments, what runs). Fused — a few multi-tensor kernels for the whole update, as the HF + Liger
    anchor steps (bench/gpu/anchors.py) — where every parameter is a plain CUDA tensor and torch's fused kernel
    steps its dtype (model/fastpath.fused_adamw); torch's default otherwise. On CPU that default is kept although torch
    has a fused CPU kernel: the fused update agrees with the for-loop one only to rounding, and the CPU runs (the demo,
    the tests' losses and resumes) stay bit-identical to earlier releases that way."""
    if any(hasattr(p, "device_mesh") for p in params):
        return {}, Choice("foreach", "FSDP2's sharded (DTensor) parameters: torch's default for them")
    return adamw_choice({p.device.type for p in params}, {p.dtype for p in params})


def adamw_choice(
    devices: set[str], dtypes: set[torch.dtype], fused_on: tuple[str, ...] = ("cuda",)
) -> tuple[dict[str, Any], Choice]:
    """(AdamW keyword arguments, what runs) for parameters on `devices` in `dtypes`: fused only where all of them are
    on one device type of `fused_on` and the probe (fastpath.fused_adamw) stepped each dtype there; else torch's
    default, with why."""
    if len(devices) != 1 or next(iter(devices)) not in fused_on:
        where = "/".join(sorted(d.upper() for d in devices)) or "no parameters"
        return {}, Choice("for-loop", f"{where}: torch's default, kept bit-identical to earlier runs")
    (device,) = devices
    for dtype in sorted(dtypes, key=str):
        why = fused_adamw(device, dtype)
        if why is not None:
            return {}, Choice("foreach", why)
    return {"fused": True}, Choice("fused")


def master_state(opt: torch.optim.Optimizer) -> list[torch.Tensor] | None:
    """The fp32 master weights (a checkpoint must keep them: the bf16 parameters alone lose their low bits)."""
    pairs = getattr(opt, "coa_master_pairs", None)
    return None if pairs is None else [m.detach().cpu().clone() for _, m in pairs]


@torch.no_grad()
def load_master_state(opt: torch.optim.Optimizer, state: list[torch.Tensor] | None) -> None:
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
