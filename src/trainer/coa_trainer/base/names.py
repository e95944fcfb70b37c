"""The naming rule of run ids, stages and labels, read from schemas/names.json (generated from src/core/names.ts by
scripts/gen-schemas.ts): one rule, owned by the core, so a label can never be a path that leaves the run directory."""

from __future__ import annotations

import re
from functools import cache

from ..contracts.schemas import load_schema_file


@cache
def _rule() -> tuple[re.Pattern[str], str]:
    rule = load_schema_file("names.json")
    return re.compile(rule["pattern"]), rule["description"]


def is_valid_name(value: str) -> bool:
    return _rule()[0].fullmatch(value) is not None


def name_error(value: str, what: str = "") -> str | None:
    """Why `value` is not a valid name (None when it is)."""
    if is_valid_name(value):
        return None
    prefix = f"{what} " if what else ""
    return f"{prefix}{value!r} is not a valid name: {_rule()[1]}"
