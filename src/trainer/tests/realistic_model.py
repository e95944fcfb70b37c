"""A realistic tiny chat model for tests, built here, never downloaded: Qwen2 architecture at tiny size, a byte-level
BPE tokenizer trained with `tokenizers` on the repository's real data, Qwen2's pre-tokenizer regex, ChatML chat
template, `<|im_end|>` as end of turn. Dialect tags are *text* in it (not special tokens), so the byte-level merges
at tag boundaries that real models have (`">\\n\\n"`, `"</"`, `"<information"`…) are exercised, as are chat
templates and stop strings.

Use from pytest through the `realistic_model_dir` fixture (conftest.py, built once per session), or from other
languages' tests: `python src/trainer/tests/realistic_model.py OUT_DIR` (prints OUT_DIR when written)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
CORPUS = REPO / "examples" / "data" / "search-r1" / "corpus_example.jsonl"
TEXTS = [REPO / "examples" / "search-r1-transcripts.txt", REPO / "examples" / "trajectories.coa.jsonl"]

# Qwen2's pre-tokenizer regex (tokenizer.json of the Qwen2/Qwen2.5 family): note `[^\s\p{L}\p{N}]+[\r\n]*`,
# which puts a tag's `>` and the newlines after it in one pre-token, as real Qwen tokenizers do.
QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
ENDOFTEXT, IM_START, IM_END = "<|endoftext|>", "<|im_start|>", "<|im_end|>"
DEFAULT_SYSTEM = "You are a helpful assistant."
# ChatML as Qwen2.5 writes it: a default system turn when none is given, generation prompt on request.
CHAT_TEMPLATE = (
    "{%- if messages[0]['role'] != 'system' %}"
    "{{- '<|im_start|>system\\n" + DEFAULT_SYSTEM + "<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
# Search-R1-style text with tags, so BPE learns merges that straddle tag boundaries.
TAG_TEXT = (
    '<think> I need to search. </think>\n<search> query </search>\n\n<information>Doc 1(Title: "A") text\n'
    "</information>\n\n<think> found it. </think>\n<answer> yes </answer>"
)


def training_texts() -> list[str]:
    texts = []
    with open(CORPUS, encoding="utf-8") as f:
        texts += [json.loads(line)["contents"] for line in f if line.strip()]
    texts += [p.read_text(encoding="utf-8") for p in TEXTS]
    texts += [TAG_TEXT] * 20
    return texts


def build_tokenizer(vocab_size: int = 1200):
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from tokenizers import AddedToken

    tok = Tokenizer(models.BPE(byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    specials = [ENDOFTEXT, IM_START, IM_END]
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=specials,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(training_texts(), trainer=trainer)
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    return tok


def write(out_dir: Path, seed: int = 0, hidden_size: int = 64, num_layers: int = 2) -> Path:
    """Write the model directory atomically (config, random weights, tokenizer, chat template)."""
    import torch
    from transformers import GenerationConfig, PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    out_dir = Path(out_dir)
    if (out_dir / "config.json").is_file():
        return out_dir
    tmp = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    raw = build_tokenizer()
    hf = PreTrainedTokenizerFast(
        tokenizer_object=raw,
        eos_token=IM_END,
        pad_token=ENDOFTEXT,
        clean_up_tokenization_spaces=False,
        model_max_length=2048,
    )
    hf.chat_template = CHAT_TEMPLATE
    hf.save_pretrained(str(tmp))
    eos, pad = raw.token_to_id(IM_END), raw.token_to_id(ENDOFTEXT)
    cfg = Qwen2Config(
        vocab_size=raw.get_vocab_size(),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 2,
        num_hidden_layers=num_layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        rms_norm_eps=1e-6,
        bos_token_id=pad,
        eos_token_id=eos,
        pad_token_id=pad,
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(cfg)
    model.save_pretrained(str(tmp))
    GenerationConfig(eos_token_id=[eos, pad], pad_token_id=pad, bos_token_id=pad).save_pretrained(str(tmp))
    tmp.replace(out_dir)
    return out_dir


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python src/trainer/tests/realistic_model.py OUT_DIR")
    print(write(Path(sys.argv[1])))
