"""Resumable checkpoints: one file per checkpoint, written to a temp name, fsynced, then renamed — a crash leaves
either the previous checkpoint or the new one, never half of one."""

from __future__ import annotations

import os
import random
import re
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..model.load import trainable_state, unwrap
from ..model.optim import load_master_state, master_state

NAME = re.compile(r"^step-(\d{6,})\.(?:pt|dcp)$")  # .dcp: a sharded (FSDP2) checkpoint directory, model/fsdp.py


def rng_state() -> dict:
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(directory: Path, step: int, cursor: int, model: Any, opt: Any, sched: Any, stage: str,
                    extra: dict | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"step-{step:06d}.pt"
    tmp = directory / f".step-{step:06d}.pt.tmp"
    state = {"version": 1, "stage": stage, "step": step, "cursor": cursor, "model": trainable_state(model),
             "optimizer": opt.state_dict(), "scheduler": sched.state_dict(), "rng": rng_state(),
             "extra": extra or {}, "master": master_state(opt)}
    with open(tmp, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return path


def latest_checkpoint(directory: Path) -> Path | None:
    if not directory.is_dir():
        return None
    found = sorted((int(m.group(1)), p) for p in directory.iterdir() if (m := NAME.match(p.name)))
    return found[-1][1] if found else None


def load_checkpoint(path: Path, model: Any, opt: Any, sched: Any) -> dict:
    state = torch.load(path, map_location="cpu", weights_only=False)
    missing = unwrap(model).load_state_dict(state["model"], strict=False)
    if missing.unexpected_keys:
        raise RuntimeError(f"checkpoint {path} does not match the model: unexpected {missing.unexpected_keys[:3]}")
    opt.load_state_dict(state["optimizer"])
    load_master_state(opt, state.get("master"))
    sched.load_state_dict(state["scheduler"])
    set_rng_state(state["rng"])
    return state


def prune_checkpoints(directory: Path, keep: int = 2) -> None:
    found = sorted((int(m.group(1)), p) for p in directory.iterdir() if (m := NAME.match(p.name)))
    for _, p in found[:-keep]:
        if p.is_dir():
            import shutil

            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)
