# Generated from src/core/stages.ts (StageInfoSchema) by scripts/gen-python-contracts.mjs (datamodel-code-generator): do not edit.

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class StageInfo(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    id: str
    label: str
    description: str
    kind: Literal["pretrain", "sft", "rl", "collect"]
    loss: Literal["lm", "pairwise", "grpo"] | None
    trains_observations: bool
    observations: Literal["none", "teacher", "simulated", "environment"]
    from_: str | None = Field(None, alias="from")
    trains: str | None = None
