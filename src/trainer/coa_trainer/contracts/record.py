# Generated from src/core/record.ts (RecordSchema) by scripts/gen-python-contracts.mjs (datamodel-code-generator): do not edit.

from __future__ import annotations

from typing import Any, Dict, Literal

from pydantic import BaseModel, ConfigDict, Field


class RecordTokens(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    __annotations__ = {
        "__pydantic_extra__": Dict[str, Any],
    }
    ids: list[int]
    loss_mask: list[float] | None = None
    logprobs: list[float | None] | None = None
    advantages: list[float] | None = None
    offsets: list[int] | None = None


class RewardBreakdown(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    __annotations__ = {
        "__pydantic_extra__": Dict[str, Any],
    }
    scheme: Literal["em", "f1", "cover-em", "autocoa", "otc-ppo", "otc-grpo"]
    em: float
    f1: float
    format_ok: bool
    violations: list[str]
    tool_calls: int
    optimal_tool_calls: int | None
    r_tool: float
    r_correct: float
    total: float


class RecordMeta(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    __annotations__ = {
        "__pydantic_extra__": Dict[str, Any],
    }
    run: str | None = None
    stage: str | None = None
    step: int | None = None
    sample: int | None = None
    group: str | float | None = None
    question_key: str | None = None


class TrajectoryRecord(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    __annotations__ = {
        "__pydantic_extra__": Dict[str, Any],
    }
    id: str
    question: str
    golden_answers: list[str] | None = None
    response: str
    dialect: Literal["coa", "search-r1", "autocoa", "hermes"] | None = None
    tokens: RecordTokens | None = Field(None, title="RecordTokens")
    reward: RewardBreakdown | None = Field(None, title="RewardBreakdown")
    meta: RecordMeta | None = Field(None, title="RecordMeta")
