"""The one builder of trajectory records (src/core/record.ts; `TrajectoryRecord` in contracts/record.py) as the trainer
writes them to rollouts, samples, evaluation and collection files and sends them to the grader: every writer passes
typed parts and gets the same JSON object, keys in one order (id, question, golden_answers, response, dialect,
tokens, meta, reward), absent parts left out — never a hand-written dict that drifts from the others."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..contracts.record import RewardBreakdown

JsonRecord = dict[str, Any]  # a record as JSON data: what a JSONL line holds and the grader reads


@dataclass(frozen=True)
class RecordTokens:
    """A record's token view: the ids, and per token what trains (loss mask), the sampler's log-probs, the GRPO
    advantage, and where each token starts in `response` (code-point offsets)."""

    ids: list[int]
    loss_mask: list[int] | list[float] | None = None
    logprobs: list[float | None] | list[float] | None = None
    advantages: list[float] | None = None
    offsets: list[int] | None = None

    def json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ids": self.ids}
        for name in ("loss_mask", "logprobs", "advantages", "offsets"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out


def trajectory_record(
    id: str,
    question: str,
    response: str,
    *,
    golden_answers: list[str] | None = None,
    dialect: str | None = None,
    tokens: RecordTokens | None = None,
    meta: dict[str, Any] | None = None,
    reward: RewardBreakdown | None = None,
    extra: dict[str, Any] | None = None,
) -> JsonRecord:
    """A record as JSON data. `extra`: fields of another format written beside the record's own (the embedded
    benchmark's split, hops, known)."""
    parts = (
        ("id", id),
        ("question", question),
        ("golden_answers", golden_answers),
        ("response", response),
        ("dialect", dialect),
        ("tokens", tokens.json() if tokens is not None else None),
        ("meta", meta),
        ("reward", reward_json(reward) if reward is not None else None),
    )
    rec: JsonRecord = {key: value for key, value in parts if value is not None}  # absent parts left out
    return rec | extra if extra else rec


def reward_json(reward: RewardBreakdown) -> dict[str, Any]:
    """A grade breakdown as the grader sent it: every field, nulls included (optimal_tool_calls is required nullable,
    and the core's scanners read it), and whatever the grader added beside the protocol's fields."""
    return reward.model_dump(mode="json")


def grading_view(rec: JsonRecord) -> JsonRecord:
    """What the grader needs of a record (no tokens, no meta): a collection batch's records are graded by this."""
    return {k: rec[k] for k in ("id", "question", "golden_answers", "response", "dialect") if k in rec}
