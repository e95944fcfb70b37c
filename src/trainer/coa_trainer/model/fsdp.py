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

Checkpoints: `save_sharded` / `load_sharded` write and read each rank's own model + optimiser shards and RNG state
as one state file per rank (`rank-NNNNN.safetensors`, model/statefile.py: safetensors data and JSON, no pickle;
nothing is gathered on rank 0; rank 0's file also holds the schedule and the stage's state) into
`step-NNNNNN.sharded/`, made atomically (written as `.step-NNNNNN.sharded.tmp/`, renamed once every rank has
finished). Not torch.distributed.checkpoint: its metadata file and its non-tensor entries are pickles (read with
`pickle.load` and `torch.load(weights_only=False)`), so reading one runs whatever it says. A checkpoint is resumed by
the same number of processes that wrote it. All ranks must see the same directory (one machine, or a shared
filesystem across nodes). Final stage outputs stay ordinary HF directories:
`full_state_dict` gathers the weights to rank 0's CPU at the end of a stage, for that export only."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist

from .family import base_model

if TYPE_CHECKING:
    from .checkpoint import CheckpointState
    from .scoring import TokenScorer


def decoder_layers(lm: torch.nn.Module) -> list[torch.nn.Module]:
    """The model's repeated blocks: modules whose class is in HF's `_no_split_modules`."""
    base = base_model(lm)
    names = set(getattr(base, "_no_split_modules", None) or [])
    layers = [m for m in base.modules() if type(m).__name__ in names]
    if not layers:
        raise RuntimeError(
            f"{type(base).__name__} names no decoder layer class (_no_split_modules): "
            "FSDP has nothing to shard per layer"
        )
    return layers


def shard(scorer: TokenScorer, param_dtype: torch.dtype | None) -> TokenScorer:
    """fully_shard each decoder layer, then the root (the TokenScorer). In place; returns the scorer."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    mp = MixedPrecisionPolicy(param_dtype=param_dtype, reduce_dtype=torch.float32)
    for layer in decoder_layers(scorer.lm):
        fully_shard(layer, mp_policy=mp)
    root = fully_shard(scorer, mp_policy=mp)
    # FSDP2 initialises lazily on the root's first forward; generation calls the inner model, so make that forward
    # happen now (two tokens, no gradient) rather than let a layer initialise itself as a root
    dev = next(iter(scorer.parameters())).device
    with torch.no_grad():
        scorer(torch.zeros((1, 2), dtype=torch.long, device=dev))
    # the root keeps its parameters unsharded after a forward (FSDP2's default for the root): reshard, so that
    # parameters() — what the optimiser is built on — are the sharded DTensors
    root.reshard()
    return scorer


def is_sharded(model: torch.nn.Module) -> bool:
    from torch.distributed.fsdp import FSDPModule

    return isinstance(model, FSDPModule)


@contextlib.contextmanager
def gathered(model: torch.nn.Module) -> Iterator[None]:
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


def full_state_dict(model: torch.nn.Module) -> dict[str, Any]:
    """The whole model's weights on rank 0's CPU (empty elsewhere), gathered unit by unit: final export only."""
    from torch.distributed.checkpoint.state_dict import (
        StateDictOptions,
        get_model_state_dict,
    )

    return get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))


# ------------------------------------------------------------------------------------------------ checkpoints


def _states(model: torch.nn.Module, opt: torch.optim.Optimizer) -> tuple[dict, dict]:
    from torch.distributed.checkpoint.state_dict import get_state_dict

    return get_state_dict(model, opt)


def save_sharded(
    directory: Path,
    step: int,
    cursor: int,
    model: torch.nn.Module,
    opt: torch.optim.Optimizer,
    sched: torch.optim.lr_scheduler.LRScheduler,
    stage: str,
    extra: dict | None = None,
) -> Path:
    """Every rank calls this: its own shards of the model and optimiser, and its RNG state, as one state file
    (model/statefile.py); rank 0's also holds the schedule and the stage's state. Returns the checkpoint directory."""
    from ..model.checkpoint import header, rng_state
    from ..model.statefile import fsync_dir, write_state_file

    rank = dist.get_rank()
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / f"step-{step:06d}.sharded"
    tmp = directory / f".step-{step:06d}.sharded.tmp"
    if rank == 0:
        _remove(tmp)
        tmp.mkdir()
    dist.barrier()
    msd, osd = _states(model, opt)
    tree = {"model": msd, "optimizer": osd, "rng": rng_state()}
    if rank == 0:
        tree.update(scheduler=sched.state_dict(), extra=extra or {})
    write_state_file(
        tmp / rank_file(rank),
        tree,
        header(stage, step, cursor, world_size=dist.get_world_size(), rank=rank),
        atomic=False,
    )
    dist.barrier()
    if rank == 0:
        fsync_dir(tmp)
        _remove(final)
        os.replace(tmp, final)
        fsync_dir(directory)
    dist.barrier()
    return final


def rank_file(rank: int) -> str:
    return f"rank-{rank:05d}.safetensors"


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


def load_sharded(
    path: Path, model: torch.nn.Module, opt: torch.optim.Optimizer, sched: torch.optim.lr_scheduler.LRScheduler
) -> CheckpointState:
    """Every rank calls this with the number of processes the checkpoint was written by: reads its own file, checks
    that every shard has the shape this rank holds, then copies them in (Unusable, changing nothing, if any does
    not fit)."""
    from torch.distributed.checkpoint.state_dict import set_state_dict

    from ..model.checkpoint import Unusable, checked_state, set_rng_state
    from ..model.statefile import StateFileError, read_state_file, read_state_header

    rank, ws = dist.get_rank(), dist.get_world_size()
    own = path / rank_file(rank)
    if not own.is_file():
        raise Unusable(f"it has no file for process {rank} (written by fewer processes?)")
    try:
        info, tree = read_state_file(own)
        first, shared = read_state_header(path / rank_file(0), ("scheduler", "extra")) if rank else (info, tree)
    except StateFileError as e:
        raise Unusable(str(e)) from None
    state = checked_state(own, info, tree, ("model", "optimizer", "rng"))
    common = checked_state(path / rank_file(0), first, shared, ("scheduler", "extra"))
    if info.get("world_size") != ws or info.get("rank") != rank or common.step != state.step:
        raise Unusable(
            f"it was written by {info.get('world_size')} processes; resume it with the same number (this run has {ws})"
        )
    msd, osd = _states(model, opt)
    parts = ((msd, state.model, "model"), (osd, state.optimizer, "optimizer"))
    for target, loaded, where in parts:  # every shape checked before anything changes
        _fill(target, loaded, where, apply=False)
    model_sd, optim_sd = (_fill(target, loaded, where, apply=True) for target, loaded, where in parts)
    assert isinstance(model_sd, dict) and isinstance(optim_sd, dict)  # the targets' structure
    set_state_dict(model, opt, model_state_dict=model_sd, optim_state_dict=optim_sd)
    sched.load_state_dict(common.scheduler)
    set_rng_state(state.rng)
    return dataclasses.replace(state, scheduler=common.scheduler, extra=common.extra)


def _fill(target: object, loaded: object, where: str, apply: bool) -> object:
    """`target` (this rank's state dicts, DTensors and all) with `loaded`'s values: tensors copied into the target's
    own (local) tensors, plain values taken over. Unusable where the two differ in structure or shape."""
    from ..model.checkpoint import Unusable

    if isinstance(target, torch.Tensor):
        to_local = getattr(target, "to_local", None)  # a DTensor's shard on this rank; a plain tensor is whole
        local = to_local() if to_local is not None else target
        if not isinstance(loaded, torch.Tensor) or loaded.shape != local.shape or loaded.dtype != local.dtype:
            got = f"{tuple(loaded.shape)} {loaded.dtype}" if isinstance(loaded, torch.Tensor) else type(loaded).__name__
            raise Unusable(f"its {where or 'state'} is {got}, this process holds {tuple(local.shape)} {local.dtype}")
        if apply:
            with torch.no_grad():
                local.copy_(loaded)
        return target
    if isinstance(target, dict):
        if not isinstance(loaded, dict) or set(loaded) != set(target):
            raise Unusable(f"its {where or 'state'} does not have this model's entries")
        return {k: _fill(v, loaded[k], f"{where}.{k}" if where else str(k), apply) for k, v in target.items()}
    if isinstance(target, (list, tuple)) and any(isinstance(v, (torch.Tensor, dict, list, tuple)) for v in target):
        if not isinstance(loaded, (list, tuple)) or len(loaded) != len(target):
            raise Unusable(f"its {where} does not have this model's entries")
        return type(target)(_fill(v, w, f"{where}.{i}", apply) for i, (v, w) in enumerate(zip(target, loaded)))
    return loaded
