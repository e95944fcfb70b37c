"""Test fixture for the replay engine: a tiny random model (embedded-default code path, no downloaded weights)
exported with `export-onnx`, plus PyTorch reference values the TypeScript test compares against.
Usage: python fixture.py OUT_DIR [family]   →  OUT_DIR/model/ (HF dir), OUT_DIR/onnx/model.onnx, OUT_DIR/ref.json"""

import json
import sys
from pathlib import Path

import torch

from coa_trainer.base.config import validate_config
from coa_trainer.model.export_onnx import export
from coa_trainer.rollout.generate import generate
from coa_trainer.model.load import Runtime, load_model, write_embedded_model

TEXTS = [
    "question : who wrote the book of sand ? <think> i should search </think> <search> book of sand author </search>",
    "<observation> doc 1 ( title : borges ) jorge luis borges wrote it in 1975 . </observation> <answer> borges </answer>",
    'the capital of france is paris ; 42 + 7 = 49 ! what\'s "quoted" [x] {y} café',
]
MEMO = (
    "<think> i should search </think> <search> book of sand author </search> <observation> doc 1 ( title : "
    "borges ) jorge luis borges wrote it in 1975 . </observation> <answer> borges </answer>"
)
PROBES = [
    "question : who wrote the book of sand ?\n",
    "<think>i should search</think><search>Borges 1975</search>",
    "  Mixed CASE, digits 123 and unknownword!  ",
    "<answer> paris </answer><eos>",
]


def main() -> None:
    out = Path(sys.argv[1])
    family = sys.argv[2] if len(sys.argv) > 2 else "llama"
    torch.set_num_threads(1)
    spec = {
        "family": family,
        "hidden_size": 32,
        "num_layers": 2,
        "num_heads": 4,
        "num_kv_heads": 2,
        "intermediate_size": 64,
        "max_position": 128,
    }
    model_dir = write_embedded_model(validate_config({"model": {"embedded": spec}}), TEXTS, out / "model", seed=7)
    model, tok = load_model(model_dir, Runtime(torch.device("cpu"), None), trainable=True)
    loss = memorise(model, tok, PROBES[0] + MEMO)
    model.eval()
    model.save_pretrained(str(model_dir))
    export(model_dir, out / "onnx" / "model.onnx")
    enc = [tok(p, add_special_tokens=False, return_offsets_mapping=True) for p in PROBES]
    prompt = tok(PROBES[0], add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([prompt])).logits[0]
    greedy, _, _ = generate(model, [prompt], 24, {tok.eos_token_id}, tok.pad_token_id, torch.device("cpu"))
    ref = {
        "probes": [
            {
                "text": p,
                "ids": list(e["input_ids"]),
                "offsets": [a for a, _ in e["offset_mapping"]],
                "decoded": tok.decode(e["input_ids"], skip_special_tokens=False),
            }
            for p, e in zip(PROBES, enc)
        ],
        "prompt_ids": prompt,
        "prompt_logits": logits.tolist(),
        "greedy_ids": greedy[0],
        "final_loss": loss,
        "greedy_text": tok.decode(greedy[0], skip_special_tokens=False),
    }
    ref["alt"] = alt_tokenizer(out)
    ref["bpe"] = {name: bpe_tokenizer(out, name) for name in ("gpt2", "qwen2")}
    ref["unigram"] = unigram_tokenizer(out)
    ref["realistic"] = realistic(out)
    (out / "ref.json").write_text(json.dumps(ref))


def memorise(model, tok, text: str) -> float:
    """Overfit `text` + EOS so the replay loop has real actions, observations and answers to follow (a random model
    never closes a tag). Returns the final loss."""
    x = torch.tensor([tok(text, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]])
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(150):
        loss = model(input_ids=x, labels=x).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    return float(loss.detach())


def alt_tokenizer(out: Path) -> dict:
    """A second tokenizer.json with the other supported components (NFC, Whitespace, grouped Digits), and what
    the Python library makes of the probes with it."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers

    pre = pre_tokenizers.Sequence([pre_tokenizers.Whitespace(), pre_tokenizers.Digits(individual_digits=False)])
    norm = normalizers.Sequence([normalizers.NFC(), normalizers.Lowercase()])
    words = sorted({w for t in TEXTS + PROBES for w, _ in pre.pre_tokenize_str(norm.normalize_str(t))})
    vocab = {"[unk]": 0, **{w: i + 1 for i, w in enumerate(words[::2])}}  # every other word: <unk>s too
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[unk]"))
    tok.normalizer = norm
    tok.pre_tokenizer = pre
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)
    tok.add_special_tokens(
        [
            AddedToken("<answer>", special=True, normalized=False),
            AddedToken("</answer>", special=True, normalized=False),
        ]
    )
    tok.save(str(out / "alt_tokenizer.json"))
    probes = PROBES + ["Cafe\u0301 12abc34 x_y-z ;; 2024!", "<answer>X</answer>"]
    encs = [tok.encode(p) for p in probes]
    return [
        {
            "text": p,
            "ids": e.ids,
            "offsets": [a for a, _ in e.offsets],
            "decoded": tok.decode(e.ids, skip_special_tokens=False),
        }
        for p, e in zip(probes, encs)
    ]


QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
    r"|\s+(?!\S)|\s+"
)


def bpe_tokenizer(out: Path, style: str) -> list[dict]:
    """A byte-level BPE tokenizer trained on the fixture texts, laid out like GPT-2's (ByteLevel pre-tokenizer with
    its regex) or Qwen2's (NFC, a Split regex, then ByteLevel without regex); ids and decoding of odd probes."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    if style == "qwen2":
        tok.normalizer = normalizers.NFC()
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated", invert=False),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        )
    else:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tok.train_from_iterator(TEXTS * 3, trainer=trainer)
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in ("<eos>", "<answer>", "</answer>")])
    tok.save(str(out / f"bpe_{style}.json"))
    probes = PROBES + [
        "Cafe\u0301 12abc34 x_y-z ;;\n\n  2024! 😀 naïve \t tab's WE'LL",
        "<answer>Borges</answer><eos>",
        "   ",
    ]
    return [
        {"text": p, "ids": tok.encode(p).ids, "decoded": tok.decode(tok.encode(p).ids, skip_special_tokens=False)}
        for p in probes
    ]


ODD = [
    "Cafe\u0301 12abc34 x_y-z ;;\n\n  2024! \U0001f600 naïve \t tab's WE'LL",
    "<answer>Borges</answer><eos>",
    "   ",
    "",
]


def _probes(tok, texts: list[str]) -> list[dict]:
    """ids, start offsets (code points) and decoding of `texts` by a `tokenizers.Tokenizer`."""
    encs = [tok.encode(t, add_special_tokens=False) for t in texts]
    return [
        {
            "text": t,
            "ids": e.ids,
            "offsets": [a for a, _ in e.offsets],
            "decoded": tok.decode(e.ids, skip_special_tokens=False),
        }
        for t, e in zip(texts, encs)
    ]


def unigram_tokenizer(out: Path) -> list[dict]:
    """A SentencePiece-style Unigram tokenizer (NFKC, Metaspace pre-tokenizer and decoder, byte fallback off, <unk>)
    trained on the fixture texts — the layout of T5/Llama-1-era SentencePiece models converted to tokenizer.json."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always")
    trainer = trainers.UnigramTrainer(vocab_size=150, special_tokens=["<unk>"], unk_token="<unk>", show_progress=False)
    tok.train_from_iterator(TEXTS * 3, trainer=trainer)
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in ("<eos>", "<answer>", "</answer>")])
    tok.save(str(out / "unigram.json"))
    return _probes(tok, PROBES + ODD)


# The realistic tiny model (byte-level BPE, tags as text) memorises one Search-R1 trajectory, so replay has real
# text-tag stops, queries and observations to follow.
REAL_PROMPT = "question : who wrote the book of sand ?\n"
REAL_OBS = 'Doc 1(Title: "Borges") jorge luis borges wrote it in 1975 .\n'
REAL_MEMO = (
    f"<think> I need to search. </think>\n<search> book of sand author </search>\n\n<information>{REAL_OBS}"
    "</information>\n\n<answer> borges </answer>"
)


def realistic(out: Path) -> dict:
    """The realistic model's tokenizer on the probes; the model memorising REAL_MEMO, exported to realistic/onnx."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "src" / "trainer" / "tests"))
    import realistic_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model_dir = realistic_model.write(out / "realistic" / "model", seed=3)
    tok = AutoTokenizer.from_pretrained(str(model_dir))
    probes = _probes(tok.backend_tokenizer, PROBES + ODD + [REAL_PROMPT + REAL_MEMO])
    model = AutoModelForCausalLM.from_pretrained(str(model_dir))
    loss = memorise(model, tok, REAL_PROMPT + REAL_MEMO)
    model.save_pretrained(str(model_dir))
    export(model_dir, out / "realistic" / "onnx" / "model.onnx", dialect="search-r1")
    return {"probes": probes, "prompt": REAL_PROMPT, "memo": REAL_MEMO, "observation": REAL_OBS, "final_loss": loss}


if __name__ == "__main__":
    main()
