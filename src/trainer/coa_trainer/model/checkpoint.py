"""Resumable checkpoints that carry no code: `stages/<label>/checkpoints/step-NNNNNN.safetensors`, one file per
checkpoint (model/statefile.py: tensors as safetensors data, everything else as JSON), written to a temporary name,
fsynced, then renamed — a crash leaves either the previous checkpoint or the new one, never half of one. FSDP2 writes
`step-NNNNNN.sharded/` instead (model/fsdp.py), one such file per rank.

Resuming takes the newest checkpoint that reads back whole (every tensor's checksum, the header, the shapes this
model and optimiser expect); a damaged one is skipped with a warning naming it and why, and moved aside as
`….corrupt` so that pruning never keeps it in place of a good one. A checkpoint of the older pickle format (`.pt`,
`.dcp/`) is never read implicitly: the resume stops and says how to convert it (`convert-checkpoint`, which reads it
with torch's weights-only unpickler: data only, a file that asks to run anything is refused)."""

from __future__ import annotations

import random
import re
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from pydantic import BaseModel, ConfigDict, ValidationError

from ..base.errors import CoaError
from ..model.load import trainable_state, unwrap
from ..model.optim import load_master_state, master_state
from ..model.statefile import StateFileError, read_state_file, write_state_file

FORMAT, VERSION = "coa-checkpoint", 2
NAME = re.compile(r"^step-(\d{6,})\.(safetensors|sharded)$")  # .sharded: a directory of per-rank files (FSDP2)
LEGACY = re.compile(r"^step-(\d{6,})\.(pt|dcp)$")  # torch.save pickles and DCP directories (pickled metadata)


class CheckpointError(CoaError):
    """No checkpoint the stage can resume from safely."""

    def __init__(self, message: str):
        super().__init__(message, "bad_checkpoint")


class Unusable(Exception):
    """This one checkpoint cannot be resumed from (why, in words); an older one may still be."""


@dataclass
class CheckpointState:
    """A checkpoint read back: where its stage was (stage, step, cursor: the next example of the data stream) and
    what it holds — the trainable weights, the optimiser's and schedule's state dicts (torch's own formats), the RNG
    state, the fp32 master weights, the stage's own state (`extra`) — with the header's other fields (an FSDP rank
    file's world_size and rank). A part its file does not hold is empty (an FSDP rank file holds no schedule)."""

    stage: str | None
    step: int
    cursor: int
    model: dict[str, Any] = field(default_factory=dict)
    optimizer: dict[str, Any] = field(default_factory=dict)
    scheduler: dict[str, Any] = field(default_factory=dict)
    rng: dict[str, Any] = field(default_factory=dict)
    master: list[torch.Tensor] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    header: dict[str, object] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------------- RNG state


class NumpyRng(BaseModel):
    """numpy's global generator state (`np.random.get_state()`), its key array as a tensor so the state file stores it
    as tensor data."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)
    kind: str
    key: torch.Tensor
    pos: int
    has_gauss: int
    cached_gaussian: float

    @classmethod
    def of(cls, state: Iterable[Any]) -> NumpyRng:
        """From the tuple numpy's get_state() returns (kind, key array, pos, has_gauss, cached gaussian)."""
        kind, key, pos, has_gauss, cached = state
        return cls(
            kind=str(kind),
            key=torch.from_numpy(np.asarray(key, dtype=np.uint32)),
            pos=int(pos),
            has_gauss=int(has_gauss),
            cached_gaussian=float(cached),
        )

    def tree(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "key": self.key,
            "pos": self.pos,
            "has_gauss": self.has_gauss,
            "cached_gaussian": self.cached_gaussian,
        }


class RngState(BaseModel):
    """Every generator a step draws from: Python's, numpy's, torch's CPU one and (when there is one) each CUDA
    device's. Read from a checkpoint's tree once (`model_validate`); written back as the same tree (`tree()`)."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)
    python: tuple[int, tuple[int, ...], float | None]
    numpy: NumpyRng
    torch: torch.Tensor
    cuda: list[torch.Tensor] | None = None

    @classmethod
    def capture(cls) -> RngState:
        return cls(
            python=random.getstate(),
            numpy=NumpyRng.of(np.random.get_state()),
            torch=torch.get_rng_state(),
            cuda=list(torch.cuda.get_rng_state_all()) if torch.cuda.is_available() else None,
        )

    def tree(self) -> dict[str, object]:
        """As tensors and plain values, in the order checkpoints have always held them (cuda only when present)."""
        out: dict[str, object] = {"python": self.python, "numpy": self.numpy.tree(), "torch": self.torch}
        return out if self.cuda is None else {**out, "cuda": self.cuda}

    def restore(self) -> None:
        random.setstate(self.python)
        n = self.numpy
        np.random.set_state((n.kind, n.key.numpy().astype(np.uint32), n.pos, n.has_gauss, n.cached_gaussian))
        torch.set_rng_state(self.torch)
        if self.cuda is not None and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(self.cuda)


def rng_state() -> dict:
    """Every generator a step draws from, as tensors and plain values (a checkpoint's `rng`)."""
    return RngState.capture().tree()


def set_rng_state(state: dict) -> None:
    """The generators set from a checkpoint's `rng` (pydantic's ValidationError, a ValueError, when it is not one)."""
    RngState.model_validate(state).restore()


# ---------------------------------------------------------------------------------------------------- one file


def save_checkpoint(
    directory: Path,
    step: int,
    cursor: int,
    model: torch.nn.Module,
    opt: torch.optim.Optimizer,
    sched: torch.optim.lr_scheduler.LRScheduler,
    stage: str,
    extra: dict | None = None,
) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    tree = {
        "model": trainable_state(model),
        "optimizer": opt.state_dict(),
        "scheduler": sched.state_dict(),
        "rng": rng_state(),
        "master": master_state(opt),
        "extra": extra or {},
    }
    return write_state_file(directory / f"step-{step:06d}.safetensors", tree, header(stage, step, cursor))


def header(stage: str, step: int, cursor: int, **more: object) -> dict:
    return {"format": FORMAT, "version": VERSION, "stage": stage, "step": step, "cursor": cursor, **more}


def read_checkpoint(path: Path) -> CheckpointState:
    """The checkpoint's state ({stage, step, cursor, model, optimizer, scheduler, rng, master, extra}) or Unusable."""
    try:
        info, tree = read_state_file(path)
    except StateFileError as e:
        raise Unusable(str(e)) from None
    return checked_state(path, info, tree, ("model", "optimizer", "scheduler", "rng", "master", "extra"))


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def checked_state(path: Path, info: dict, tree: object, keys: tuple[str, ...]) -> CheckpointState:
    """The header and tree of a checkpoint file as one state, after checking what every resume relies on."""
    if info.get("format") != FORMAT or info.get("version") != VERSION:
        raise Unusable(f"it is not a {FORMAT} version {VERSION} file")
    m = NAME.match(path.name) or NAME.match(path.parent.name)
    step, cursor = _count(info.get("step")), _count(info.get("cursor"))
    for key, value in (("step", step), ("cursor", cursor)):
        if value is None:
            raise Unusable(f"its {key} is not a count")
    assert step is not None and cursor is not None
    if m and int(m.group(1)) != step:
        raise Unusable(f"it says step {step} but is named for step {int(m.group(1))}")
    if not isinstance(tree, dict) or any(k not in tree for k in keys):
        raise Unusable(f"it lacks {', '.join(k for k in keys if not isinstance(tree, dict) or k not in tree)}")
    extra = tree.get("extra", {})
    if not isinstance(extra, dict):
        raise Unusable("its stage state is not a dictionary")
    stage = info.get("stage")
    return CheckpointState(
        stage=stage if isinstance(stage, str) else None,
        step=step,
        cursor=cursor,
        model=tree.get("model", {}),
        optimizer=tree.get("optimizer", {}),
        scheduler=tree.get("scheduler", {}),
        rng=tree.get("rng", {}),
        master=tree.get("master"),
        extra=extra,
        header={k: v for k, v in info.items() if k not in ("format", "version", "stage", "step", "cursor")},
    )


class OptimizerGroup(BaseModel):
    """One of a saved optimiser state's param_groups: the ids of its parameters (and its settings, kept as they are)."""

    model_config = ConfigDict(extra="allow")
    params: list[object] = []


class OptimizerTree(BaseModel):
    """A saved optimiser state (torch's `state_dict()` format) as far as the fit check reads it: the per-parameter
    state by parameter id, and the groups."""

    state: dict[object, object]
    param_groups: list[OptimizerGroup]


def check_fits(state: CheckpointState, model: torch.nn.Module, opt: torch.optim.Optimizer) -> None:
    """Unusable unless the weights are exactly this model's trainable ones (names, shapes, dtypes) and the optimiser
    state has this optimiser's groups — checked before anything is loaded, so a bad file changes nothing."""
    m = unwrap(model)
    want = {n: p for n, p in m.named_parameters() if p.requires_grad}
    have = state.model
    if not isinstance(have, dict) or set(have) != set(want):
        extra, missing = sorted(set(have) - set(want))[:3], sorted(set(want) - set(have))[:3]
        raise Unusable(f"its weights are not this model's (unexpected {extra}, missing {missing})")
    for n, p in want.items():
        t = have[n]
        if not isinstance(t, torch.Tensor) or t.shape != p.shape or t.dtype != p.dtype:
            raise Unusable(f"its weight {n} is {_describe(t)}, the model's {tuple(p.shape)} {p.dtype}")
    try:
        osd = OptimizerTree.model_validate(state.optimizer)
    except ValidationError:
        raise Unusable("its optimiser state is not this optimiser's") from None
    own_groups = [g["params"] for g in opt.param_groups]  # torch's own param groups: dicts by its API
    if [len(g.params) for g in osd.param_groups] != [len(g) for g in own_groups]:
        raise Unusable("its optimiser state is not this optimiser's")
    params = [p for g in own_groups for p in g]
    ids = [i for g in osd.param_groups for i in g.params]
    for i, s in osd.state.items():
        if i not in ids or not isinstance(s, dict):
            raise Unusable(f"its optimiser state names parameter {i!r}, which no group holds")
        p = params[ids.index(i)]
        for k, v in s.items():
            if isinstance(v, torch.Tensor) and v.dim() > 0 and v.shape != p.shape:
                raise Unusable(f"its optimiser state {k} of parameter {i} is {_describe(v)}, not {tuple(p.shape)}")
    masters = state.master
    pairs = getattr(opt, "coa_master_pairs", None)
    if pairs is not None and (
        not isinstance(masters, list)
        or len(masters) != len(pairs)
        or any(not isinstance(t, torch.Tensor) or t.shape != mm.shape for t, (_, mm) in zip(masters, pairs))
    ):
        raise Unusable("its fp32 master weights are not this model's")


def _describe(t: object) -> str:
    return f"{tuple(t.shape)} {t.dtype}" if isinstance(t, torch.Tensor) else type(t).__name__


def load_checkpoint(
    path: Path, model: torch.nn.Module, opt: torch.optim.Optimizer, sched: torch.optim.lr_scheduler.LRScheduler
) -> CheckpointState:
    """Read, check, then load the checkpoint into model, optimiser, schedule and the RNGs; Unusable if it cannot be."""
    state = read_checkpoint(path)
    check_fits(state, model, opt)
    try:
        unwrap(model).load_state_dict(state.model, strict=False)
        opt.load_state_dict(state.optimizer)
        load_master_state(opt, state.master)
        sched.load_state_dict(state.scheduler)
        set_rng_state(state.rng)
    except (KeyError, TypeError, ValueError, RuntimeError) as e:  # a well-formed file with wrong contents
        raise Unusable(f"it does not load: {type(e).__name__}: {e}") from None
    return state


# ---------------------------------------------------------------------------------------------------- resuming


def checkpoints(directory: Path) -> list[tuple[int, Path, bool]]:
    """(step, path, legacy) of every checkpoint in `directory`, newest first."""
    if not directory.is_dir():
        return []
    found = []
    for p in directory.iterdir():
        if m := NAME.match(p.name):
            found.append((int(m.group(1)), p, False))
        elif m := LEGACY.match(p.name):
            found.append((int(m.group(1)), p, True))
    return sorted(found, key=lambda x: (x[0], not x[2]), reverse=True)


def latest_checkpoint(directory: Path) -> Path | None:
    found = checkpoints(directory)
    return found[0][1] if found else None


def legacy_message(path: Path) -> str:
    if path.suffix == ".dcp":
        return (
            f"{path} is a sharded checkpoint in the older DCP format, whose metadata is a pickle (reading it could "
            "run code); it is not read. Delete it to resume from an earlier checkpoint, or start the stage over "
            "without --resume"
        )
    return (
        f"{path} is a checkpoint in the older pickle format, which is not read implicitly (unpickling a file can "
        f"run code). If this run is yours, convert it once: `python -m coa_trainer convert-checkpoint {path}` "
        "(reads data only and refuses a file that asks to run anything), then resume again; otherwise delete it"
    )


def resume(
    directory: Path, load: Callable[[Path], CheckpointState], agree: Callable[[bool], bool], warn: Callable[[str], None]
) -> tuple[CheckpointState | None, list[Path]]:
    """The state of the newest checkpoint every rank could load, and the damaged ones skipped on the way (newest
    first). `load` reads a checkpoint into the model (raising Unusable), `agree(ok)` is True when it was ok on every
    rank. None when there is no checkpoint; CheckpointError when there are some but none can be used."""
    found = checkpoints(directory)
    skipped: list[Path] = []
    reasons = []
    for _, path, legacy in found:
        if legacy:
            raise CheckpointError(legacy_message(path))
        try:
            state, why = load(path), ""
        except Unusable as e:
            state, why = None, str(e)
        if agree(state is not None):
            return state, skipped
        why = why or "another process could not read its part"
        reasons.append(f"{path.name}: {why}")
        skipped.append(path)
        warn(f"checkpoint {path} cannot be used ({why}); trying the one before it")
    if found:
        raise CheckpointError(
            f"no checkpoint in {directory} can be resumed from ({'; '.join(reasons)}); start the "
            "stage over without --resume"
        )
    return None, skipped


def set_aside(path: Path) -> Path:
    """A damaged checkpoint out of the way (kept for inspection, never pruned in place of a good one)."""
    target = path.with_name(path.name + ".corrupt")
    if target.is_dir():
        shutil.rmtree(target, ignore_errors=True)
    path.replace(target)
    return target


def prune_checkpoints(directory: Path, keep: int = 2) -> None:
    found = sorted((int(m.group(1)), p) for p in directory.iterdir() if (m := NAME.match(p.name)))
    for _, p in found[:-keep]:
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)
