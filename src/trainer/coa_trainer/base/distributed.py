"""torchrun/DDP plumbing (gloo on CPU, nccl on CUDA). With WORLD_SIZE unset everything is a no-op."""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass
class DistInfo:
    world_size: int = 1
    rank: int = 0
    local_rank: int = 0
    active: bool = False

    @classmethod
    def from_env(cls) -> "DistInfo":
        return cls(
            int(os.environ.get("WORLD_SIZE", "1")),
            int(os.environ.get("RANK", "0")),
            int(os.environ.get("LOCAL_RANK", "0")),
        )

    def init(self, device: torch.device) -> None:
        if self.world_size > 1 and not dist.is_initialized():
            dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
            self.active = True
            from ..base.lifecycle import skip_finalization_at_exit

            skip_finalization_at_exit()
        self.device = device

    def wrap(self, model: torch.nn.Module) -> torch.nn.Module:
        if not self.active:
            return model
        from torch.nn.parallel import DistributedDataParallel

        ids = [self.device.index] if self.device.type == "cuda" else None
        return DistributedDataParallel(model, device_ids=ids)

    def barrier(self) -> None:
        if self.active:
            dist.barrier()

    def all_reduce_sum(self, x: float) -> float:
        if not self.active:
            return x
        t = torch.tensor([x], dtype=torch.float64, device=self._comm_device())
        dist.all_reduce(t)
        return float(t.item())

    def all_reduce_max(self, x: int | float) -> int | float:
        """The largest x over the ranks, of x's own type (ints exact to 2**53 through float64)."""
        if not self.active:
            return x
        t = torch.tensor([x], dtype=torch.float64, device=self._comm_device())
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return type(x)(t.item())

    def any(self, flag: bool) -> bool:
        """True on every rank when it is true on one: decisions that start collectives (a checkpoint, a stop) must
        be the same everywhere, or the ranks wait for each other forever."""
        return self.all_reduce_max(int(flag)) > 0

    def all_reduce_dict(self, d: dict[str, float]) -> dict[str, float]:
        """Sums over the ranks, except keys ending in `_max`: a largest value (the rule micro-batches fold by too,
        algos/microbatch.accumulate), so a per-rank maximum is never reported as the sum of the ranks' maxima."""
        if not self.active:
            return d
        out: dict[str, float] = {}
        for op, keys in (
            (dist.ReduceOp.SUM, sorted(k for k in d if not k.endswith("_max"))),
            (dist.ReduceOp.MAX, sorted(k for k in d if k.endswith("_max"))),
        ):
            if keys:
                t = torch.tensor([d[k] for k in keys], dtype=torch.float64, device=self._comm_device())
                dist.all_reduce(t, op=op)
                out.update(zip(keys, t.tolist()))
        return out

    def _comm_device(self) -> torch.device:
        return self.device if self.device.type == "cuda" else torch.device("cpu")

    def shutdown(self) -> None:
        if self.active and dist.is_initialized():
            dist.destroy_process_group()
            self.active = False
