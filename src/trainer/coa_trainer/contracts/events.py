# Generated from src/core/events.ts (EventSchema) by scripts/gen-python-contracts.mjs (datamodel-code-generator): do not edit.

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel

from .record import TrajectoryRecord


class RunStartedEvent(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    v: Literal[1] = 1
    time: float = 0
    run: str = ""
    type: Literal["run_started"] = "run_started"
    stage: str
    config: dict[str, Any]
    total_steps: int
    device: str
    world_size: int
    pid: int | None = None
    resumed_from: int | None = None
    fast_path: dict[str, str] | None = None


class ProgressEvent(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    v: Literal[1] = 1
    time: float = 0
    run: str = ""
    stage: str
    step: int
    type: Literal["progress"] = "progress"
    total: int
    elapsed_s: float
    eta_s: float | None


class MetricsEvent(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    v: Literal[1] = 1
    time: float = 0
    run: str = ""
    stage: str
    step: int
    type: Literal["metrics"] = "metrics"
    values: dict[str, float | None]


class SampleEvent(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    v: Literal[1] = 1
    time: float = 0
    run: str = ""
    stage: str
    step: int
    type: Literal["sample"] = "sample"
    record: TrajectoryRecord = Field(..., title="TrajectoryRecord")


class CheckpointEvent(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    v: Literal[1] = 1
    time: float = 0
    run: str = ""
    stage: str
    step: int
    type: Literal["checkpoint"] = "checkpoint"
    path: str


class EvalEvent(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    v: Literal[1] = 1
    time: float = 0
    run: str = ""
    stage: str
    step: int
    type: Literal["eval"] = "eval"
    split: str
    metrics: dict[str, float | None]


class AlertEvent(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    v: Literal[1] = 1
    time: float = 0
    run: str = ""
    stage: str
    step: int
    type: Literal["alert"] = "alert"
    kind: Literal[
        "tool_call_explosion",
        "think_collapse",
        "all_wrong_groups",
        "reward_hacking",
        "tool_failures",
        "nan_loss",
        "zero_variance_groups",
        "logprob_drift",
        "other",
    ]
    severity: Literal["warning", "error"]
    message: str


class StageFinishedEvent(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    v: Literal[1] = 1
    time: float = 0
    run: str = ""
    stage: str
    step: int
    type: Literal["stage_finished"] = "stage_finished"
    status: Literal["ok", "cancelled", "failed"]
    checkpoint: str | None


class LogEvent(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    v: Literal[1] = 1
    time: float = 0
    run: str = ""
    type: Literal["log"] = "log"
    level: Literal["debug", "info", "warning", "error"]
    message: str


class ErrorEvent(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    v: Literal[1] = 1
    time: float = 0
    run: str = ""
    type: Literal["error"] = "error"
    message: str
    code: str | None = None
    detail: str | None = None
    stage: str | None = None


class HistogramEvent(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    v: Literal[1] = 1
    time: float = 0
    run: str = ""
    stage: str
    step: int
    type: Literal["histogram"] = "histogram"
    name: str
    edges: list[float]
    counts: list[int]


class TrainerEvent(
    RootModel[
        RunStartedEvent
        | ProgressEvent
        | MetricsEvent
        | SampleEvent
        | CheckpointEvent
        | EvalEvent
        | AlertEvent
        | StageFinishedEvent
        | LogEvent
        | ErrorEvent
        | HistogramEvent
    ]
):
    root: (
        RunStartedEvent
        | ProgressEvent
        | MetricsEvent
        | SampleEvent
        | CheckpointEvent
        | EvalEvent
        | AlertEvent
        | StageFinishedEvent
        | LogEvent
        | ErrorEvent
        | HistogramEvent
    ) = Field(..., discriminator="type", title="TrainerEvent")
    """
    A trainer event (protocol v1, src/core/events.ts), one class per type.
    """
