"""torchrun/DDP plumbing (gloo on CPU, nccl on CUDA). With WORLD_SIZE unset everything is a no-op."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

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
        return cls(int(os.environ.get("WORLD_SIZE", "1")), int(os.environ.get("RANK", "0")),
                   int(os.environ.get("LOCAL_RANK", "0")))

    def init(self, device: torch.device) -> None:
        if self.world_size > 1 and not dist.is_initialized():
            dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
            self.active = True
            global _joined_a_group
            _joined_a_group = True
        self.device = device

    def wrap(self, model: Any) -> Any:
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

    def all_reduce_max(self, x: int) -> int:
        if not self.active:
            return x
        t = torch.tensor([x], dtype=torch.int64, device=self._comm_device())
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return int(t.item())

    def all_reduce_dict(self, d: dict[str, float]) -> dict[str, float]:
        if not self.active:
            return d
        keys = sorted(d)
        t = torch.tensor([d[k] for k in keys], dtype=torch.float64, device=self._comm_device())
        dist.all_reduce(t)
        return dict(zip(keys, t.tolist()))

    def _comm_device(self) -> torch.device:
        return self.device if self.device.type == "cuda" else torch.device("cpu")

    def shutdown(self) -> None:
        if self.active and dist.is_initialized():
            dist.destroy_process_group()
            self.active = False


# Set once this process has joined a process group (see run_and_exit).
_joined_a_group = False


def run_and_exit(main: Callable[[], None]) -> None:
    """Runs `main` and exits with its status. A process that joined a process group ends with os._exit once its output
    is flushed, skipping the interpreter's finalization.

    Why: gloo's worker threads release a finished collective's work object some time after the caller's wait() has
    returned, and destroy_process_group does not stop them while anything (an FSDP module's mesh) still holds the
    group. If that release drops the last reference to a tensor Python has let go of, the thread takes the GIL to free
    the Python object; once Py_FinalizeEx has begun, take_gil ends the thread with pthread_exit, whose unwinding through
    the work's noexcept destructor calls std::terminate: "terminate called without an active exception", SIGABRT, and
    torchrun reports the whole run failed after it succeeded. Seen in 3 of 140 two-rank runs of tests/fsdp_worker.py
    under OMP_NUM_THREADS=1 (core dump: ~AsyncAllgatherWork -> decref_pyobject -> take_gil -> pthread_exit ->
    terminate, the main thread in Py_FinalizeEx). PyTorch's own attempt to destroy groups before finalization
    (pytorch#179291) was abandoned. Everything a stage writes is closed before `main` returns; nothing of ours needs
    finalization (no atexit handlers)."""
    try:
        main()
        code: Any = 0
    except SystemExit as e:
        code = e.code
    if not _joined_a_group:
        sys.exit(code)
    if code is None:
        code = 0
    elif not isinstance(code, int):  # sys.exit("message") prints the message and exits 1
        print(code, file=sys.stderr)
        code = 1
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
