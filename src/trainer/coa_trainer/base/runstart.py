"""The one start of a command that writes a run directory (train, pipeline, collect, eval, boundary): the run id's
name rule, the run lock, events.jsonl, the directory's links checked, the run config read with its overrides and its
metric sinks attached — then the command's body, with the stop-signal handlers it sets put back after it, every
failure one error event and an exit status, and the lock released. And the `run_started` event, written one way by
every stage, collection, pipeline and TRL run."""

from __future__ import annotations

import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..contracts.run_config import RunConfig
from .config import config_dict, load_config
from .errors import report_failure
from .events import EventWriter
from .lifecycle import STOP_SIGNALS, RunLock, RunLockBusy, StartupCancelled
from .names import name_error
from .rundir import RunDirError, check_run_dir
from ..contracts.events import RunStartedEvent, StageFinishedEvent


@dataclass
class RunStart:
    """What a command's body gets: its run directory, opened and locked, and its run config."""

    run_dir: Path
    writer: EventWriter
    config: RunConfig
    lock: RunLock | None = None


def run_in_directory(
    run_dir: Path,
    stage: str,
    config: Path,
    overrides: tuple[str, ...],
    body: Callable[[RunStart], int],
    *,
    lock_as: str | None = None,
    primary: bool = True,
    check_name: bool = True,
    on_cancel: Callable[[EventWriter], int] | None = None,
    cancel_on: tuple[type[BaseException], ...] = (StartupCancelled,),
    log_metrics: bool = True,
    cleanup: Callable[[], None] | None = None,
) -> int:
    """Run `body` in `run_dir`; its exit status. `stage`: the name the error events carry. `lock_as`: the command
    the run lock names (None: the command takes no lock — it only reads what trainers wrote, or writes beside them).
    `primary`: this process writes events and takes the lock (False on the other ranks of a torchrun). `on_cancel`:
    what a stop (`cancel_on`: a stop before the first step, or a pipeline's own) during the start or the body says;
    without it a stop propagates. `log_metrics`: the run config's metric sinks (W&B, TensorBoard) get the events. `cleanup`: runs after the body, before events.jsonl closes."""
    if check_name and (err := name_error(run_dir.resolve().name, "run id (the run directory's name)")):
        print(f"coa_trainer: {err}", file=sys.stderr)
        return 2
    lock, lock_error = None, None
    try:
        lock, lock_error = _take_lock(run_dir, lock_as, primary)
        writer = EventWriter(run_dir, enabled=primary)
    except RunLockBusy as e:
        print(f"coa_trainer: {e}", file=sys.stderr)  # not an event: events.jsonl belongs to the trainer holding it
        return 2
    except RunDirError as e:  # events.jsonl itself leads out of the run (base/rundir.py): nowhere safe to write
        _release(lock)
        print(f"coa_trainer: {e}", file=sys.stderr)
        return e.exit_status
    except OSError as e:
        _release(lock)
        print(f'{{"type": "error", "message": "cannot create run directory {run_dir}: {e.strerror}"}}')
        return 2
    handlers = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    try:
        if lock_error is not None:
            raise lock_error
        check_run_dir(run_dir)
        cfg = load_config(config, list(overrides))
        if log_metrics:
            writer.attach_logging(cfg)
        return body(RunStart(run_dir, writer, cfg, lock))
    except cancel_on:
        if on_cancel is None:
            raise
        return on_cancel(writer)
    except Exception as e:  # noqa: BLE001 — every failure becomes one error event and a non-zero exit
        return report_failure(writer, stage, e)
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)
        try:
            if cleanup is not None:
                cleanup()
        finally:
            writer.close()
            _release(lock)


def _take_lock(run_dir: Path, lock_as: str | None, primary: bool) -> tuple[RunLock | None, RunDirError | None]:
    """The run lock when this process takes one (one trainer per run directory; a pipeline's stage runs under the
    pipeline's lock), with the RunDirError of a lock file that leads out of the run (said as an event once
    events.jsonl is open). RunLockBusy when another process holds it."""
    if not (lock_as and primary):
        return None, None
    try:
        return RunLock.acquire(run_dir, lock_as), None
    except RunDirError as e:
        return None, e


def _release(lock: RunLock | None) -> None:
    if lock is not None:
        lock.release()


def cancelled_at_startup(run_dir: Path, stage: str, step: int, *, lock_as: str, primary: bool = True) -> int:
    """A command stopped while starting, before `run_in_directory` took over the stop signals: its `stage_finished`
    (cancelled, at `step`) written under the run lock that run_in_directory takes, exit 130. Nothing is written
    where another process holds the run or the directory cannot be written."""
    try:
        lock, lock_error = _take_lock(run_dir, lock_as, primary)
    except (RunLockBusy, OSError):
        return 130
    try:
        if primary and lock_error is None:  # never write into another trainer's run
            with EventWriter(run_dir) as w:
                w.emit(StageFinishedEvent(stage=stage, step=step, status="cancelled", checkpoint=None))
    except (RunDirError, OSError):
        pass
    finally:
        _release(lock)
    return 130


def run_started(
    writer: EventWriter,
    stage: str,
    config: RunConfig | dict[str, Any],
    total_steps: int,
    *,
    device: str = "pipeline",
    world_size: int = 1,
    resumed_from: int | None = None,
    **extra: Any,
) -> None:
    """The run's first event: its stage, config (as the schema writes it), steps, device, processes and pid."""
    writer.emit(
        RunStartedEvent(
            stage=stage,
            config=config if isinstance(config, dict) else config_dict(config),
            total_steps=total_steps,
            device=device,
            world_size=world_size,
            pid=os.getpid(),
            resumed_from=resumed_from,
            **extra,
        )
    )
