# Generated from src/core's dialect, prompt, code, reward and stage tables, src/env/tokenize.ts (scripts/gen-schemas.ts) by scripts/gen-python-contracts.mjs (datamodel-code-generator): do not edit.

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel


class Tables(RootModel[Any]):
    root: Any = Field(..., title="Tables")
    """
    The core tables the trainer reads typed: dialects.json, prompts.json (per dialect), search.json, codes.json, rewards.json, stages.json's results.
    """


class TagPair(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    open: str
    close: str


class PerToolAction(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    style: Literal["per-tool"]


class FixedAction(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    style: Literal["fixed"]
    tool: str
    tags: TagPair = Field(..., title="TagPair")


class JsonAction(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    style: Literal["json"]
    tags: TagPair = Field(..., title="TagPair")


class TagAnswer(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    style: Literal["tag"]
    tags: TagPair = Field(..., title="TagPair")


class BoxedAnswer(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    style: Literal["boxed"]


class Dialect(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    name: Literal["coa", "search-r1", "autocoa", "hermes"]
    description: str
    think: TagPair = Field(..., title="TagPair")
    action: PerToolAction | FixedAction | JsonAction
    observation: TagPair = Field(..., title="TagPair")
    answer: TagAnswer | BoxedAnswer
    actionsInsideThink: bool
    implicitThinkOpen: bool


class DialectTable(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    dialects: dict[str, Dialect]
    names: list[Literal["coa", "search-r1", "autocoa", "hermes"]]
    default_tools: list[str]
    all_tags: list[str]
    tokenizer_words: list[str]
    question_markers: list[str]


class DialectPrompt(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    system: str | None
    user: str
    cot: str


class SearchTable(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    stopwords: list[str]


class RuleInfo(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    code: str
    title: str
    severity: Literal["error", "warning"]
    strictOnly: bool
    completeOnly: bool
    toolCall: bool


class RecordRule(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    code: str
    title: str
    severity: Literal["error", "warning"]


class CodesTable(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    rules: dict[str, RuleInfo]
    record_rules: dict[str, RecordRule]
    tool_call_codes: list[str]


class RewardsTable(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    schemes: list[Literal["em", "f1", "cover-em", "autocoa", "otc-ppo", "otc-grpo"]]
    group_schemes: list[Literal["em", "f1", "cover-em", "autocoa", "otc-ppo", "otc-grpo"]]


class ResultSetting(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    id: str
    label: str
    stage: str
    mode: Literal["no-tool", "workflow", "agent"]
    description: str
