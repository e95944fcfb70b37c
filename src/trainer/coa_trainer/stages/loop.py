"""The one training loop every stage runs (pretrain, SFT-1/2/3, RL-1/2), read top to bottom: resume, run_started,
steps, metrics and progress, NaN and core alerts, samples, checkpoints, cancel, the final save and evaluation.
What differs between stages is a `StageSteps` (stages/sft.py: supervised; stages/rl.py: GRPO with rollouts)."""

from __future__ import annotations

import math
import time
from typing import Any, Protocol

from ..base.errors import StageError
from .setup import StageRun

CANCELLED = 130  # the exit status of a stage cancelled by a signal (it checkpointed first)


class StageSteps(Protocol):
    """What one kind of stage brings to the loop."""

    cursor: int  # data consumed so far, saved in checkpoints (SFT: samples; RL: steps)

    def describe(self) -> str: ...

    def notes(self) -> list[str]: ...  # warnings for the run's log, said once after run_started

    def resume(self, extra: dict) -> None: ...  # the state a checkpoint carried besides weights (RL: OTC, alerts)

    def fresh(self) -> None: ...  # a first start (RL: an empty OTC-GRPO minimum)

    def step(self, step: int) -> dict[str, float | None]: ...  # one optimiser step after `step` done: its metrics

    def alerts(self, step: int, values: dict) -> list[Any]: ...  # the core's alerts on this step's metrics

    def sample(self, step: int) -> None: ...  # a sample event (RL: the rollouts of the step, appended to a file)

    def checkpoint_extra(self) -> dict | None: ...

    def evaluate(self) -> dict[str, dict]: ...  # rank 0, full parameters: split → metrics

    def close(self) -> None: ...


def run_loop(run: StageRun, impl: StageSteps) -> int:
    """Train `run.total` steps (or until cancelled) and finish the stage; returns the exit status."""
    writer, di, scfg, label, total = run.writer, run.di, run.scfg, run.label, run.total
    step, resumed_from = 0, None
    trained = Trained()
    state = run.latest_state()
    if state is not None:
        step = resumed_from = state["step"]
        impl.cursor = state["cursor"]
        impl.resume(state.get("extra") or {})
        trained.total = float((state.get("extra") or {}).get(TRAINED_TOTAL) or 0.0)
    else:
        impl.fresh()
    di.barrier()
    run.started(resumed_from, impl.describe())
    for note in impl.notes():
        writer.emit("log", level="warning", message=f"{label}: {note}")

    started = last_save = time.time()
    saved_at = resumed_from  # the step of the newest checkpoint on disk: a cancel right after it need not save again
    run.model.train()
    while step < total and not di.any(run.cancelled):  # a signal reaches the ranks at different moments
        values = trained.add(impl.step(step))
        step += 1
        if step % scfg.log_every == 0 or step == total:
            writer.emit("metrics", stage=label, step=step, values=values)
            elapsed = time.time() - started
            done = step - (resumed_from or 0)
            writer.emit("progress", stage=label, step=step, total=total, elapsed_s=elapsed,
                        eta_s=elapsed / done * (total - step) if done else None)
        for a in impl.alerts(step, values):
            writer.emit("alert", stage=label, step=step, kind=a.kind, severity=a.severity, message=a.message)
        if bad := [k for k, v in values.items() if isinstance(v, float) and not math.isfinite(v)]:
            writer.emit("alert", stage=label, step=step, kind="nan_loss", severity="error",
                        message=f"{', '.join(bad)} {'is' if len(bad) == 1 else 'are'} not finite at step {step}")
        if scfg.sample_every and step % scfg.sample_every == 0 and di.rank == 0:
            impl.sample(step)
        by_steps = bool(scfg.checkpoint_every) and step % scfg.checkpoint_every == 0
        by_time = bool(scfg.checkpoint_minutes) and di.any(time.time() - last_save >= 60 * scfg.checkpoint_minutes)
        if (by_steps or by_time) and step < total:
            save(run, impl, step, trained=trained.total)
            saved_at, last_save = step, time.time()

    if step < total:  # stopped by a signal (on this rank or another)
        if saved_at != step:
            save(run, impl, step, prune=False, trained=trained.total)
        writer.emit("stage_finished", stage=label, step=step, status="cancelled", checkpoint=None)
        return CANCELLED
    trained.require(label, step)
    out = run.save_final(step)
    with run.gathered():  # FSDP2: full parameters on every rank, so rank 0 alone can run the plain model
        if di.rank == 0:
            run.policy.eval()  # not through DDP: its forward would wait for collectives from the other ranks
            for split, metrics in impl.evaluate().items():
                writer.emit("eval", stage=label, step=step, split=split, metrics=metrics)
    di.barrier()
    writer.emit("stage_finished", stage=label, step=step, status="ok", checkpoint=str(out))
    return 0


TRAINED_TOTAL = "trained_tokens_total"


class Trained:
    """The stage's count of trained tokens. `trained_tokens` (a stage's step metric): the tokens that carried loss
    in that optimiser step, over all processes; `trained_tokens_total`, added here: the same summed since the stage
    began, resumes included (kept in checkpoints) — the counterpart of TRL's cumulative `num_tokens` (which counts
    every token TRL fed the model, prompts included). A stage that reports them and trained none fails."""

    def __init__(self) -> None:
        self.total = 0.0
        self.reported = False

    def add(self, values: dict) -> dict:
        n = values.get("trained_tokens")
        if isinstance(n, (int, float)):
            self.reported = True
            self.total += float(n)
            values = {**values, TRAINED_TOTAL: self.total}
        return values

    def require(self, label: str, step: int) -> None:
        if self.reported and self.total == 0:
            raise StageError(f"{label} trained 0 tokens in {step} steps: no token of its data carried loss (every "
                             "loss mask empty) — nothing was learnt, so the stage is not saved as finished", "bad_data")


def save(run: StageRun, impl: StageSteps, step: int, prune: bool = True, trained: float | None = None) -> None:
    """Every rank: a resumable checkpoint with the stage's own state (rank 0 says so)."""
    extra = impl.checkpoint_extra() if run.di.rank == 0 else None
    if run.di.rank == 0 and trained is not None:
        extra = {**(extra or {}), TRAINED_TOTAL: trained}
    if (path := run.save_checkpoint(step, impl.cursor, extra, prune)) is not None:
        run.writer.emit("checkpoint", stage=run.label, step=step, path=str(path))
