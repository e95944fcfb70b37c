"""A stand-in for verl's DataProto (verl/protocol.py needs Ray and tensordict), written here, not copied: what the
copied reward managers read — `batch` (tensors whose first dimension is the sample), `non_tensor_batch` (numpy object
arrays), `meta_info`; `len`, iteration, `data[i]` (one sample), `data[i:j]` (a DataProto) and `reorder` as verl's behave — and
`rollout_batch`, which lays samples out as verl's trainer hands them to a reward manager."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch


@dataclass
class DataProtoItem:
    batch: dict[str, torch.Tensor] = field(default_factory=dict)
    non_tensor_batch: dict[str, Any] = field(default_factory=dict)
    meta_info: dict = field(default_factory=dict)


@dataclass
class DataProto:
    batch: dict[str, torch.Tensor] = field(default_factory=dict)
    non_tensor_batch: dict[str, np.ndarray] = field(default_factory=dict)
    meta_info: dict = field(default_factory=dict)

    def __len__(self) -> int:
        for v in self.batch.values():
            return int(v.shape[0])
        for v in self.non_tensor_batch.values():
            return int(v.shape[0])
        return 0

    def __getitem__(self, item: int | slice) -> DataProtoItem | DataProto:
        if isinstance(item, slice):
            return DataProto(
                {k: v[item] for k, v in self.batch.items()},
                {k: v[item] for k, v in self.non_tensor_batch.items()},
                self.meta_info,
            )
        return DataProtoItem(
            {k: v[item] for k, v in self.batch.items()},
            {k: v[item] for k, v in self.non_tensor_batch.items()},
            self.meta_info,
        )

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def copy(self) -> DataProto:
        """A deep copy (samples of one prompt still share one extra_info dict): a batch each thread may reorder."""
        return DataProto(
            {k: v.clone() for k, v in self.batch.items()}, copy.deepcopy(self.non_tensor_batch), dict(self.meta_info)
        )

    def reorder(self, indices: torch.Tensor) -> None:
        """In place, as verl's DataProto.reorder (what `trainer.balance_batch` does to a batch before its reward)."""
        idx = indices.detach().cpu().numpy()
        self.batch = {k: v[indices] for k, v in self.batch.items()}
        self.non_tensor_batch = {k: v[idx] for k, v in self.non_tensor_batch.items()}


def _objects(values: list) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        out[i] = v
    return out


def rollout_batch(tokenizer: Any, rows: list[dict], responses: list[list[str]]) -> DataProto:
    """A batch as verl's trainer passes it to the reward: each dataset row (`prompt` text, `data_source`,
    `reward_model`, `extra_info`) repeated once per response (`batch.repeat(n, interleave=True)`: np.repeat of object
    arrays, so a prompt's samples share one extra_info dict, as in verl), prompts left-padded and responses
    right-padded to the longest, `attention_mask` over both, and `__num_turns__` as the agent loop sets it."""
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    prompt_ids = [tokenizer.encode(r["prompt"]) for r in rows]
    samples = [(r, p, tokenizer.encode(text)) for r, p, texts in zip(rows, prompt_ids, responses) for text in texts]
    plen = max(len(p) for _, p, _ in samples)
    rlen = max(max(len(t) for _, _, t in samples), 1)
    prompts = torch.full((len(samples), plen), pad, dtype=torch.long)
    resp = torch.full((len(samples), rlen), pad, dtype=torch.long)
    mask = torch.zeros((len(samples), plen + rlen), dtype=torch.long)
    for i, (_, p, t) in enumerate(samples):
        prompts[i, plen - len(p) :] = torch.tensor(p)
        mask[i, plen - len(p) : plen] = 1
        if t:
            resp[i, : len(t)] = torch.tensor(t)
            mask[i, plen : plen + len(t)] = 1
    repeats = [len(texts) for texts in responses]

    def repeated(key: str) -> np.ndarray:
        return np.repeat(_objects([r[key] for r in rows]), repeats, axis=0)

    return DataProto(
        batch={
            "prompts": prompts,
            "responses": resp,
            "input_ids": torch.cat([prompts, resp], dim=1),
            "attention_mask": mask,
        },
        non_tensor_batch={
            "data_source": repeated("data_source"),
            "reward_model": repeated("reward_model"),
            "extra_info": repeated("extra_info"),
            "__num_turns__": np.array([2] * len(samples), dtype=object),
        },
    )
