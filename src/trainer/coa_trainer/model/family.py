"""Which models the trainer's fast paths take: decoders of the Llama family as transformers writes them (llama,
qwen2, qwen3, mistral). One check for the rollout engine, packed attention and Liger's kernels, so the three agree on
what they run — a model scored one way and sampled another would give PPO ratios of two different models."""

from __future__ import annotations

from typing import Any

from torch import nn

LLAMA_FAMILY = ("llama", "qwen2", "qwen3", "mistral")


def base_model(model: nn.Module) -> Any:
    """The transformers model under a peft wrapper (the model itself otherwise). Any: what the fast paths read of it
    (`.model.layers`, `.config.<field>`, `get_output_embeddings()`) are transformers' per-architecture attributes,
    which no class of the library declares; `family_reason` says whether they are there."""
    get_base_model = getattr(model, "get_base_model", None)
    return get_base_model() if callable(get_base_model) else model


def family_reason(model: nn.Module) -> str | None:
    """None when `model` is a Llama-family decoder; otherwise what it is."""
    base = base_model(model)
    cfg = getattr(base, "config", None)
    if cfg is None or getattr(cfg, "model_type", None) not in LLAMA_FAMILY:
        return f"model type {getattr(cfg, 'model_type', type(base).__name__)!r} (not one of {', '.join(LLAMA_FAMILY)})"
    return None


def full_attention_reason(model: nn.Module) -> str | None:
    """None when every layer of a Llama-family `model` attends to the whole sequence; "sliding-window attention"
    otherwise. Mistral keeps its window in `sliding_window` with no `layer_types`, Qwen2/3 in `use_sliding_window` and
    `layer_types`: all three say so."""
    reason = family_reason(model)
    if reason is not None:
        return reason
    cfg = base_model(model).config
    if getattr(cfg, "use_sliding_window", False) or any(
        t != "full_attention" for t in getattr(cfg, "layer_types", None) or []
    ):
        return "sliding-window attention"
    if cfg.model_type == "mistral" and getattr(cfg, "sliding_window", None) is not None:
        return "sliding-window attention"
    return None
