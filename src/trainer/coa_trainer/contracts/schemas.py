"""Finds the JSON artefacts generated from the TypeScript core (scripts/gen-schemas.ts): the run-config, event and
record schemas, the dialect table and prompts, the rule codes. They are the single source of truth for config
defaults, tag strings, the event protocol and the format codes."""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1]
REPO_ROOT = PACKAGE_DIR.parents[2]  # src/trainer/coa_trainer -> repo root


class SchemaMissing(RuntimeError):
    pass


def schemas_dir() -> Path:
    """COA_SCHEMAS_DIR, else <repo>/schemas."""
    return Path(os.environ.get("COA_SCHEMAS_DIR") or REPO_ROOT / "schemas")


@lru_cache(maxsize=None)
def load_schema_file(name: str) -> dict:
    path = schemas_dir() / name
    if not path.is_file():
        raise SchemaMissing(
            f"{path} not found: it is generated from src/core by `npm run build` (scripts/gen-schemas.ts); "
            "or set COA_SCHEMAS_DIR"
        )
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def run_config_schema() -> dict:
    return load_schema_file("run-config.schema.json")


def dialect_table() -> dict:
    return load_schema_file("dialects.json")


def dialect_prompts() -> dict:
    """{dialect: {"system": str | None, "user": str with {question}}} from src/core/prompts.ts."""
    return load_schema_file("prompts.json")


def codes_table() -> dict:
    """{"rules": {code: {title, severity, toolCall, …}}, "record_rules": …, "tool_call_codes": [...]} (src/core/codes.ts)."""
    return load_schema_file("codes.json")


def search_table() -> dict:
    """{"stopwords": [...]}: the environment server's BM25 stop words (src/env/tokenize.ts)."""
    return load_schema_file("search.json")


def stage_table() -> dict:
    """{"stages": [{id, label, kind, from?, trains?, …}], "pipeline": {…}, "results": [{id, stage, mode, …}]}, in
    pipeline order (src/core/stages.ts)."""
    return load_schema_file("stages.json")


def trainable_stages() -> tuple[str, ...]:
    """What `train --stage` accepts, in pipeline order (a row with `trains` is a labelled run of another stage)."""
    return tuple(s["id"] for s in stage_table()["stages"] if "trains" not in s)


def rl_stages() -> tuple[str, ...]:
    """Stage ids (labelled runs included) trained by GRPO with rollouts."""
    return tuple(s["id"] for s in stage_table()["stages"] if s["kind"] == "rl")
