# Generated from src/env/protocol.ts (ENV_PROTOCOL_PARTS) by scripts/gen-python-contracts.mjs (datamodel-code-generator): do not edit.

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel

from .record import RewardBreakdown, TrajectoryRecord


class EnvProtocol(RootModel[Any]):
    root: Any = Field(..., title="EnvProtocol")
    """
    The environment server's HTTP contract (src/env/protocol.ts).
    """


class SearchRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    queries: list[str]
    top_k: int | None = None
    dialect: Literal["coa", "search-r1", "autocoa", "hermes"] | None = None


class Result(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    id: str
    title: str
    contents: str
    text: str
    score: float


class SearchResponse(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    results: list[list[Result]]
    observations: list[str]


class Params(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    c: float | None = None
    alpha: float | None = None
    format_penalty: bool | None = None
    strictness: Literal["lenient", "strict"] | None = None
    tools: list[str] | None = None
    max_turns: int | None = None
    dialect: Literal["coa", "search-r1", "autocoa", "hermes", "auto"] | None = None


class GradeRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    records: list[TrajectoryRecord]
    scheme: Literal["em", "f1", "cover-em", "autocoa", "otc-ppo", "otc-grpo"]
    params: Params | None = None
    run: str | None = None


class GradeResponse(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    breakdowns: list[RewardBreakdown]


class HealthResponse(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    status: Literal["ok"]
    passages: int
    uptime_s: float
    stats: dict[str, float] | None = None


class ScanRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    records: list[TrajectoryRecord]
    params: Params | None = None


class Finding(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    rule: Literal["format_gate", "answer_in_query", "repeated_query", "answer_before_thought", "length_outlier"]
    detail: str
    start: int | None = None
    end: int | None = None


class FlaggedItem(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    index: int
    findings: list[Finding]


class ScanResponse(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    counts: dict[str, int]
    metrics: dict[str, float]
    flagged: list[FlaggedItem]
    scanned: int
    length_limit: float | None


class Alert(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
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


class AlertsResponse(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    alerts: list[Alert]
    state: dict[str, Any]


class Error(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    code: str
    message: str
    path: str | None = None


class ErrorBody(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    error: Error
