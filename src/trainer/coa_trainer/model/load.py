"""Models — one code path. The embedded default is written as an ordinary Hugging Face model directory (config
from code, tokenizer from `tokenizers`, random weights) and then loaded exactly like a user's model directory;
`--lora`/`model.lora` wraps either with peft. Stage outputs are full HF directories (LoRA merged), so every stage
starts from a plain directory as well."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ..data.dialects import all_tags
from ..contracts.run_config import EmbeddedModelConfig, LoraConfig, RunConfig
from ..base.errors import CoaError
from ..contracts.error_code import ErrorCode
from ..data.tokenizer import TextTokenizer


class ModelDirError(CoaError):
    """No usable model directory where a stage starts from."""

    code = ErrorCode.missing_model


@dataclass
class Runtime:
    device: torch.device
    autocast_dtype: torch.dtype | None  # bf16 autocast on CUDA where supported; None = fp32


def setup_runtime(config: RunConfig, world_size: int = 1, local_rank: int = 0) -> Runtime:
    # The CPUs this process may run on (a taskset or cgroup cpuset narrows them), not every core of the machine.
    threads = (
        config.threads or (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()) or 1
    )
    torch.set_num_threads(max(1, threads // world_size))
    want = config.device
    if want == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device 'cuda' requested but torch.cuda.is_available() is False")
    use_cuda = want == "cuda" or (want == "auto" and torch.cuda.is_available())
    if config.deterministic:
        # cuBLAS reads this when its first handle is made, so it must be set before any CUDA matmul; kernels with
        # no deterministic version warn instead of failing (warn_only), so a model with one still trains.
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True, warn_only=True)
    else:
        torch.use_deterministic_algorithms(False)
    if use_cuda and config.deterministic:
        # cuDNN's attention backward is non-deterministic under warn_only (seen on an H100, torch 2.11: "cuDNN
        # Attention defaults to a non-deterministic algorithm"); SDPA then picks flash / memory-efficient instead.
        torch.backends.cuda.enable_cudnn_sdp(False)
    device = torch.device(f"cuda:{local_rank}" if use_cuda else "cpu")
    if use_cuda:
        torch.cuda.set_device(device)
    dtype = None
    if config.dtype == "bfloat16" or (config.dtype == "auto" and use_cuda and torch.cuda.is_bf16_supported()):
        dtype = torch.bfloat16
    return Runtime(device, dtype)


def embedded_hf_config(spec: EmbeddedModelConfig, vocab_size: int, pad_id: int, eos_id: int) -> Any:
    """A tiny Llama- or Qwen2-style config from the run config's model.embedded section."""
    from transformers import LlamaConfig, Qwen2Config

    common: dict[str, Any] = dict(
        vocab_size=vocab_size,
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_layers,
        num_attention_heads=spec.num_heads,
        num_key_value_heads=spec.num_kv_heads,
        max_position_embeddings=spec.max_position,
        tie_word_embeddings=True,
        pad_token_id=pad_id,
        eos_token_id=eos_id,
        bos_token_id=eos_id,
        rms_norm_eps=1e-5,
        attention_dropout=0.0,
    )
    if spec.family == "qwen2":
        return Qwen2Config(**common)
    return LlamaConfig(**common, mlp_bias=False, attention_bias=False)


def write_embedded_model(config: RunConfig, texts: list[str], out_dir: Path, seed: int) -> Path:
    """Create the embedded default as an HF model directory (atomically), unless it exists."""
    from transformers import AutoModelForCausalLM

    from ..data.tokenizer import EOS, PAD, build_tokenizer, save_hf_tokenizer

    if (out_dir / "config.json").is_file():
        return out_dir
    tok = build_tokenizer(texts)
    tmp = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    save_hf_tokenizer(tok, tmp)
    pad_id, eos_id = tok.token_to_id(PAD), tok.token_to_id(EOS)
    assert pad_id is not None and eos_id is not None  # build_tokenizer puts both in every vocabulary
    cfg = embedded_hf_config(config.model.embedded, tok.get_vocab_size(), pad_id, eos_id)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(cfg)
    model.save_pretrained(str(tmp))
    tmp.replace(out_dir)
    return out_dir


def check_model_dir(path: str | Path) -> Path:
    p = Path(path)
    if not p.is_dir():
        raise ModelDirError(f"model directory {p} does not exist")
    if not (p / "config.json").is_file():
        raise ModelDirError(f"{p} is not a Hugging Face model directory (no config.json)")
    return p


def tags_as_special(config: RunConfig) -> bool:
    """model.tags_as_special_tokens; null: yes for the embedded default (its word-level tokenizer has every tag as
    one token), no for a user's model — a pretrained model keeps its vocabulary and writes tags as text."""
    v = config.model.tags_as_special_tokens
    return (config.model.path is None) if v is None else bool(v)


WEIGHT_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "auto": "auto"}


def load_tokenizer(model_dir: Path, special_tags: bool = True) -> Any:
    """The model dir's tokenizer. `special_tags`: every dialect tag is made one special token (added where
    missing); otherwise the vocabulary is left exactly as it is and tags are text."""
    from transformers import AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(str(model_dir))
    except Exception as e:  # noqa: BLE001 — a broken tokenizer file is the user's to fix: say which and why
        files = [f for f in ("tokenizer.json", "tokenizer_config.json") if (Path(model_dir) / f).is_file()]
        raise ModelDirError(
            f"{model_dir}: its tokenizer ({', '.join(files) or 'no tokenizer file'}) cannot be "
            f"loaded ({type(e).__name__}: {str(e)[:200]}): copy the model's own tokenizer files "
            "there"
        ) from e
    if special_tags:
        missing = [
            t
            for t in all_tags()
            if len(tok.encode(t, add_special_tokens=False)) != 1 or tok.convert_tokens_to_ids(t) == tok.unk_token_id
        ]
        if missing:
            tok.add_special_tokens({"additional_special_tokens": missing}, replace_extra_special_tokens=False)
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return tok


def check_attn_implementation(name: str, device: torch.device) -> None:
    """flash_attention_2 needs the flash-attn package and a CUDA device: say so before loading anything."""
    if name != "flash_attention_2":
        return
    import importlib.util

    from ..base.config import ConfigError

    if importlib.util.find_spec("flash_attn") is None:
        raise ConfigError(
            "model.attn_implementation is flash_attention_2 but the flash-attn package is not "
            "installed (pip install flash-attn), or use sdpa"
        )
    if device.type != "cuda":
        raise ConfigError(f"model.attn_implementation flash_attention_2 runs on CUDA only (device is {device})")


def load_model(
    model_dir: str | Path,
    rt: Runtime,
    lora: LoraConfig | None = None,
    trainable: bool = True,
    special_tags: bool = True,
    weight_dtype: str = "float32",
    attn_implementation: str = "sdpa",
    gradient_checkpointing: bool = False,
) -> tuple[Any, Any]:
    """(model, tokenizer) from an HF directory, weights in `weight_dtype`; LoRA adapters added when `lora` is
    given. The embeddings are resized only when special tags were added to the tokenizer."""
    from transformers import AutoModelForCausalLM

    model_dir = check_model_dir(model_dir)
    check_attn_implementation(attn_implementation, rt.device)
    tok = load_tokenizer(model_dir, special_tags)
    # a transformers model as from_pretrained builds it (its class depends on the directory's config)
    model: Any = AutoModelForCausalLM.from_pretrained(
        str(model_dir), dtype=WEIGHT_DTYPES[weight_dtype], attn_implementation=attn_implementation
    )
    if gradient_checkpointing and trainable:
        from .activations import enable

        enable(model)
    if model.get_input_embeddings().weight.shape[0] < len(tok):
        model.resize_token_embeddings(len(tok))  # tags added to a user's tokenizer (tags_as_special_tokens)
    model.config.pad_token_id = tok.pad_token_id
    if lora is not None:
        from peft import LoraConfig, get_peft_model

        # peft annotates lora_alpha as int; it scales by alpha / r as a float, and the schema allows a float
        model = get_peft_model(
            model,
            LoraConfig(
                r=lora.r,
                lora_alpha=lora.alpha,  # pyright: ignore[reportArgumentType]
                lora_dropout=lora.dropout,
                target_modules=list(lora.target_modules),
                task_type="CAUSAL_LM",
            ),
        )
    model.to(rt.device)
    model.train(trainable)
    return model, tok


def storage_dtype(config: RunConfig, trainable: bool = True) -> str:
    """The dtype parameters are stored in. Under FSDP2 a trained bfloat16 model keeps fp32 sharded parameters (the
    master weights, 4 bytes / N ranks) and computes in bf16 through its MixedPrecisionPolicy (model/fsdp.py); a frozen
    model (the RL reference) is stored as asked."""
    want = config.model.dtype
    if trainable and want == "bfloat16" and config.distributed.strategy == "fsdp":
        return "float32"
    return want


def load_for_config(
    model_dir: str | Path, rt: Runtime, config: RunConfig, trainable: bool = True, lora: bool = True
) -> tuple[Any, Any]:
    """load_model with the run config's model choices (tags, weight dtype, attention, checkpointing, LoRA)."""
    m = config.model
    return load_model(
        model_dir,
        rt,
        m.lora if lora else None,
        trainable,
        tags_as_special(config),
        storage_dtype(config, trainable),
        m.attn_implementation,
        m.gradient_checkpointing,
    )


def unwrap(model: torch.nn.Module) -> Any:
    """The Hugging Face model inside DDP and the trainer's TokenScorer (model/scoring.py)."""
    if isinstance(model, torch.nn.parallel.DistributedDataParallel):
        model = model.module
    from ..model.scoring import TokenScorer

    return model.lm if isinstance(model, TokenScorer) else model


def save_model_dir(model: torch.nn.Module, tok: TextTokenizer, out_dir: Path, info: dict | None = None) -> Path:
    """Save a full HF directory (LoRA merged into a copy) atomically: write beside, then rename."""
    m = unwrap(model)
    if hasattr(m, "peft_config"):
        import copy

        m = copy.deepcopy(m).merge_and_unload()
    tmp = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    m.save_pretrained(str(tmp))
    tok.save_pretrained(str(tmp))
    if info is not None:  # which stage and step produced this directory (read by `eval`)
        import json

        (tmp / "coa_stage.json").write_text(json.dumps(info) + "\n")
    old = out_dir.with_name(out_dir.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if out_dir.exists():
        out_dir.replace(old)
    tmp.replace(out_dir)
    shutil.rmtree(old, ignore_errors=True)
    return out_dir


def trainable_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """What a checkpoint must hold: every parameter that trains (all of them, or the LoRA adapters)."""
    m = unwrap(model)
    names = {n for n, p in m.named_parameters() if p.requires_grad}
    return {k: v.detach().cpu().clone() for k, v in m.state_dict().items() if k in names}


def count_parameters(model: torch.nn.Module) -> int:
    m = unwrap(model)
    seen, total = set(), 0
    for p in m.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            total += p.numel()
    return total


def model_context(model: torch.nn.Module) -> int | None:
    """The positions the model was built for, when its config says (HF `max_position_embeddings`)."""
    n = getattr(getattr(unwrap(model), "config", None), "max_position_embeddings", None)
    return int(n) if isinstance(n, int) and n > 0 else None
