"""The naming rule of run ids, stages and labels, read from schemas/names.json (generated from src/core/names.ts by
scripts/gen-schemas.ts): one rule, owned by the core, so a label can never be a path that leaves the run directory."""

from __future__ import annotations

import re
from functools import cache

import pydantic

from ..contracts.schemas import load_schema_file


class _NameRule(pydantic.BaseModel):
    """schemas/names.json (src/core/names.ts NAME_RULE), read once."""

    model_config = pydantic.ConfigDict(frozen=True, extra="ignore")
    pattern: str
    description: str


@cache
def _rule() -> _NameRule:
    return _NameRule.model_validate(load_schema_file("names.json"))


@cache
def _pattern() -> re.Pattern[str]:
    return re.compile(_rule().pattern)


def is_valid_name(value: str) -> bool:
    return _pattern().fullmatch(value) is not None


def name_error(value: str, what: str = "") -> str | None:
    """Why `value` is not a valid name (None when it is)."""
    if is_valid_name(value):
        return None
    prefix = f"{what} " if what else ""
    return f"{prefix}{value!r} is not a valid name: {_rule().description}"
