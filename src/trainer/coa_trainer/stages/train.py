"""`python -m coa_trainer train --stage … --config run.json --run-dir runs/<id> [--resume]`: one stage, any kind,
through the one loop (stages/loop.py) with its steps — supervised (stages/sft.py) or GRPO (stages/rl.py) — after the
shared set-up (stages/setup.py). Whatever stops it becomes one error event (base/errors.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ..base import quiet  # noqa: F401  (silences library progress bars before they are imported)
from ..base.config import load_config, stage_config
from ..base.errors import StageError, report_failure
from ..base.events import EventWriter
from ..base.rundir import RunDirError, check_run_dir
from ..base.runlayout import final_dir, finished_step
from ..base.options import TrainOptions
from ..contracts.run_config import RunConfig
from ..contracts.schemas import rl_stages, stage_table
from .loop import run_loop
from .rl import GrpoSteps, check_rl_config
from .setup import setup_stage
from .sft import SupervisedSteps


def train_command(opts: TrainOptions) -> int:
    run_dir = opts.run_dir
    from ..base.distributed import DistInfo
    from ..base.names import name_error

    if err := name_error(run_dir.resolve().name, "run id (the run directory's name)"):
        print(f"coa_trainer: {err}", file=sys.stderr)
        return 2

    dist_info = DistInfo.from_env()
    try:
        writer = EventWriter(run_dir, enabled=dist_info.rank == 0)
    except RunDirError as e:  # events.jsonl itself leads out of the run: nowhere safe to write the event
        print(f"coa_trainer: {e}", file=sys.stderr)
        return e.exit_status
    except OSError as e:
        print(f'{{"type": "error", "message": "cannot create run directory {run_dir}: {e.strerror}"}}')
        return 2
    stage = opts.name  # the name events carry (rl2 --label rl2-otc)
    from ..base.lifecycle import RunLock, RunLockBusy, StartupCancelled, startup_step

    lock = None
    try:
        if dist_info.rank == 0:  # one trainer per run directory (a pipeline's stage runs under the pipeline's lock)
            lock = RunLock.acquire(run_dir, f"train --stage {opts.stage}")
        check_run_dir(run_dir)
        config = load_config(opts.config, list(opts.overrides))
        writer.attach_logging(config)
        return run_stage(config, opts, run_dir, writer, dist_info)
    except RunLockBusy as e:
        print(f"coa_trainer: {e}", file=sys.stderr)  # not an event: events.jsonl belongs to the trainer holding it
        return 2
    except StartupCancelled:  # a stop before the first step (imports, data, model, the stage's start): nothing to save
        writer.emit("stage_finished", stage=stage, step=startup_step(run_dir, stage, opts.resume),
                    status="cancelled", checkpoint=None)
        return 130
    except Exception as e:  # noqa: BLE001 — every failure becomes one error event and a non-zero exit
        return report_failure(writer, stage, e)
    finally:
        writer.close()
        dist_info.shutdown()
        if lock is not None:
            lock.release()


def say_finished(writer: EventWriter, run_dir: Path, label: str, step: int, total: int) -> None:
    """`--resume` of a stage that has finished: nothing to do, and nothing is written but this note."""
    more = "" if step == total else (f" (this config asks for {total} steps; a finished stage is not extended: train "
                                     f"it again without --resume, or a new --label with init_from {final_dir(run_dir, label)})")
    writer.emit("log", level="info", message=f"{label}: already finished at step {step} ({final_dir(run_dir, label)}); "
                f"nothing to resume{more}")


def run_stage(config: RunConfig, opts: TrainOptions, run_dir: Path, writer: EventWriter, di: Any) -> int:
    """Set the stage up and run the one loop with its steps: GRPO for the RL stages, supervised for the others."""
    stage = opts.stage
    check_label(stage, opts.label)
    scfg = stage_config(config, stage)
    label = opts.name
    if opts.resume and (done := finished_step(run_dir, label)) is not None:
        say_finished(writer, run_dir, label, done, opts.max_steps or scfg.steps)
        return 0
    rl = stage in rl_stages()
    if rl:
        check_rl_config(scfg, stage, di)
    elif scfg.batch_size % di.world_size:
        raise StageError(f"stages.{stage}.batch_size {scfg.batch_size} is not divisible by the "
                         f"{di.world_size} processes", "bad_config")
    run = setup_stage(config, opts, run_dir, writer, di)
    # The stage's own start (an environment server, a reference model) stops at once: nothing new to save yet, and
    # StageCancelled is a StartupCancelled (train_command says `cancelled` at the newest checkpoint's step).
    with run.stop.interruptible():
        impl = GrpoSteps(run) if rl else SupervisedSteps(run)
    try:
        return run_loop(run, impl)
    finally:
        impl.close()


def check_label(stage: str, label: str | None) -> None:
    """A label names a run of this stage (stages/<label>/): never another stage, whose directory it would overwrite
    (`--stage sft2 --label pretrain` replaced stages/pretrain/final). A table row that trains this stage (rl2-otc for
    rl2) is its own label."""
    if not label or label == stage:
        return
    known = {row["id"]: row.get("trains") for row in stage_table()["stages"]}
    if label in known and known[label] != stage:
        raise StageError(f"--label {label} names another stage ({label}): its stages/{label}/ would be overwritten; "
                         f"give this run of {stage} a name of its own (e.g. {stage}-b)", "bad_config")
