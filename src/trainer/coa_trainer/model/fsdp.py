"""FSDP2 (`torch.distributed.fsdp.fully_shard`) for `distributed.strategy: fsdp` under torchrun.

Sharding: every decoder layer (the model's `_no_split_modules` classes) is its own FSDP unit, and the trainer's
TokenScorer is the root unit (embeddings, final norm, LM head — tied or not — with it), the layout of PyTorch's
FSDP2 examples and torchtitan (pytorch/torchtitan, torchtitan/models/llama3/infra/parallelize.py, apply_fsdp).
Parameters, gradients and AdamW state are sharded over the ranks; a `bfloat16` model keeps fp32 sharded parameters
as the master weights and computes in bf16 (MixedPrecisionPolicy param_dtype bf16, gradients reduce-scattered in
fp32).

Generation (rollouts, evaluation) runs on gathered parameters: `gathered()` all-gathers every unit once (bf16 under
the policy) and keeps them unsharded until the block ends, so a decode step is not one all-gather per layer per
token; the block frees them again before training.

Checkpoints: `save_sharded` / `load_sharded` write and read model + optimiser shards with
`torch.distributed.checkpoint` (each rank writes its own shards; nothing is gathered on rank 0), plus a small
`meta.pt` (step, cursor, schedule, extra state) and per-rank RNG files, into `step-NNNNNN.dcp/` made atomically
(written as `.step-NNNNNN.dcp.tmp/`, renamed once every rank has finished). All ranks must see the same directory
(one machine, or a shared filesystem across nodes). Final stage outputs stay ordinary HF directories:
`full_state_dict` gathers the weights to rank 0's CPU at the end of a stage, for that export only."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from .family import base_model


def decoder_layers(lm: Any) -> list[torch.nn.Module]:
    """The model's repeated blocks: modules whose class is in HF's `_no_split_modules`."""
    base = base_model(lm)
    names = set(getattr(base, "_no_split_modules", None) or [])
    layers = [m for m in base.modules() if type(m).__name__ in names]
    if not layers:
        raise RuntimeError(f"{type(base).__name__} names no decoder layer class (_no_split_modules): "
                           "FSDP has nothing to shard per layer")
    return layers


def shard(scorer: Any, param_dtype: torch.dtype | None) -> Any:
    """fully_shard each decoder layer, then the root (the TokenScorer). In place; returns the scorer."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    mp = MixedPrecisionPolicy(param_dtype=param_dtype, reduce_dtype=torch.float32)
    for layer in decoder_layers(scorer.lm):
        fully_shard(layer, mp_policy=mp)
    fully_shard(scorer, mp_policy=mp)
    # FSDP2 initialises lazily on the root's first forward; generation calls the inner model, so make that forward
    # happen now (two tokens, no gradient) rather than let a layer initialise itself as a root
    dev = next(iter(scorer.parameters())).device
    with torch.no_grad():
        scorer(torch.zeros((1, 2), dtype=torch.long, device=dev))
    # the root keeps its parameters unsharded after a forward (FSDP2's default for the root): reshard, so that
    # parameters() — what the optimiser is built on — are the sharded DTensors
    scorer.reshard()
    return scorer


def is_sharded(model: Any) -> bool:
    from torch.distributed.fsdp import FSDPModule

    return isinstance(model, FSDPModule)


@contextlib.contextmanager
def gathered(model: Any) -> Iterator[None]:
    """Every unit's full parameters for the block (generation on the plain inner model); a no-op unless sharded.
    Collective: every rank must enter it."""
    if not is_sharded(model):
        yield
        return
    from torch.distributed.fsdp import FSDPModule

    units = [m for m in model.modules() if isinstance(m, FSDPModule)]
    layers = [m for m in units if m is not model]
    for m in layers:
        m.set_reshard_after_forward(False, recurse=False)
    for m in units:
        m.unshard()
    try:
        yield
    finally:
        for m in units:
            m.reshard()
        for m in layers:
            m.set_reshard_after_forward(True, recurse=False)


def full_state_dict(model: Any) -> dict[str, torch.Tensor]:
    """The whole model's weights on rank 0's CPU (empty elsewhere), gathered unit by unit: final export only."""
    from torch.distributed.checkpoint.state_dict import (
        StateDictOptions,
        get_model_state_dict,
    )

    return get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))


# ------------------------------------------------------------------------------------------------ checkpoints

def _states(model: Any, opt: Any) -> tuple[dict, dict]:
    from torch.distributed.checkpoint.state_dict import get_state_dict

    return get_state_dict(model, opt)


def save_sharded(directory: Path, step: int, cursor: int, model: Any, opt: Any, sched: Any, stage: str,
                 extra: dict | None = None) -> Path:
    """Every rank calls this. Returns the checkpoint directory."""
    import torch.distributed.checkpoint as dcp

    from ..model.checkpoint import rng_state

    rank = dist.get_rank()
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / f"step-{step:06d}.dcp"
    tmp = directory / f".step-{step:06d}.dcp.tmp"
    if rank == 0:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
    dist.barrier()
    msd, osd = _states(model, opt)
    dcp.save({"model": msd, "optimizer": osd}, checkpoint_id=str(tmp))
    torch.save(rng_state(), tmp / f"rng-{rank}.pt")
    if rank == 0:
        torch.save({"version": 1, "stage": stage, "step": step, "cursor": cursor, "scheduler": sched.state_dict(),
                    "extra": extra or {}, "world_size": dist.get_world_size()}, tmp / "meta.pt")
    dist.barrier()
    if rank == 0:
        for f in tmp.iterdir():
            with open(f, "rb") as fh:
                os.fsync(fh.fileno())
        shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)
    dist.barrier()
    return final


def load_sharded(path: Path, model: Any, opt: Any, sched: Any) -> dict:
    """Every rank calls this with the same world size the checkpoint was written with."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import set_state_dict

    from ..model.checkpoint import set_rng_state

    meta = torch.load(path / "meta.pt", map_location="cpu", weights_only=False)
    ws = dist.get_world_size()
    if meta["world_size"] != ws:
        raise RuntimeError(f"checkpoint {path} was written by {meta['world_size']} processes; resume it with the "
                           f"same number (this run has {ws})")
    msd, osd = _states(model, opt)
    state = {"model": msd, "optimizer": osd}
    dcp.load(state, checkpoint_id=str(path))
    set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optimizer"])
    sched.load_state_dict(meta["scheduler"])
    set_rng_state(torch.load(path / f"rng-{dist.get_rank()}.pt", map_location="cpu", weights_only=False))
    return meta
