"""Batch layouts for the losses: right-padded rows (one sequence per row, attention mask), or packed — every
sequence of a micro-batch in one row, no padding, position ids restarting at 0 for each sequence and no attention
mask. transformers turns such position ids into a block-diagonal causal mask for sdpa / eager
(masking_utils.find_packed_sequence_indices, transformers 5.x) and into the varlen kernel for flash-attention, so
attention never crosses a sequence boundary. The losses only read targets through `Layout.place`, which puts each
sequence's per-target values at its own positions: the last token of one sequence never gets the next sequence's
first token as a target (that position holds 0 = not trained).

`micro_batches` cuts a batch into consecutive groups within a token budget, so short trajectories do not pay for the
longest one of the whole batch (packed: a group costs its tokens; padded: rows × its longest row)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch


@dataclass
class Layout:
    ids: torch.Tensor  # [R, L]
    attn: torch.Tensor | None  # [R, L] (padded), None (packed)
    pos: torch.Tensor | None  # [R, L] restarting per sequence (packed), None (padded: 0..L-1 per row)
    spans: list[tuple[int, int, int]]  # (row, start, length) of each sequence, in input order
    tokens: int  # real tokens (no padding)

    def place(self, per_seq: Sequence[Sequence[float]], dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """[R, L-1] with per_seq[i][j] (the value of sequence i's j-th target, i.e. its token j+1) at that target's
        position; 0 everywhere else (padding, and the position between two packed sequences)."""
        R, L = self.ids.shape
        out = torch.zeros((R, L - 1), dtype=dtype)
        for (row, start, n), vals in zip(self.spans, per_seq):
            k = min(len(vals), n - 1)
            if k > 0:
                out[row, start:start + k] = torch.as_tensor(list(vals[:k]), dtype=dtype)
        return out.to(self.ids.device)

    def seq_index(self) -> torch.Tensor:
        """[R, L-1] long: which sequence each target belongs to, -1 where none."""
        R, L = self.ids.shape
        out = torch.full((R, L - 1), -1, dtype=torch.long)
        for i, (row, start, n) in enumerate(self.spans):
            out[row, start:start + max(0, n - 1)] = i
        return out.to(self.ids.device)


def layout(seqs: list[list[int]], pad_id: int, packed: bool, device: torch.device) -> Layout:
    if packed:
        flat: list[int] = []
        pos: list[int] = []
        spans = []
        for s in seqs:
            spans.append((0, len(flat), len(s)))
            flat += s
            pos += range(len(s))
        if len(flat) < 2:  # a row needs one target at least (same rule as the padded layout's T ≥ 2)
            flat, pos = flat + [pad_id] * (2 - len(flat)), pos + [0] * (2 - len(pos))
        ids = torch.tensor([flat], dtype=torch.long)
        return Layout(ids.to(device), None, torch.tensor([pos], dtype=torch.long).to(device), spans,
                      sum(len(s) for s in seqs))
    T = max(2, max(len(s) for s in seqs))
    ids = torch.full((len(seqs), T), pad_id, dtype=torch.long)
    attn = torch.zeros((len(seqs), T), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = torch.tensor(s, dtype=torch.long)
        attn[i, :len(s)] = 1
    return Layout(ids.to(device), attn.to(device), None, [(i, 0, len(s)) for i, s in enumerate(seqs)],
                  sum(len(s) for s in seqs))


def micro_batches(lengths: list[list[int]], budget: int | None, packed: bool) -> list[slice]:
    """Consecutive groups of items (each item: the lengths of its sequences — an SFT-1 pair has two, which stay
    together) whose cost fits `budget` tokens; an item bigger than the budget is a group of its own. None: one
    group."""
    if budget is None or not lengths:
        return [slice(0, len(lengths))]
    out, start, seqs = [], 0, []
    for i, item in enumerate(lengths):
        trial = seqs + list(item)
        cost = sum(trial) if packed else len(trial) * max(trial, default=0)
        if seqs and cost > budget:
            out.append(slice(start, i))
            start, trial = i, list(item)
        seqs = trial
    out.append(slice(start, len(lengths)))
    return out
