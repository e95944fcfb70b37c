"""`export-onnx`: an HF model directory → model.onnx with past key/value inputs and outputs, for the editor's
replay engine (onnxruntime-node, src/replay/). Beside the graph: the tokenizer (tokenizer.json and friends) and
coa_model.json (tag token ids, dialect, eos/pad, KV layout) so the TypeScript side needs no transformers.

Graph contract (all dims dynamic except heads/head_dim):
  inputs   input_ids [B,S] int64, attention_mask [B,P+S] int64, position_ids [B,S] int64,
           past_key_<i>, past_value_<i> [B,H_kv,P,D] float32 for every layer i (P may be 0)
  outputs  logits [B,S,V] float32, present_key_<i>, present_value_<i> [B,H_kv,P+S,D]
The logits are checked against PyTorch at export time (prefill and one cached step); max |Δ| is printed and
the export fails above the tolerance."""

from __future__ import annotations

import dataclasses
import json
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from ..data.dialects import all_tags, dialect_names, tags
from ..base.options import ExportOnnxOptions
from ..data.tokenizer import TextTokenizer

if TYPE_CHECKING:
    from transformers import Cache, PretrainedConfig, PreTrainedModel

TOLERANCE = 1e-4
FORMAT = "coa-onnx-1"  # coa_model.json's format (src/replay/model.ts checks it)


class _KvWrapper(torch.nn.Module):
    """Flat tensors in and out, so the ONNX graph has one named input/output per layer's key and value."""

    def __init__(self, model: PreTrainedModel, layers: int):
        super().__init__()
        self.model = model
        self.layers = layers

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        position_ids: torch.Tensor,  # type: ignore[override]
        *past: torch.Tensor,
    ) -> tuple[torch.Tensor, ...]:
        from transformers import DynamicCache

        cache = DynamicCache(config=self.model.config)
        for i in range(self.layers):
            cache.update(past[2 * i], past[2 * i + 1], i)
        out = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids,
            past_key_values=cache,
            use_cache=True,
            return_dict=True,
        )
        present = out.past_key_values
        flat: list[torch.Tensor] = []
        for i in range(self.layers):
            k, v = _layer_kv(present, i)
            flat += [k, v]
        return (out.logits, *flat)


def _layer_kv(cache: Cache, i: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Layer i's keys and values (transformers ≥ 4.56, as pinned: one cache layer object per decoder layer)."""
    layer = cache.layers[i]
    keys, values = getattr(layer, "keys", None), getattr(layer, "values", None)
    assert isinstance(keys, torch.Tensor) and isinstance(values, torch.Tensor), f"{type(layer).__name__} holds no keys"
    return keys, values


def kv_shape(config: PretrainedConfig) -> tuple[int, int, int]:
    """(layers, kv heads, head dim) of a decoder config."""
    layers = config.num_hidden_layers
    heads = config.num_attention_heads
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    return layers, kv_heads, head_dim


def _names(layers: int) -> tuple[list[str], list[str]]:
    past = [n for i in range(layers) for n in (f"past_key_{i}", f"past_value_{i}")]
    present = [n for i in range(layers) for n in (f"present_key_{i}", f"present_value_{i}")]
    return past, present


def _inputs(ids: list[list[int]], past: list[torch.Tensor], past_len: int) -> tuple[torch.Tensor, ...]:
    x = torch.tensor(ids, dtype=torch.long)
    B, S = x.shape
    attn = torch.ones((B, past_len + S), dtype=torch.long)
    pos = torch.arange(past_len, past_len + S, dtype=torch.long).unsqueeze(0).expand(B, S).contiguous()
    return (x, attn, pos, *past)


def model_file_target(out: Path) -> Path:
    """The file the export writes: a symbolic link's target (the link stays). Anything but a regular file is refused
    before any work: the export renames a temporary file onto it and reads it back, so a FIFO or a device node would
    be replaced by a plain file."""
    if out.is_symlink():
        if not out.exists():
            raise ValueError(f"{out}: is a symbolic link to a missing file; give the model file itself as -o")
        out = out.resolve()
    if out.exists() and not out.is_file():
        raise ValueError(f"{out}: is not a regular file (a directory, FIFO or device); give a model.onnx path as -o")
    return out


def export(
    model_dir: Path,
    out: Path,
    opset: int = 17,
    dialect: str | None = None,
    prompt_template: str = "question : {question}\n",
) -> ModelInfo:
    from ..model.load import Runtime, load_model

    out = model_file_target(out)
    torch.set_num_threads(1)
    # The vocabulary as trained: tags the checkpoint has as tokens stay tokens, tags that were text stay text
    # (adding them here would give the graph fresh, untrained embeddings).
    model, tok = load_model(model_dir, Runtime(torch.device("cpu"), None), trainable=False, special_tags=False)
    if not getattr(tok, "is_fast", False):  # replay reads tokenizer.json with Hugging Face `tokenizers`
        raise ValueError(f"{model_dir}: the tokenizer has no fast (tokenizer.json) form; the editor's replay needs one")
    model.eval()
    model.config.use_cache = True
    layers, kv_heads, head_dim = kv_shape(model.config)
    wrapper = _KvWrapper(model, layers).eval()
    past_names, present_names = _names(layers)

    # Trace with a non-empty past so the cached path (concat of past and new keys) is the one recorded.
    B, P, S = 2, 3, 4
    vocab = model.get_input_embeddings().weight.shape[0]
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, vocab, (B, S), generator=g).tolist()
    past = [torch.randn(B, kv_heads, P, head_dim, generator=g) for _ in range(2 * layers)]
    args = _inputs(ids, past, P)
    dyn: dict[str, dict[int, str]] = {
        "input_ids": {0: "batch", 1: "sequence"},
        "attention_mask": {0: "batch", 1: "total_sequence"},
        "position_ids": {0: "batch", 1: "sequence"},
        "logits": {0: "batch", 1: "sequence"},
    }
    for n in past_names:
        dyn[n] = {0: "batch", 2: "past_sequence"}
    for n in present_names:
        dyn[n] = {0: "batch", 2: "total_sequence"}
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    with torch.no_grad(), warnings.catch_warnings():
        # Tracer warnings about the cache's Python-side branches: the graph is checked numerically below instead.
        warnings.simplefilter("ignore")
        # The TorchScript exporter records the DynamicCache plumbing as plain concats; the dynamo exporter
        # in torch 2.15 needs the cache registered as a pytree and gains nothing for these small decoders.
        torch.onnx.export(
            wrapper,
            args,
            str(tmp),
            input_names=["input_ids", "attention_mask", "position_ids", *past_names],
            output_names=["logits", *present_names],
            dynamic_axes=dyn,
            opset_version=opset,
            dynamo=False,
            do_constant_folding=True,
        )
    tmp.replace(out)

    max_delta = verify(out, wrapper, vocab, layers, kv_heads, head_dim)
    print(f"export-onnx: logits max |Δ| vs PyTorch = {max_delta:.3e} (tolerance {TOLERANCE:g})", flush=True)
    if not max_delta <= TOLERANCE:
        raise RuntimeError(f"ONNX logits differ from PyTorch by {max_delta:.3e} (> {TOLERANCE:g})")

    tok.save_pretrained(str(out.parent))
    meta = model_info(
        tok,
        model.config,
        KvLayout(layers, kv_heads, head_dim),
        vocab,
        dialect or _stage_dialect(model_dir),
        prompt_template=prompt_template,
        onnx=out.name,
        verified_max_abs_diff=max_delta,
    )
    (out.parent / "coa_model.json").write_text(json.dumps(dataclasses.asdict(meta), indent=2) + "\n")
    return meta


def verify(path: Path, wrapper: _KvWrapper, vocab: int, layers: int, kv_heads: int, head_dim: int) -> float:
    """Max |Δlogit| between onnxruntime and PyTorch: prefill from an empty past, then one cached step."""
    run = _runner(path)
    g = torch.Generator().manual_seed(1)
    worst = 0.0
    past = [torch.zeros(1, kv_heads, 0, head_dim) for _ in range(2 * layers)]
    P = 0
    for S in (5, 1):
        ids = torch.randint(0, vocab, (1, S), generator=g).tolist()
        args = _inputs(ids, past, P)
        with torch.no_grad():
            ref = wrapper(*args)
        got = run([a.numpy() for a in args])
        worst = max(worst, float((torch.from_numpy(got[0]) - ref[0]).abs().max()))
        past = [torch.from_numpy(t) for t in got[1:]]
        P += S
    return worst


def _runner(path: Path) -> Any:
    """onnxruntime when installed (fast), else the onnx package's reference evaluator (slow, exact)."""
    names = ["input_ids", "attention_mask", "position_ids"]
    try:
        import onnxruntime as ort  # pyright: ignore[reportMissingImports] — optional, not pinned
    except ImportError:
        import onnx
        from onnx.reference import ReferenceEvaluator

        proto = onnx.load(str(path))
        inputs = [i.name for i in proto.graph.input]
        ev = ReferenceEvaluator(proto)
        return lambda arrays: ev.run(None, dict(zip(inputs, arrays)))
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    inputs = [i.name for i in sess.get_inputs()]
    assert inputs[:3] == names
    return lambda arrays: sess.run(None, dict(zip(inputs, arrays)))


def _stage_dialect(model_dir: Path) -> str:
    info = model_dir / "coa_stage.json"
    if info.is_file():
        d = json.loads(info.read_text()).get("dialect")
        if d in dialect_names():
            return d
    return "coa"


@dataclass(frozen=True)
class KvLayout:
    """The past/present key-value tensors' layout: one key and one value per layer, [B, kv_heads, P, head_dim]."""

    layers: int
    kv_heads: int
    head_dim: int


@dataclass(frozen=True)
class ModelInfo:
    """coa_model.json: what the TypeScript replay engine needs besides the graph and tokenizer.json
    (src/replay/model.ts ModelInfo), its keys in this order."""

    format: str  # FORMAT
    dialect: str
    tags: dict[str, str | None]  # the dialect's tag strings by role (think_open, action_close …)
    tag_ids: dict[str, int]  # the tags that are one token of the vocabulary (the others are text for it)
    eos_id: int | None
    pad_id: int | None
    vocab_size: int
    kv: KvLayout
    model_type: str | None
    context: int | None  # the context a `max_len: null` rollout is capped at (lengths.resolve_max_len)
    prompt_template: str  # how the replay engine puts a question to the model
    onnx: str  # the graph's file name, beside this one
    verified_max_abs_diff: float  # max |Δlogit| against PyTorch at export


def model_info(
    tok: TextTokenizer,
    config: PretrainedConfig,
    kv: KvLayout,
    vocab: int,
    dialect: str,
    prompt_template: str,
    onnx: str,
    verified_max_abs_diff: float,
) -> ModelInfo:
    t = tags(dialect)
    return ModelInfo(
        format=FORMAT,
        dialect=dialect,
        tags={k: v for k, v in vars(t).items() if k != "name"},
        tag_ids={
            tag: i for tag in all_tags() if (i := tok.convert_tokens_to_ids(tag)) is not None and i != tok.unk_token_id
        },
        eos_id=tok.eos_token_id,
        pad_id=tok.pad_token_id,
        vocab_size=vocab,
        kv=kv,
        model_type=getattr(config, "model_type", None),
        context=getattr(config, "max_position_embeddings", None),
        prompt_template=prompt_template,
        onnx=onnx,
        verified_max_abs_diff=verified_max_abs_diff,
    )


def export_command(opts: ExportOnnxOptions) -> int:
    from ..model.load import ModelDirError

    try:
        meta = export(
            opts.checkpoint, opts.output, opset=opts.opset, dialect=opts.dialect, prompt_template=opts.prompt_template
        )
    except (ModelDirError, RuntimeError, ValueError) as e:
        print(f"export-onnx: {e}", file=sys.stderr)
        return 1
    print(
        f"export-onnx: wrote {opts.output} ({meta.kv.layers} layers, vocab {meta.vocab_size}, "
        f"dialect {meta.dialect}) with tokenizer and coa_model.json beside it"
    )
    return 0
