"""`python -m coa_trainer convert-checkpoint FILE|DIR …`: an older `step-NNNNNN.pt` checkpoint (a torch.save pickle)
rewritten once as `step-NNNNNN.safetensors` (model/checkpoint.py), then removed.

The old file is read with torch's weights-only unpickler, which builds tensors, numbers, strings and containers and
refuses any other global — a pickle that asks for `os.system` (or anything else) is an error, never a call. The only
globals allowed beyond torch's own are the three that rebuild the numpy array of the RNG state (numpy's
`_reconstruct`, `ndarray` and the uint32 dtype: data constructors). Nothing is converted implicitly: a resume that
meets an old checkpoint stops and names this command. Sharded `.dcp/` checkpoints are not converted (their metadata
is a plain pickle, read by DCP without any such guard)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch
from pydantic import BaseModel, ConfigDict, ValidationError

from .checkpoint import LEGACY, CheckpointError, NumpyRng, RngState, Unusable, header, read_checkpoint
from .statefile import write_state_file
from ..base.options import ConvertOptions

OLD_KEYS = ("stage", "step", "cursor", "model", "optimizer", "scheduler", "rng")


class LegacyRng(BaseModel):
    """The older checkpoints' RNG state: numpy's as the tuple np.random.get_state() returns (its key an ndarray)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    python: tuple[int, tuple[int, ...], float | None]
    numpy: tuple[Any, ...]
    torch: torch.Tensor
    cuda: list[torch.Tensor] | None = None

    def converted(self) -> RngState:
        return RngState(python=self.python, numpy=NumpyRng.of(self.numpy), torch=self.torch, cuda=self.cuda)


class LegacyCheckpoint(BaseModel):
    """What an older `step-NNNNNN.pt` held: where its stage was and the state dicts (torch's own formats)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    stage: object  # written back as its str()
    step: int
    cursor: int
    model: dict[str, Any]
    optimizer: dict[str, Any]
    scheduler: dict[str, Any]
    rng: LegacyRng
    master: list[torch.Tensor] | None = None
    extra: dict[str, Any] | None = None


def _numpy_globals() -> list[Any]:
    from numpy._core.multiarray import _reconstruct

    return [
        _reconstruct,
        (_reconstruct, "numpy.core.multiarray._reconstruct"),
        np.ndarray,
        np.dtype,
        type(np.dtype(np.uint32)),
    ]


def read_legacy(path: Path) -> LegacyCheckpoint:
    """The old checkpoint's dict, read as data only (CheckpointError when it is anything else)."""
    import pickle

    try:
        with torch.serialization.safe_globals(_numpy_globals()):
            state = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        first = str(e).strip().splitlines()[-1] if str(e).strip() else ""
        raise CheckpointError(
            f"{path} is not a checkpoint this trainer wrote: reading it as data was refused "
            f"({first[:300]}); nothing in it was run. Delete it."
        ) from None
    except (OSError, RuntimeError, EOFError, ValueError) as e:
        raise CheckpointError(f"{path} cannot be read ({type(e).__name__}: {e}); delete it") from None
    if not isinstance(state, dict) or any(k not in state for k in OLD_KEYS):
        raise CheckpointError(
            f"{path} is not a checkpoint this trainer wrote (it lacks "
            f"{', '.join(k for k in OLD_KEYS if not isinstance(state, dict) or k not in state)})"
        )
    try:
        return LegacyCheckpoint.model_validate(state)
    except ValidationError as e:
        raise CheckpointError(
            f"{path} is not a checkpoint this trainer wrote ({' '.join(str(e).split())[:300]})"
        ) from None


def convert(path: Path) -> Path:
    """Write the new checkpoint beside the old one, read it back whole, then remove the old one."""
    m = LEGACY.match(path.name)
    if m is None or path.suffix != ".pt" or not path.is_file():
        raise CheckpointError(
            f"{path} is not an older single-file checkpoint (step-NNNNNN.pt)"
            + ("; sharded .dcp checkpoints cannot be converted" if path.suffix == ".dcp" else "")
        )
    old = read_legacy(path)
    if old.step != int(m.group(1)):
        raise CheckpointError(f"{path} says step {old.step}; its name says {int(m.group(1))}")
    tree = {
        "model": old.model,
        "optimizer": old.optimizer,
        "scheduler": old.scheduler,
        "rng": old.rng.converted().tree(),
        "master": old.master,
        "extra": old.extra or {},
    }
    new = path.with_name(f"step-{old.step:06d}.safetensors")
    write_state_file(new, tree, header(str(old.stage), old.step, old.cursor))
    try:
        read_checkpoint(new)
    except Unusable as e:
        new.unlink(missing_ok=True)
        raise CheckpointError(
            f"{path}: the converted checkpoint does not read back ({e}); the old one is kept"
        ) from None
    path.unlink()
    return new


def convert_command(opts: ConvertOptions) -> int:
    targets: list[Path] = []
    for p in opts.paths:
        targets += sorted(q for q in p.iterdir() if LEGACY.match(q.name) and q.suffix == ".pt") if p.is_dir() else [p]
    if not targets:
        print("coa_trainer: no step-NNNNNN.pt checkpoint to convert", file=sys.stderr)
        return 2
    status = 0
    for path in targets:
        try:
            print(f"{path} → {convert(path)}")
        except CheckpointError as e:
            print(f"coa_trainer: {e}", file=sys.stderr)
            status = e.exit_status
    return status
