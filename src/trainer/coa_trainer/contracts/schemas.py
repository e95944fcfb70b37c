"""Reads the JSON artefacts generated from the TypeScript core (scripts/gen-schemas.ts) that the package carries:
the run-config, event and record schemas, the dialect table and prompts, the rule codes, the stage table. They are
the single source of truth for config defaults, tag strings, the event protocol and the format codes."""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

import pydantic

from .stage_info import StageInfo
from .tables import CodesTable, DialectPrompt, DialectTable, RewardsTable, SearchTable

JSON_DIR = Path(__file__).resolve().parent / "json"  # written by `npm run build`, carried by the package


class SchemaMissing(RuntimeError):
    pass


def schemas_dir() -> Path:
    """COA_SCHEMAS_DIR, else the package's own copy (coa_trainer/contracts/json)."""
    return Path(os.environ.get("COA_SCHEMAS_DIR") or JSON_DIR)


@lru_cache(maxsize=None)
def load_schema_file(name: str) -> dict:
    path = schemas_dir() / name
    if not path.is_file():
        raise SchemaMissing(
            f"{path} not found: it is generated from src/core by `npm run build` (scripts/gen-schemas.ts writes it "
            "into the package, coa_trainer/contracts/json); or set COA_SCHEMAS_DIR"
        )
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def run_config_schema() -> dict:
    return load_schema_file("run-config.schema.json")


@lru_cache(maxsize=None)
def dialect_table() -> DialectTable:
    """The dialects' tags, names and tag list, the tokenizer's layout words and the question markers
    (src/core/dialects.ts), typed."""
    return DialectTable.model_validate(load_schema_file("dialects.json"))


@lru_cache(maxsize=None)
def dialect_prompts() -> dict[str, DialectPrompt]:
    """{dialect: its system turn (None: none), user turn and CoT user turn, each with {question}}
    (src/core/prompts.ts)."""
    return {name: DialectPrompt.model_validate(p) for name, p in load_schema_file("prompts.json").items()}


@lru_cache(maxsize=None)
def codes_table() -> CodesTable:
    """The format rules by code (title, severity, toolCall, …), the record rules and the codes of malformed tool calls
    (src/core/codes.ts), typed."""
    return CodesTable.model_validate(load_schema_file("codes.json"))


@lru_cache(maxsize=None)
def search_table() -> SearchTable:
    """The environment server's BM25 stop words (src/env/tokenize.ts)."""
    return SearchTable.model_validate(load_schema_file("search.json"))


class _Histogram(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="ignore")  # its meaning: read by the editor, not here
    edges: tuple[float, ...]


@lru_cache(maxsize=None)
def _histograms() -> dict[str, _Histogram]:
    return pydantic.TypeAdapter(dict[str, _Histogram]).validate_python(load_schema_file("histograms.json"))


def histogram_edges(name: str) -> list[float]:
    """The bin edges of a step histogram (`histogram` events): src/core/metrics.ts HISTOGRAMS."""
    return list(_histograms()[name].edges)


@lru_cache(maxsize=None)
def rewards_table() -> RewardsTable:
    """The reward schemes, and those whose reward of one answer needs the other answers to its question
    (src/core/rewards.ts GROUP_SCHEMES), typed."""
    return RewardsTable.model_validate(load_schema_file("rewards.json"))


def stage_table() -> dict:
    """{"stages": [{id, label, kind, from?, trains?, …}], "pipeline": {…}, "results": [{id, stage, mode, …}]}, in
    pipeline order (src/core/stages.ts)."""
    return load_schema_file("stages.json")


class _StageTable(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="ignore")  # the pipeline and results tables: read elsewhere
    stages: tuple[StageInfo, ...]


@lru_cache(maxsize=None)
def stage_rows() -> tuple[StageInfo, ...]:
    """Every stage of the table (labelled runs such as rl2-otc included), in pipeline order, typed (the class
    generated from the core's StageInfoSchema)."""
    return _StageTable.model_validate(stage_table()).stages


def stage_info(stage: str) -> StageInfo:
    """A stage's row of the table, typed (its kind, loss, whether observations are trained …)."""
    for row in stage_rows():
        if row.id == stage:
            return row
    raise KeyError(f"stage {stage!r} is not in the stage table (src/core/stages.ts)")


def trainable_stages() -> tuple[str, ...]:
    """What `train --stage` accepts, in pipeline order (a row with `trains` is a labelled run of another stage)."""
    return tuple(s.id for s in stage_rows() if s.trains is None)


def rl_stages() -> tuple[str, ...]:
    """Stage ids (labelled runs included) trained by GRPO with rollouts."""
    return tuple(s.id for s in stage_rows() if s.kind == "rl")
