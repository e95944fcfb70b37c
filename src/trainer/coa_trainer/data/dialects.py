"""Tag strings of the trajectory dialects, read from schemas/dialects.json (generated from src/core/dialects.ts)."""

from __future__ import annotations

from dataclasses import dataclass

from ..contracts.schemas import dialect_table
from ..contracts.tables import JsonAction, PerToolAction, TagAnswer


@dataclass(frozen=True)
class Tags:
    """The tag strings one dialect uses for the default `search` tool."""

    name: str
    think_open: str
    think_close: str
    action_open: str
    action_close: str
    obs_open: str
    obs_close: str
    answer_open: str | None  # None: the dialect answers in \\boxed{…}
    answer_close: str | None
    json_actions: bool = False  # a tool call is a JSON object {"name", "arguments"} inside the action tags (Hermes)


def all_tags() -> list[str]:
    """Every tag of every dialect: each becomes one special token."""
    return list(dialect_table().all_tags)


def dialect_names() -> list[str]:
    return list(dialect_table().names)


def tags(name: str, tool: str = "search") -> Tags:
    table = dialect_table().dialects
    if name not in table:
        raise ValueError(f"unknown dialect {name!r} (known: {', '.join(table)})")
    d = table[name]
    if isinstance(d.action, PerToolAction):
        a_open, a_close = f"<{tool}>", f"</{tool}>"
    else:
        # fixed (<begin_search>) or json (<tool_call>): the same pair for every tool
        a_open, a_close = d.action.tags.open, d.action.tags.close
    a_tags = d.answer.tags if isinstance(d.answer, TagAnswer) else None  # None: \boxed{…}
    return Tags(
        name=name,
        think_open=d.think.open,
        think_close=d.think.close,
        action_open=a_open,
        action_close=a_close,
        obs_open=d.observation.open,
        obs_close=d.observation.close,
        answer_open=a_tags.open if a_tags else None,
        answer_close=a_tags.close if a_tags else None,
        json_actions=isinstance(d.action, JsonAction),
    )
