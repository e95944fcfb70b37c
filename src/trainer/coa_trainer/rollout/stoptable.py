"""Stop detection on the device: one gather per decode step, no host synchronisation.

A rollout row stops on a token id of its stop set, or once a stop string has been generated however the tokenizer
split it (byte-level BPE writes `</search>` as `</`, `search`, `>` or merges the `>` with the newlines after it).
`generate.StringStops` checks strings on the host by decoding a window of the newest tokens; here the same rule
runs on the device as an automaton: for each stop string, the Knuth–Morris–Pratt state (how many of the string's
characters the generated text currently ends with) and, for every token of the vocabulary and every state, the
state after that token's text and whether the string was completed inside it. A step is then one table lookup per
string per row. The tables are built once per tokenizer and string set (numpy over the vocabulary, ~0.1 s for a
152k vocabulary).

A token's text is what it adds after an anchor token (`decode([a, t])` minus `decode([a])`), so tokenizers whose
decoder joins words with spaces or strips a sentencepiece `▁` at the start give their in-context text. Stop strings
are matched on characters: a character that byte-level BPE splits over several tokens decodes to U+FFFD pieces,
so a stop string with such a character in it would be missed (dialect tags are ASCII)."""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np
import torch

from ..data.tokenizer import TextTokenizer

_TEXTS: "weakref.WeakKeyDictionary[Any, list[str]]" = weakref.WeakKeyDictionary()


def token_texts(tok: TextTokenizer, vocab_size: int) -> list[str]:
    """Each id's text in context (see the module doc); ids past the tokenizer's (padded embedding rows) are ''."""
    cached = _TEXTS.get(tok)
    if cached is not None and len(cached) >= vocab_size:
        return cached
    n = min(len(tok), vocab_size)
    anchor = _anchor(tok)
    if anchor is None:
        texts = tok.batch_decode([[t] for t in range(n)], skip_special_tokens=False)
    else:
        a_text = tok.decode([anchor], skip_special_tokens=False)
        pairs = tok.batch_decode([[anchor, t] for t in range(n)], skip_special_tokens=False)
        texts = [
            p[len(a_text) :] if p.startswith(a_text) else tok.decode([t], skip_special_tokens=False)
            for t, p in enumerate(pairs)
        ]
    texts += [""] * (vocab_size - n)
    _TEXTS[tok] = texts
    return texts


def _anchor(tok: TextTokenizer) -> int | None:
    """A one-token plain word whose decoding is stable, to decode every token after."""
    for word in ("a", "the", "x", "0"):
        ids = tok.encode(word, add_special_tokens=False)
        if len(ids) == 1 and ids[0] != tok.unk_token_id and tok.decode(ids, skip_special_tokens=False).strip() == word:
            return ids[0]
    return None


def kmp_tables(s: str, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(next state [V, L] int32, completed [V, L] bool) for string `s` (L = len(s)) from every state q < L."""
    L = len(s)
    alphabet = sorted(set(s))
    cls_of = {ch: i + 1 for i, ch in enumerate(alphabet)}  # 0: any character not in s
    # KMP automaton over character classes: delta[q, c] = state after reading class c in state q
    fail = [0] * (L + 1)
    k = 0
    for i in range(1, L):
        while k and s[i] != s[k]:
            k = fail[k]
        if s[i] == s[k]:
            k += 1
        fail[i + 1] = k
    delta = np.zeros((L + 1, len(alphabet) + 1), dtype=np.int32)
    for q in range(L + 1):
        for ch, c in cls_of.items():
            if q < L and s[q] == ch:
                delta[q, c] = q + 1
            else:
                delta[q, c] = 0 if q == 0 else delta[fail[q], c]
    V = len(texts)
    width = min(max((len(t) for t in texts), default=1), 64)
    classes = np.full((V, max(width, 1)), -1, dtype=np.int32)  # -1: past the token's end
    long_ids = []
    for t, text in enumerate(texts):
        if len(text) > width:
            long_ids.append(t)
            continue
        for j, ch in enumerate(text):
            classes[t, j] = cls_of.get(ch, 0)
    nxt = np.zeros((V, L), dtype=np.int32)
    done = np.zeros((V, L), dtype=bool)
    for q0 in range(L):
        state = np.full(V, q0, dtype=np.int32)
        hit = np.zeros(V, dtype=bool)
        for j in range(classes.shape[1]):
            c = classes[:, j]
            valid = (c >= 0) & ~hit
            ns = delta[state, np.maximum(c, 0)]
            state = np.where(valid, ns, state)
            hit |= valid & (ns == L)
        nxt[:, q0], done[:, q0] = state, hit
    for t in long_ids:  # the few very long tokens (runs of spaces or punctuation): plain Python
        for q0 in range(L):
            q, h = q0, False
            for ch in texts[t]:
                q = int(delta[q, cls_of.get(ch, 0)])
                if q == L:
                    h = True
                    break
            nxt[t, q0], done[t, q0] = (0 if h else q), h
    nxt[done] = 0  # a completed row stops: its state no longer matters
    return nxt, done


class StopTable:
    """Stop sets as device tables. `sets[k] = (stop ids, stop strings)`; a row follows one set at a time (`set_idx`).

    `step(tokens, state, set_idx)` → (hit [B] bool, new state [B, S] int64) where state holds each string's KMP
    state (0 at the start of a phase: only the phase's own tokens count, as in `StringStops`)."""

    def __init__(
        self, tok: TextTokenizer, sets: list[tuple[set[int], list[str]]], vocab_size: int, device: torch.device
    ):
        self.vocab_size, self.device = vocab_size, device
        self.tok_ref = (lambda: None) if tok is None else weakref.ref(tok)
        self.strings: list[str] = sorted({s for _, strs in sets for s in strs if s})
        ids = torch.zeros((vocab_size, max(1, len(sets))), dtype=torch.bool)
        for k, (stop_ids, _) in enumerate(sets):
            for i in stop_ids:
                if i is not None and 0 <= i < vocab_size:
                    ids[i, k] = True
        self.id_table = ids.to(device)
        active = torch.zeros((max(1, len(sets)), max(1, len(self.strings))), dtype=torch.bool)
        for k, (_, strs) in enumerate(sets):
            for s in strs:
                if s:
                    active[k, self.strings.index(s)] = True
        self.active = active.to(device)
        self.n_strings = len(self.strings)
        if self.strings:
            texts = token_texts(tok, vocab_size)
            tabs = [kmp_tables(s, texts) for s in self.strings]
            self.width = max(len(s) for s in self.strings)
            nxt = np.zeros((vocab_size, self.n_strings, self.width), dtype=np.int64)
            done = np.zeros((vocab_size, self.n_strings, self.width), dtype=bool)
            for k, (n, d) in enumerate(tabs):
                nxt[:, k, : n.shape[1]], done[:, k, : d.shape[1]] = n, d
            # flat tables: one gather at index ((token · S) + string) · W + state
            self.next_flat = torch.from_numpy(nxt.reshape(-1)).to(device)
            self.done_flat = torch.from_numpy(done.reshape(-1)).to(device)
            self.string_base = (torch.arange(self.n_strings) * self.width).to(device)

    def fresh_state(self, rows: int) -> torch.Tensor:
        return torch.zeros((rows, max(1, self.n_strings)), dtype=torch.long, device=self.device)

    def step(
        self, tokens: torch.Tensor, state: torch.Tensor, set_idx: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        hit = self.id_table[tokens, set_idx]
        if not self.n_strings:
            return hit, state
        idx = tokens[:, None] * (self.n_strings * self.width) + self.string_base[None, :] + state
        done = self.done_flat[idx] & self.active[set_idx]
        return hit | done.any(-1), self.next_flat[idx]
