"""A user's Hugging Face model directory and LoRA go through the same code path as the embedded default."""

import json

import pytest
from tokenizers import Tokenizer, models, normalizers

from coa_trainer.data.benchmark import generate
from coa_trainer.base.config import validate_config
from coa_trainer.contracts.run_config import LoraConfig
from coa_trainer.data.dialects import all_tags
from coa_trainer.model.checkpoint import read_checkpoint
from coa_trainer.model.load import count_parameters, load_model, setup_runtime, write_embedded_model
from coa_trainer.data.tokenizer import EOS, PAD, UNK, pre_tokenizer, vocabulary
from coa_trainer.data.benchmark import vocabulary_texts
from conftest import TINY, merge, observed, read_events, run_trainer


def test_embedded_default_is_small():
    config = validate_config({})
    bench = observed(generate(config.benchmark, config.seed))
    from transformers import AutoModelForCausalLM
    from coa_trainer.model.load import embedded_hf_config

    cfg = embedded_hf_config(config.model.embedded, len(vocabulary(vocabulary_texts(bench, config))) + 40, 0, 2)
    n = count_parameters(AutoModelForCausalLM.from_config(cfg))
    assert n < 1_000_000, n


def _user_model_dir(tmp_path, config):
    """A Qwen2-style model saved with save_pretrained whose tokenizer lacks the tags (like a real user's)."""
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    bench = observed(generate(config.benchmark, config.seed))
    words = [w for w in vocabulary(vocabulary_texts(bench, config)) if w not in all_tags()]
    vocab = {t: i for i, t in enumerate([PAD, UNK, EOS, *words])}
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    tk.normalizer = normalizers.Lowercase()
    tk.pre_tokenizer = pre_tokenizer()
    hf_tok = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token=PAD, unk_token=UNK, eos_token=EOS)
    model = Qwen2ForCausalLM(
        Qwen2Config(
            vocab_size=len(vocab),
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=1,
            max_position_embeddings=256,
            tie_word_embeddings=False,
        )
    )
    out = tmp_path / "user-model"
    model.save_pretrained(str(out))
    hf_tok.save_pretrained(str(out))
    return out, len(vocab)


def test_user_model_dir_with_lora_trains_and_chains(tmp_path, write_config):
    config = validate_config(TINY)
    model_dir, base_vocab = _user_model_dir(tmp_path, config)
    lora = {"r": 4, "alpha": 8, "target_modules": ["q_proj", "v_proj"]}
    cfg = write_config(
        merge(
            TINY,
            {"model": {"path": str(model_dir), "lora": lora}, "stages": {"sft2": {"checkpoint_every": 2, "steps": 3}}},
        )
    )
    run = tmp_path / "run"
    r = run_trainer("train", "--stage", "sft2", "--config", str(cfg), "--run-dir", str(run))
    assert r.returncode == 0, r.stdout[-3000:]
    ckpt = read_checkpoint(run / "stages" / "sft2" / "checkpoints" / "step-000002.safetensors")
    assert ckpt.model and all("lora_" in k for k in ckpt.model), "only adapters are trainable"
    final = run / "stages" / "sft2" / "final"
    saved = json.loads((final / "config.json").read_text())
    # a user's model keeps its vocabulary by default (tags stay text: model.tags_as_special_tokens null)
    assert saved["model_type"] == "qwen2" and saved["vocab_size"] == base_vocab
    assert not (final / "adapter_config.json").exists(), "stage outputs are merged, plain HF directories"
    # the next stage starts from that directory through the same loader, with fresh adapters
    r = run_trainer("train", "--stage", "sft3", "--config", str(cfg), "--run-dir", str(run))
    assert r.returncode == 0, r.stdout[-3000:]
    logs = [e["message"] for e in read_events(run) if e["type"] == "log"]
    assert any(str(final) in m for m in logs)


def test_loader_adds_missing_tags_as_single_tokens_when_asked(tmp_path):
    """model.tags_as_special_tokens: true — the embedded default's choice, an option for users' models."""
    from coa_trainer.model.load import load_for_config

    config = validate_config(merge(TINY, {"model": {"tags_as_special_tokens": True}}))
    model_dir, base_vocab = _user_model_dir(tmp_path, config)
    model, tok = load_for_config(
        model_dir,
        setup_runtime(config),
        config.model_copy(update={"model": config.model.model_copy(update={"path": str(model_dir)})}),
    )
    for tag in all_tags():
        assert len(tok.encode(tag, add_special_tokens=False)) == 1
    assert model.get_input_embeddings().weight.shape[0] == len(tok) > base_vocab


def test_embedded_default_is_an_hf_directory(tmp_path):
    config = validate_config(TINY)
    bench = observed(generate(config.benchmark, config.seed))
    d = write_embedded_model(config, vocabulary_texts(bench, config), tmp_path / "init", 0)
    assert (d / "config.json").is_file() and (d / "tokenizer.json").is_file()
    lora = LoraConfig(r=2, alpha=4, dropout=0.0, target_modules=["q_proj"])
    model, tok = load_model(d, setup_runtime(config), lora)
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)


def test_deterministic_switch_is_applied(tiny_config):
    """`deterministic` turns PyTorch's deterministic-kernel mode on (default) and off, so exact resume on CUDA does
    not depend on what another library set before."""
    import torch

    before = torch.are_deterministic_algorithms_enabled()
    try:
        setup_runtime(validate_config({**tiny_config, "dtype": "float32", "deterministic": False}))
        assert not torch.are_deterministic_algorithms_enabled()
        setup_runtime(validate_config({**tiny_config, "dtype": "float32", "deterministic": True}))
        assert torch.are_deterministic_algorithms_enabled()
    finally:
        torch.use_deterministic_algorithms(before)


def test_a_garbage_tokenizer_file_is_one_error_naming_it(tmp_path):
    """A model directory whose tokenizer.json is not one: `missing_model` with the file and what to do, exit 2."""
    from coa_trainer.model.load import ModelDirError, load_tokenizer

    model_dir = tmp_path / "m"
    model_dir.mkdir()
    (model_dir / "config.json").write_text(json.dumps({"model_type": "qwen2"}))
    (model_dir / "tokenizer.json").write_text("this is not a tokenizer")
    with pytest.raises(
        ModelDirError, match=r"its tokenizer \(tokenizer\.json\) cannot be loaded .*copy the model's own"
    ):
        load_tokenizer(model_dir, special_tags=False)
