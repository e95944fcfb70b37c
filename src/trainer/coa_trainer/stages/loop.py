"""The one training loop every stage runs (pretrain, SFT-1/2/3, RL-1/2), read top to bottom: resume, run_started,
steps, metrics and progress, the NaN/Inf guard and core alerts, samples, checkpoints, cancel, the evaluation and the
final save. What differs between stages is a `StageSteps` (stages/sft.py: supervised; stages/rl.py: GRPO with
rollouts).

A stop signal (TERM, INT, HUP; base/lifecycle.StopControl) ends the stage within moments in every phase: a step is
dropped at once until its first optimiser update (the rollout, the grading, the forward/backward passes — done again
after --resume), an update in progress or a checkpoint being written finishes first, an evaluation is dropped at once.
Then the last completed step is checkpointed (unless that checkpoint is on disk already) and the stage ends
`cancelled`, exit 130. The final model (`final/`) is written only after the evaluation, so a stage stopped during its
evaluation is not taken for finished: --resume loads its last step's checkpoint and only evaluates and saves."""

from __future__ import annotations

import math
import time
from typing import Any, Protocol

from ..base.errors import StageError
from ..base.lifecycle import CANCELLED_EXIT, StageCancelled
from ..base.system_metrics import SystemSampler
from .setup import StageRun
from ..contracts.events import (
    AlertEvent,
    CheckpointEvent,
    EvalEvent,
    LogEvent,
    MetricsEvent,
    ProgressEvent,
    StageFinishedEvent,
)

CANCELLED = CANCELLED_EXIT  # the exit status of a stage cancelled by a signal (it checkpointed first)


class StageSteps(Protocol):
    """What one kind of stage brings to the loop."""

    cursor: int  # data consumed so far, saved in checkpoints (SFT: samples; RL: steps)

    def describe(self) -> str: ...

    def notes(self) -> list[str]: ...  # warnings for the run's log, said once after run_started

    def resume(self, extra: dict) -> None: ...  # the state a checkpoint carried besides weights (RL: OTC, alerts)

    def fresh(self) -> None: ...  # a first start (RL: an empty OTC-GRPO minimum)

    # One optimiser step after `step` done: its metrics. Until its first optimiser update it may be cut by a stop
    # (StageCancelled); what it changed before that must be what a checkpoint of `step` holds (RL: checkpoint_extra).
    def step(self, step: int) -> dict[str, float | None]: ...

    # The first update's forward/backward (or one as large) without the optimiser step, its gradients dropped: what
    # activation checkpointing is decided on (decide_checkpointing)
    def probe_update(self) -> None: ...

    def alerts(self, step: int, values: dict) -> list[Any]: ...  # the core's alerts on this step's metrics

    def sample(self, step: int) -> None: ...  # a sample event (RL: the rollouts of the step, appended to a file)

    def checkpoint_extra(self) -> dict | None: ...

    def evaluate(self) -> dict[str, dict]: ...  # rank 0, full parameters: split → metrics

    def close(self) -> None: ...


class DivergedError(StageError):
    """The loss, the gradient or the weights went non-finite: every step after it would train on NaN."""

    def __init__(self, run: StageRun, step: int, what: str, lr: float):
        super().__init__(
            f"{run.label}: training diverged at step {step}: {what} (learning rate {lr:g}). Nothing from "
            f"step {step} on was saved. The usual causes: stages.{run.stage}.lr too high for this model "
            f"and data (it is {run.schedule.scfg.lr:g}), or a starting model whose weights are not finite "
            f"({run.model.init}); --resume continues from the newest checkpoint",
            "diverged",
        )


def run_loop(run: StageRun, impl: StageSteps) -> int:
    """Train `run.schedule.total` steps (or until cancelled) and finish the stage; returns the exit status."""
    writer, di, scfg, label, total, stop = (
        run.io.writer,
        run.di,
        run.schedule.scfg,
        run.label,
        run.schedule.total,
        run.stop,
    )
    step, resumed_from = 0, None
    trained = Trained()
    with stop.interruptible():  # loading the checkpoint: a stop has nothing new to save (see train_command)
        state = run.latest_state()
        if state is not None:
            step = resumed_from = state.step
            impl.cursor = state.cursor
            impl.resume(state.extra)
            trained.total = float(state.extra.get(TRAINED_TOTAL) or 0.0)
        else:
            impl.fresh()
    di.barrier()
    decide_checkpointing(run, impl, step < total)
    run.started(resumed_from, impl.describe())
    for note in impl.notes():
        writer.emit(LogEvent(level="warning", message=f"{label}: {note}"))

    started = last_save = time.time()
    system = SystemSampler()
    saved_at = resumed_from  # the step of the newest checkpoint on disk: a cancel right after it need not save again
    run.model.trained.train()
    while step < total and not di.any(run.cancelled):  # a signal reaches the ranks at different moments
        lr = run.schedule.opt.param_groups[0]["lr"]  # what this step's update uses
        rng = _rng_state() if stop.raises else None
        try:
            with stop.interruptible():  # until the step's first optimiser update (StopControl.commit)
                values = impl.step(step)
        except StageCancelled:
            _set_rng_state(rng)  # the dropped step's draws are drawn again after --resume
            break
        except RuntimeError as e:  # torch: a learning rate past the parameters' dtype (1e300 in float32; the config
            # bounds lr, so only a learning rate set another way gets here)
            if "overflow" not in str(e):
                raise
            raise DivergedError(run, step + 1, f"the optimiser update overflowed ({e})", lr) from None
        values = trained.add(values)
        step += 1
        if step % scfg.log_every == 0 or step == total:
            # With the machine's figures since the last metrics (system/*): how the CPU is shared shows beside the speed.
            writer.emit(MetricsEvent(stage=label, step=step, values={**values, **system.sample()}))
            elapsed = time.time() - started
            done = step - (resumed_from or 0)
            writer.emit(
                ProgressEvent(
                    stage=label,
                    step=step,
                    total=total,
                    elapsed_s=elapsed,
                    eta_s=elapsed / done * (total - step) if done else None,
                )
            )
        for a in impl.alerts(step, values):
            writer.emit(AlertEvent(stage=label, step=step, kind=a.kind, severity=a.severity, message=a.message))
        if bad := [k for k, v in values.items() if isinstance(v, float) and not math.isfinite(v)]:
            writer.emit(
                AlertEvent(
                    stage=label,
                    step=step,
                    kind="nan_loss",
                    severity="error",
                    message=f"{', '.join(bad)} {'is' if len(bad) == 1 else 'are'} not finite at step {step}",
                )
            )
        check_finite(run, step, values, lr)
        if scfg.sample_every and step % scfg.sample_every == 0 and di.rank == 0:
            impl.sample(step)
        by_steps = bool(scfg.checkpoint_every) and step % scfg.checkpoint_every == 0
        by_time = bool(scfg.checkpoint_minutes) and di.any(time.time() - last_save >= 60 * scfg.checkpoint_minutes)
        if (by_steps or by_time) and step < total:
            run.phase("checkpoint", step)
            save(run, impl, step, trained=trained.total)
            saved_at, last_save = step, time.time()

    if step == total and not di.any(run.cancelled):
        trained.require(label, step)
        results = evaluate(run, impl, step)  # None: stopped during it
        if not di.any(results is None):
            run.phase("final", step)
            out = run.save_final(step)
            for split, metrics in (results or {}).items():
                writer.emit(EvalEvent(stage=label, step=step, split=split, metrics=metrics))
            # A stop while final/ was written: the stage is complete (a --resume finds it finished), and it says that
            # it was asked to stop, as every stop does.
            late = di.any(run.cancelled)
            if late:
                writer.emit(
                    LogEvent(
                        level="info",
                        message=f"{label}: stopped by {stop_name(run)} while its final "
                        "model was written; the stage is complete",
                    )
                )
            writer.emit(
                StageFinishedEvent(stage=label, step=step, status="cancelled" if late else "ok", checkpoint=str(out))
            )
            return CANCELLED if late else 0
    return cancel(run, impl, step, saved_at, trained.total)


def decide_checkpointing(run: StageRun, impl: StageSteps, updates_left: bool) -> None:
    """Activation checkpointing as model/activations.py decides it from the first update's measured peak (every rank
    measures its own; on when any rank needs it), said in run_started's fast_path."""
    from ..model import activations

    forced = run.config.model.gradient_checkpointing
    if not forced and not updates_left:
        text = "off (no update left to run)"
    else:
        peak = None if forced else activations.measure(run.rt.device, impl.probe_update, run.schedule.opt)
        on, text = activations.decide(run.rt.device.type, forced, peak)
        if run.di.any(on) and not activations.is_enabled(run.model.policy):
            activations.enable(run.model.policy)
    run.model.fast_path.update({"activation checkpointing": text})


def evaluate(run: StageRun, impl: StageSteps, step: int) -> dict[str, dict] | None:
    """The stage's evaluation of its trained model (rank 0, full parameters); None when a stop cut it."""
    results: dict[str, dict] | None = {}
    with run.gathered():  # FSDP2: full parameters on every rank, so rank 0 alone can run the plain model
        if run.di.rank == 0:
            run.model.policy.eval()  # not through DDP: its forward would wait for collectives from the other ranks
            run.phase("eval", step)
            try:
                with run.stop.interruptible():
                    results = impl.evaluate()
            except StageCancelled:
                results = None
    run.di.barrier()
    return results


def cancel(run: StageRun, impl: StageSteps, step: int, saved_at: int | None, trained: float) -> int:
    """Stopped by a signal (on this rank or another) with `step` the last completed step: its checkpoint, a line
    saying where the stop came, and `stage_finished` cancelled."""
    writer, label = run.io.writer, run.label
    what, at = run.stop.stopped_in or ("start", step)
    if saved_at != step:
        run.phase("checkpoint", step)
        save(run, impl, step, prune=False, trained=trained)
    writer.emit(
        LogEvent(
            level="info",
            message=f"{label}: stopped by {stop_name(run)} during {what} of step {at}; "
            f"resume with --resume from step {step}",
        )
    )
    writer.emit(StageFinishedEvent(stage=label, step=step, status="cancelled", checkpoint=None))
    return CANCELLED


def stop_name(run: StageRun) -> str:
    return run.stop.requested or "a stop signal to another process"


def check_finite(run: StageRun, step: int, values: dict, lr: float) -> None:
    """The NaN/Inf guard: a non-finite loss or gradient norm, or weights no longer finite after the update, fail the
    stage at this step — before anything of it is checkpointed or sampled, so no NaN checkpoint ever becomes the
    newest and the error names the step where training broke."""
    numbers = {k: float(values[k]) for k in ("loss", "grad_norm") if values.get(k) is not None}
    bad = [f"{k} is {'NaN' if math.isnan(v) else v}" for k, v in numbers.items() if not math.isfinite(v)]
    if run.di.any(not weights_finite(run.schedule.params)):
        bad.append("the weights are not finite after its update")
    if bad:
        raise DivergedError(run, step, ", ".join(bad), lr)


def weights_finite(params: list) -> bool:
    """Whether every trainable parameter (this rank's shard under FSDP) is finite: one device sync."""
    import torch

    if not params:
        return True
    flags = [torch.isfinite(p.to_local() if hasattr(p, "to_local") else p).all() for p in params]
    return bool(torch.stack(flags).all())


def _rng_state() -> Any:
    from ..model.checkpoint import rng_state

    return rng_state()


def _set_rng_state(state: dict | None) -> None:
    if state is not None:
        from ..model.checkpoint import set_rng_state

        set_rng_state(state)


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
            raise StageError(
                f"{label} trained 0 tokens in {step} steps: no token of its data carried loss (every "
                "loss mask empty) — nothing was learnt, so the stage is not saved as finished",
                "bad_data",
            )


def save(run: StageRun, impl: StageSteps, step: int, prune: bool = True, trained: float | None = None) -> None:
    """Every rank: a resumable checkpoint with the stage's own state (rank 0 says so)."""
    extra = impl.checkpoint_extra() if run.di.rank == 0 else None
    if run.di.rank == 0 and trained is not None:
        extra = {**(extra or {}), TRAINED_TOTAL: trained}
    if (path := run.save_checkpoint(step, impl.cursor, extra, prune)) is not None:
        run.io.writer.emit(CheckpointEvent(stage=run.label, step=step, path=str(path)))
