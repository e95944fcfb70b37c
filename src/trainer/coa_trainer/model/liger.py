"""Liger-Kernel (linkedin/Liger-Kernel, `liger-kernel` pinned in requirements.txt; Triton kernels) on CUDA only:
imported lazily, never on the CPU path.

What the trainer takes from it: the fused linear cross-entropy (model/linear_ce.py) and, on the models it scores,
the RMSNorm and SwiGLU kernels, which keep less activation memory than transformers' eager modules (one saved
tensor per norm instead of several fp32 intermediates; the SwiGLU product recomputed in backward). They are bound
to this model instance's modules — Liger's `apply_liger_kernel_to_*` would also replace transformers' classes and
functions for the whole process, and a CPU model built later would then call Triton. RoPE stays transformers'
(its Liger replacement is a module-level patch)."""

from __future__ import annotations

from typing import Any

from .family import base_model, family_reason



def fused_linear_ce_class() -> Any:
    try:
        from liger_kernel.transformers.fused_linear_cross_entropy import LigerFusedLinearCrossEntropyLoss
    except ImportError:
        return None
    return LigerFusedLinearCrossEntropyLoss


def patch_model(lm: Any) -> bool:
    """Bind Liger's RMSNorm and SwiGLU forwards to the model's own modules when its parameters are on CUDA and it is
    a Llama-family decoder; once per model. Whether the model runs them."""
    base = base_model(lm)
    if getattr(base, "_coa_liger", False):
        return True
    first = next(iter(base.parameters()), None)
    if first is None or not first.is_cuda or family_reason(lm) is not None:
        return False
    try:
        from liger_kernel.transformers.monkey_patch import _patch_rms_norm_module, _patch_swiglu_module
        from liger_kernel.transformers.swiglu import LigerSwiGLUMLP
    except ImportError:
        return False
    inner = base.model
    _patch_rms_norm_module(inner.norm)
    swiglu = getattr(base.config, "hidden_act", None) in ("silu", "swish")
    for layer in inner.layers:
        _patch_rms_norm_module(layer.input_layernorm)
        _patch_rms_norm_module(layer.post_attention_layernorm)
        if getattr(layer.self_attn, "q_norm", None) is not None:
            _patch_rms_norm_module(layer.self_attn.q_norm)
            _patch_rms_norm_module(layer.self_attn.k_norm)
        if swiglu:
            _patch_swiglu_module(layer.mlp, LigerSwiGLUMLP)
    base._coa_liger = True
    return True
