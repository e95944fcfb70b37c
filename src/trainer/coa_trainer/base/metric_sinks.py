"""Metrics to Weights & Biases and TensorBoard (the run config's `logging` section), from the events themselves: each
`metrics` event's values go out under the names the live panel charts them with, at the stage's step, and each
`eval` event's as `eval/<split>/<metric>` — so W&B, TensorBoard and the cockpit show the same series by the same
names. One W&B run and one TensorBoard run (`<dir>/<stage>/`) per stage, as the live panel has one line per stage
(steps restart at 0 in every stage, so stages cannot share one axis).

W&B runs offline by default (written under the run directory, no network; `wandb sync` uploads them later). It is
told to leave stdout alone (the trainer's stdout carries the events), to sample no system metrics and read no git.
A sink that fails (disk full, a W&B error) is switched off with one warning; the run goes on."""

from __future__ import annotations

import hashlib
import math
import re
from pathlib import Path
from typing import Any, Callable, NamedTuple

import pydantic

from ..contracts.events import EvalEvent, MetricsEvent, StageFinishedEvent
from ..contracts.run_config import RunConfig, WandbLogging


def _scalars(values: dict[str, float | None]) -> dict[str, float]:
    """The values a chart can draw: finite numbers (a NaN or infinity, which the events file carries as null, is a gap,
    not a point)."""
    return {k: float(v) for k, v in values.items() if v is not None and math.isfinite(v)}


class Charted(NamedTuple):
    """What an event puts on the charts: {name: value} at a stage's step, at the event's time."""

    stage: str
    step: int
    scalars: dict[str, float]
    time: float


def event_scalars(event: pydantic.BaseModel) -> Charted | None:
    """What an event (one of the contracts' event classes) charts, or None. The names are the live panel's."""
    if isinstance(event, MetricsEvent):
        return Charted(event.stage, event.step, _scalars(event.values), event.time)
    if isinstance(event, EvalEvent):
        scalars = {f"eval/{event.split}/{k}": v for k, v in _scalars(event.metrics).items()}
        return Charted(event.stage, event.step, scalars, event.time)
    return None


class TensorBoardSink:
    """Event files `<dir>/<stage>/events.out.tfevents.*` written by TensorBoard's own writer (no TensorFlow)."""

    def __init__(self, log_dir: Path) -> None:
        from tensorboard.summary import Writer

        self._writer_cls = Writer
        self.log_dir = log_dir
        self.writers: dict[str, Any] = {}

    def write(self, stage: str, step: int, scalars: dict[str, float], wall_time: float) -> None:
        w = self.writers.get(stage)
        if w is None:
            w = self.writers[stage] = self._writer_cls(str(self.log_dir / stage))
        for tag, value in scalars.items():
            w.add_scalar(tag, value, step, wall_time=wall_time)
        w.flush()  # readers (the cockpit, tensorboard) see each step as it comes

    def finish(self, stage: str | None, ok: bool) -> None:
        for name in [stage] if stage is not None else list(self.writers):
            w = self.writers.pop(name, None)
            if w is not None:
                w.close()


def _wandb_id(text: str) -> str:
    """W&B run ids may not hold '/', ':' and a few more; keep them readable."""
    return re.sub(r"[^A-Za-z0-9_.-]", "-", text)[:128]


class WandbSink:
    """One W&B run per stage, grouped by the CoA run; the stage's step is the x axis (`step`), so a resumed stage
    logging a step again is not dropped as W&B does with a step that goes back."""

    def __init__(self, cfg: WandbLogging, run_id: str, run_dir: Path, config: dict) -> None:
        import wandb

        self.wandb, self.cfg, self.run_id, self.config = wandb, cfg, run_id, config
        self.dir = Path(cfg.dir) if cfg.dir else run_dir
        # A resumed stage continues its W&B run (resume="allow" on the same id); two run directories of one name
        # (every seed of a --seeds run is seed-N; "demo" in two folders) must not continue each other's.
        self.dir_key = hashlib.sha256(str(run_dir.resolve()).encode()).hexdigest()[:8]
        self.runs: dict[str, Any] = {}

    def _run(self, stage: str) -> Any:
        run = self.runs.get(stage)
        if run is None:
            self.dir.mkdir(parents=True, exist_ok=True)
            cfg, name = self.cfg, self.cfg.name or self.run_id
            settings = self.wandb.Settings(
                silent=True,
                console="off",
                x_disable_stats=True,
                disable_git=True,
                save_code=False,
                x_save_requirements=False,
                disable_job_creation=True,
                x_disable_machine_info=True,
            )
            run = self.wandb.init(
                project=cfg.project,
                entity=cfg.entity,
                name=f"{name}/{stage}",
                group=cfg.group or self.run_id,
                job_type=stage,
                tags=list(cfg.tags),
                id=_wandb_id(f"{self.run_id}-{stage}-{self.dir_key}"),
                resume="allow",
                dir=str(self.dir),
                mode=cfg.mode,
                config=self.config,
                reinit="create_new",
                settings=settings,
            )
            run.define_metric("step")
            run.define_metric("*", step_metric="step")
            self.runs[stage] = run
        return run

    def write(self, stage: str, step: int, scalars: dict[str, float], wall_time: float) -> None:
        self._run(stage).log({"step": step, **scalars})

    def finish(self, stage: str | None, ok: bool) -> None:
        for name in [stage] if stage is not None else list(self.runs):
            run = self.runs.pop(name, None)
            if run is not None:
                run.finish(exit_code=0 if ok else 1)


class MetricSinks:
    """What EventWriter hands every event to (base/events.py). `warn` reports a sink switched off."""

    def __init__(self, sinks: list[Any], warn: Callable[[str], object]) -> None:
        self.sinks, self.warn = sinks, warn

    def handle(self, event: pydantic.BaseModel) -> None:
        """An event as written (stamped with its time): base/events.py's Event, named here, not imported (events
        imports this module)."""
        charted = event_scalars(event)
        for sink in list(self.sinks):
            try:
                if charted is not None and charted.scalars:
                    sink.write(charted.stage, charted.step, charted.scalars, charted.time)
                elif isinstance(event, StageFinishedEvent):
                    sink.finish(event.stage, event.status == "ok")
            except Exception as e:  # noqa: BLE001 — logging elsewhere must never stop training
                self.sinks.remove(sink)
                self.warn(f"{type(sink).__name__}: switched off after an error: {type(e).__name__}: {e}")

    def close(self) -> None:
        for sink in self.sinks:
            try:
                sink.finish(None, True)
            except Exception:  # noqa: BLE001 — closing what is left; the events file has everything
                pass
        self.sinks = []


def metric_sinks(
    config: RunConfig, run_dir: Path, run_id: str, config_json: dict, warn: Callable[[str], object]
) -> MetricSinks | None:
    """The sinks the run config asks for (None when it asks for none). Imports W&B / TensorBoard only then."""
    sinks: list[Any] = []
    log = config.logging
    if log.tensorboard is not None:  # a shared log directory holds many runs: <dir>/<run>/<stage>
        sinks.append(
            TensorBoardSink(Path(log.tensorboard.dir) / run_id if log.tensorboard.dir else run_dir / "tensorboard")
        )
    if log.wandb is not None and log.wandb.mode != "disabled":
        sinks.append(WandbSink(log.wandb, run_id, run_dir, config_json))
    return MetricSinks(sinks, warn) if sinks else None
