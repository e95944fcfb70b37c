"""`python -m coa_trainer train --stage … --config run.json --run-dir runs/<id> [--resume]`: one stage, any kind,
through the one loop (stages/loop.py) with its steps — supervised (stages/sft.py) or GRPO (stages/rl.py) — after the
shared set-up (stages/setup.py). Whatever stops it becomes one error event (base/errors.py)."""

from __future__ import annotations

from pathlib import Path

from ..base import quiet  # noqa: F401  (silences library progress bars before they are imported)
from ..base.config import rl_stage, stage_config, supervised_stage
from ..base.errors import StageError
from ..base.events import EventWriter
from ..base.runstart import run_in_directory
from ..base.runlayout import final_dir, finished_step
from ..base.options import TrainOptions
from ..base.distributed import DistInfo
from ..contracts.run_config import RunConfig
from ..contracts.schemas import stage_rows
from ..contracts.schemas import rl_stages
from .loop import run_loop
from .rl import GrpoSteps, check_rl_config
from .setup import setup_stage
from .sft import SupervisedSteps
from ..contracts.events import LogEvent, StageFinishedEvent


def train_command(opts: TrainOptions) -> int:
    from ..base.distributed import DistInfo
    from ..base.lifecycle import startup_step

    dist_info = DistInfo.from_env()

    def cancelled(writer: EventWriter) -> int:  # a stop before the first step (imports, data, model, the stage's
        # start): nothing to save; the stage ends `cancelled` at the newest checkpoint's step
        writer.emit(
            StageFinishedEvent(
                stage=opts.name,
                step=startup_step(opts.run_dir, opts.name, opts.resume),
                status="cancelled",
                checkpoint=None,
            )
        )
        return 130

    return run_in_directory(
        opts.run_dir,
        opts.name,
        opts.config,
        opts.overrides,
        lambda start: run_stage(start.config, opts, start.run_dir, start.writer, dist_info),
        lock_as=f"train --stage {opts.stage}",
        primary=dist_info.rank == 0,
        on_cancel=cancelled,
        cleanup=dist_info.shutdown,
    )


def say_finished(writer: EventWriter, run_dir: Path, label: str, step: int, total: int) -> None:
    """`--resume` of a stage that has finished: nothing to do, and nothing is written but this note."""
    more = (
        ""
        if step == total
        else (
            f" (this config asks for {total} steps; a finished stage is not extended: train "
            f"it again without --resume, or a new --label with init_from {final_dir(run_dir, label)})"
        )
    )
    writer.emit(
        LogEvent(
            level="info",
            message=f"{label}: already finished at step {step} ({final_dir(run_dir, label)}); nothing to resume{more}",
        )
    )


def run_stage(config: RunConfig, opts: TrainOptions, run_dir: Path, writer: EventWriter, di: DistInfo) -> int:
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
        check_rl_config(rl_stage(scfg, stage), stage, di)
    elif (batch_size := supervised_stage(scfg, stage).batch_size) % di.world_size:
        raise StageError(
            f"stages.{stage}.batch_size {batch_size} is not divisible by the {di.world_size} processes", "bad_config"
        )
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
    known = {row.id: row.trains for row in stage_rows()}
    if label in known and known[label] != stage:
        raise StageError(
            f"--label {label} names another stage ({label}): its stages/{label}/ would be overwritten; "
            f"give this run of {stage} a name of its own (e.g. {stage}-b)",
            "bad_config",
        )
