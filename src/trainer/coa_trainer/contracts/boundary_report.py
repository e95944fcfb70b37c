# Generated from src/core/boundary.ts (BoundaryReportSchema) by scripts/gen-python-contracts.mjs (datamodel-code-generator): do not edit.

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class BoundarySummary(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    questions: int
    classes: dict[Literal["no-search", "over-search", "needed-search", "under-search", "unreachable"], int]
    over_search_rate: float | None
    under_search_rate: float | None
    em_closed_book: float | None
    """
    EM with search refused (each query answered by the model itself, asked it alone)
    """
    em: float | None
    """
    EM with search
    """
    tc: float | None
    """
    tool calls per question with search
    """
    min_tc: float | None
    """
    estimated fewest tool calls per question, over the questions where one is known
    """
    min_tc_questions: int
    """
    questions with a known minimum (not unreachable)
    """
    tc_over_min: float | None
    """
    tool calls minus the minimum per question, over the same questions
    """
    avoidable_share: float | None
    """
    share of the searches of those questions that the minimum does without
    """


class BoundaryTruth(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    class_agreement: float | None
    min_tc_meter: float | None
    """
    the meter's minimum, over the questions where it has one
    """
    min_tc_truth: float | None
    """
    the truth's minimum over the same questions
    """
    min_tc_truth_all: float | None
    optimal_tc: float | None
    """
    the benchmark's optimum over all questions
    """
    optimal_tc_same: float | None
    """
    the benchmark's optimum over the questions where the meter has a minimum
    """
    optimal_agreement: float | None
    """
    share of those questions whose estimated minimum equals the benchmark's optimum
    """
    confusion: dict[str, dict[str, int]]
    """
    truth class → meter class → questions
    """


class BoundaryResponses(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    closed_book: str
    search: str
    minimal: str | None = None
    forced: str | None = None


class BoundaryTruthRow(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    class_: Literal["no-search", "over-search", "needed-search", "under-search", "unreachable"] = Field(
        ..., alias="class"
    )
    min_calls: int
    """
    facts of the question this checkpoint does not answer closed-book
    """
    facts_known: list[bool]
    optimal: int | None
    """
    the benchmark's optimum: facts not in the pretraining text
    """


class BoundaryRow(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    id: str
    question: str
    golden_answers: list[str]
    group: str | None
    class_: Literal["no-search", "over-search", "needed-search", "under-search", "unreachable"] = Field(
        ..., alias="class"
    )
    closed_book: float
    """
    share of closed-book samples right (greedy: 0 or 1)
    """
    right: float
    searched: float
    tool_calls: float
    min_calls: int | None
    reachable: bool | None
    responses: BoundaryResponses = Field(..., title="BoundaryResponses")
    """
    the trajectories that decided the class: minimal (the fewest searches found), forced (one more search)
    """
    truth: BoundaryTruthRow | None


class BoundaryReport(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    version: Literal[1]
    run: str | None
    stage: str
    step: int
    split: str
    checkpoint: str
    samples: int
    temperature: float
    seconds: float
    summary: BoundarySummary = Field(..., title="BoundarySummary")
    truth: BoundaryTruth | None
    rows: list[BoundaryRow]
