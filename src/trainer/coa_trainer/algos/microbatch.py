"""One optimiser update's forward/backward work, cut into micro-batches by a token budget (packing.micro_batches)
with gradients accumulated, under DDP, FSDP2 or one process.

The loss of every micro-batch is divided by the *global* count of trained targets (all micro-batches, all ranks),
known before any forward, so the accumulated gradient equals that of the whole batch in one pass — and with a
single micro-batch the arithmetic is exactly the unsplit one. Under DDP only the last micro-batch all-reduces
(`no_sync` before it). Under FSDP2 every micro-batch reduce-scatters (gradients stay sharded: accumulating
unsharded ones would hold a full gradient per rank), so every rank must run as many micro-batches: a rank with
fewer runs zero-weighted two-token ones."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from ..model.packing import micro_batches
from ..base.distributed import DistInfo


@dataclass
class Accumulated:
    loss_sum: float
    count: float  # rank-local trained targets (or pairs)
    global_count: float
    extras: dict[str, float]
    micro_batches: int


def _dummy_loss(model: torch.nn.Module) -> torch.Tensor:
    from ..model.scoring import as_scorer

    dev = next(iter(model.parameters())).device
    logp, _ = as_scorer(model)(torch.zeros((1, 2), dtype=torch.long, device=dev))
    return logp.sum() * 0.0


def accumulate(
    model: torch.nn.Module,
    items: list[Any],
    lengths: list[list[int]],
    count: float,
    loss_fn: Callable[[Any, list[Any]], tuple[torch.Tensor, float, dict[str, float]]],
    budget: int | None,
    packed: bool,
    di: DistInfo,
) -> Accumulated:
    """Backward of sum(loss_fn(model, micro-batch)) / global count × world size (DDP and FSDP average gradients
    over ranks; the world-size factor makes the result one process's gradient on the global batch)."""
    from ..model.fsdp import is_sharded

    groups = micro_batches(lengths, budget, packed)
    global_count = di.all_reduce_sum(count)
    sharded = is_sharded(model)
    n = int(di.all_reduce_max(len(groups))) if sharded else len(groups)
    ddp = isinstance(model, torch.nn.parallel.DistributedDataParallel)
    total, local, extras = 0.0, 0.0, {}
    for i in range(n):
        last = i == n - 1
        sync = model.no_sync() if ddp and not last else contextlib.nullcontext()
        with sync:
            if i < len(groups):
                loss_sum, c, ex = loss_fn(model, items[groups[i]])
                loss = loss_sum / max(global_count, 1.0) * di.world_size
                total += float(loss_sum.detach())
                local += c
                for k, v in ex.items():  # sums, but a `_max` extra is the largest of its micro-batches'
                    extras[k] = max(extras.get(k, v), v) if k.endswith("_max") else extras.get(k, 0.0) + v
            else:
                loss = _dummy_loss(model)
            loss.backward()
    return Accumulated(total, local, global_count, extras, len(groups))


def clip_grad_norm(params: list[Any], max_norm: float) -> float:
    """The pre-clip gradient norm as a float; with sharded (DTensor) gradients the norm is reduced over ranks."""
    norm = torch.nn.utils.clip_grad_norm_(params, max_norm)
    full = getattr(norm, "full_tensor", None)  # a DTensor (FSDP2) gathers its shards; a plain tensor is whole
    return float(full() if full is not None else norm)
