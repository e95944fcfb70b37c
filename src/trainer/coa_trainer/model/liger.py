"""Liger-Kernel (linkedin/Liger-Kernel, `liger-kernel` pinned in requirements.txt; Triton kernels) on CUDA only:
imported lazily, never on the CPU path, each part on its own (model/fastpath.py: a part that fails to import turns
off that part and says why; the others still run).

What the trainer takes from it: the fused linear cross-entropy (model/linear_ce.py) and, on the models it scores,
the RMSNorm, SwiGLU and RoPE kernels, which keep less activation memory than transformers' eager modules (one saved
tensor per norm instead of several fp32 intermediates; the SwiGLU product recomputed in backward; one kernel per
rotation instead of the slices, negations and products of rotate_half). They are bound to this model instance —
Liger's `apply_liger_kernel_to_*` would also replace transformers' classes and functions for the whole process, and a
CPU model built later would then call Triton. RoPE is a module-level function in transformers' modeling code, looked
up by name in each attention forward, so it is replaced there by a dispatcher that takes Liger's kernel only for CUDA
tensors inside the forward of an attention module bound here, and transformers' own function everywhere else."""

from __future__ import annotations

import threading
import types
from collections.abc import Callable
from typing import Any

import torch

from .family import base_model, family_reason
from .fastpath import Choice, LigerModules, liger_modules, liger_rope, rope_site

# transformers' apply_rotary_pos_emb(q, k, cos, sin, …) -> (q, k) rotated, and Liger's kernel of the same call
Rope = Callable[..., tuple[torch.Tensor, torch.Tensor]]


def fused_linear_ce_class() -> Any:
    """Liger's fused linear cross-entropy class, or None when it cannot be imported (fastpath.liger_linear_ce says
    why)."""
    from .fastpath import liger_linear_ce

    cls = liger_linear_ce()
    return None if isinstance(cls, str) else cls


def patch_model(lm: torch.nn.Module) -> tuple[Choice, Choice]:
    """Bind Liger's RMSNorm / SwiGLU forwards and its RoPE to the model's own modules when its parameters are on CUDA
    and it is a Llama-family decoder; once per model. (RMSNorm/SwiGLU, RoPE) as what runs, with why when not Liger."""
    base = base_model(lm)
    done = getattr(base, "_coa_liger", None)
    if done is not None:
        return done
    first = next(iter(base.parameters()), None)
    if first is None or not first.is_cuda:
        why = f"{'no parameters' if first is None else first.device.type.upper()}: Liger's Triton kernels run on CUDA only"
        return Choice("transformers'", why), Choice("transformers'", why)
    reason = family_reason(lm)
    if reason is not None:
        return Choice("transformers'", reason), Choice("transformers'", reason)
    base._coa_liger = bind(lm, liger_modules(), liger_rope())
    return base._coa_liger


def bind(lm: torch.nn.Module, modules: LigerModules | str, rope: Rope | str) -> tuple[Choice, Choice]:
    """Bind what the probes found (model/fastpath.py: each part, or why it is missing) to a Llama-family model's
    modules; (RMSNorm/SwiGLU, RoPE) as what runs. A part that is missing leaves the others bound."""
    base = base_model(lm)
    inner = base.model
    if isinstance(modules, str):
        norms = Choice("transformers'", modules)
    else:
        modules.patch_rms_norm(inner.norm)
        swiglu = getattr(base.config, "hidden_act", None) in ("silu", "swish")
        for layer in inner.layers:
            modules.patch_rms_norm(layer.input_layernorm)
            modules.patch_rms_norm(layer.post_attention_layernorm)
            if getattr(layer.self_attn, "q_norm", None) is not None:
                modules.patch_rms_norm(layer.self_attn.q_norm)
                modules.patch_rms_norm(layer.self_attn.k_norm)
            if swiglu:
                modules.patch_swiglu(layer.mlp, modules.swiglu_mlp)
        norms = (
            Choice("liger")
            if swiglu
            else Choice("liger RMSNorm, transformers' MLP", f"hidden_act {base.config.hidden_act} is not SwiGLU")
        )
    return norms, (Choice("transformers'", rope) if isinstance(rope, str) else bind_rope(lm, rope))


# ------------------------------------------------------------------ RoPE

_IN_BOUND_ATTENTION = threading.local()  # per thread: backward's recomputation runs on autograd's own threads


def _dispatcher(original: Rope, fused: Rope) -> Rope:
    def apply_rotary_pos_emb(
        q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, *args: object, **kwargs: object
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if getattr(_IN_BOUND_ATTENTION, "on", False) and q.is_cuda and not args and set(kwargs) <= {"unsqueeze_dim"}:
            return fused(q, k, cos, sin, unsqueeze_dim=kwargs.get("unsqueeze_dim", 1))
        return original(q, k, cos, sin, *args, **kwargs)

    apply_rotary_pos_emb.coa_original = original  # type: ignore[attr-defined]
    apply_rotary_pos_emb.coa_fused = fused  # type: ignore[attr-defined]
    apply_rotary_pos_emb.__doc__ = original.__doc__
    return apply_rotary_pos_emb


def _forward_with_fused_rope(self: torch.nn.Module, *args: object, **kwargs: object) -> object:
    """The attention class's own forward, with the modeling module's RoPE taking Liger's kernel for CUDA tensors.
    Bound as a method (not a closure), so a deepcopy of the model (LoRA merge) binds it to the copy."""
    was = getattr(_IN_BOUND_ATTENTION, "on", False)
    _IN_BOUND_ATTENTION.on = True
    try:
        return type(self).forward(self, *args, **kwargs)
    finally:
        _IN_BOUND_ATTENTION.on = was


def bind_rope(lm: torch.nn.Module, fused: Rope) -> Choice:
    """Bind a fused RoPE `fused(q, k, cos, sin, unsqueeze_dim=…)` to the model's attention modules; what runs, with
    why when transformers' code offers no place for it."""
    attns = [layer.self_attn for layer in base_model(lm).model.layers]
    site = rope_site(attns)
    if isinstance(site, str):
        return Choice("transformers'", site)
    module, original = site
    if getattr(module.apply_rotary_pos_emb, "coa_fused", None) is not fused:
        module.apply_rotary_pos_emb = _dispatcher(original, fused)
    for attn in attns:
        attn.forward = types.MethodType(_forward_with_fused_rope, attn)
    return Choice("liger")
