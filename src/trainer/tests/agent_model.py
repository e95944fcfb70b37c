"""A tiny Qwen2-shape model that behaves like an agent: the realistic test model (realistic_model.py: byte-level BPE,
ChatML, tags as text) trained for a few seconds on Search-R1-style transcripts, so that greedy decoding writes
`<search> … </search>`, reads the observation the loop appends, searches again and answers. With it the rollout
engine is compared with the reference loop on what the loop exists for — tool calls, appended observations, stop
strings that BPE merges with the text after them — instead of on a random model that never stops."""

from __future__ import annotations

from pathlib import Path

import torch

QUESTIONS = [
    "Who founded Acme",
    "Where is Borealis based",
    "When did Cobalt open",
    "Who runs Delta Works",
    "What does Ember make",
    "Who owns Fjord Air",
]
IM_START, IM_END = "<|im_start|>", "<|im_end|>"


def prompt(q: str) -> str:
    return f"{IM_START}user\n{q}?{IM_END}\n{IM_START}assistant\n"


def observation(query: str) -> str:
    """What the test tool returns for a query: deterministic, a few dozen tokens."""
    words = query.split() or ["nothing"]
    return f'Doc 1(Title: "{words[-1]}") {query} was recorded in the archive of {words[0]} in 1990.'


def transcript(
    q: str, tags: tuple[str, str, str, str] = ("<search>", "</search>", "<information>", "</information>")
) -> str:
    a_open, a_close, o_open, o_close = tags
    q2 = q + " history"
    return (
        f"<think> I need to search. </think>\n{a_open} {q} {a_close}\n\n{o_open}{observation(q)}{o_close}\n\n"
        f"<think> not enough, again. </think>\n{a_open} {q2} {a_close}\n\n{o_open}{observation(q2)}{o_close}\n\n"
        f"<think> found it. </think>\n<answer> {q.split()[-1]} </answer>{IM_END}"
    )


def train(model, tok, steps: int = 160, lr: float = 3e-3, seed: int = 0, special: bool = False):
    """Fit `model` on the transcripts (in place; returns it in eval mode). `special`: tags are single tokens."""
    torch.manual_seed(seed)
    texts = [prompt(q) + transcript(q) for q in QUESTIONS]
    seqs = [tok(t, add_special_tokens=False)["input_ids"] for t in texts]
    T = max(len(s) for s in seqs)
    pad = tok.pad_token_id
    ids = torch.full((len(seqs), T), pad)
    attn = torch.zeros((len(seqs), T), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(s)
        attn[i, : len(s)] = 1
    labels = ids.masked_fill(attn == 0, -100)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model: more threads only contend (7x slower on a loaded 2-core machine)
    try:
        for _ in range(steps):
            loss = model(input_ids=ids, attention_mask=attn, labels=labels).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
    finally:
        torch.set_num_threads(threads)
    return model.eval()


def write(out_dir: Path, base_dir: Path, special: bool = False) -> Path:
    """The trained model as an HF directory (once per path): `base_dir` is the realistic model's."""
    from coa_trainer.model.load import Runtime, load_model, save_model_dir

    out_dir = Path(out_dir)
    if (out_dir / "config.json").is_file():
        return out_dir
    model, tok = load_model(base_dir, Runtime(torch.device("cpu"), None), None, trainable=True, special_tags=special)
    train(model, tok, special=special)
    return save_model_dir(model, tok, out_dir)
