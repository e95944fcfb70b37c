"""The lines `coa data prepare questions|sft|pairs` writes (src/core/data/questions.ts QuestionRecord, sft.ts
SftRecord, pairs.ts PairRecord), typed: each line is read into one of these once, where the prepared file is read
(data/userdata.py), and the stages pass the objects on. Fields the trainer does not read (origin, reward) are left
out; a line the core did not write in this shape is a DataError naming its file and line."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pydantic import TypeAdapter, ValidationError

from ..base.errors import CoaError
from ..contracts.error_code import ErrorCode


class DataError(CoaError):
    """Bad user data; the message is the core's `FILE:LINE:COL: error: FIELD: message` line."""

    code = ErrorCode.bad_data


@dataclass(frozen=True)
class QuestionSourceMeta:
    source_id: str | None = None  # the id in the user's file, when the file repeats it and the row's id was qualified


@dataclass(frozen=True)
class PreparedQuestion:
    id: str
    question: str
    golden_answers: list[str]
    data_source: str | None = None
    meta: QuestionSourceMeta | None = None


@dataclass(frozen=True)
class SftSegment:
    """A block of a response as the core's scanner cut it: its kind and code-point span [start, end)."""

    kind: str
    start: int
    end: int


@dataclass(frozen=True)
class SftRecord:
    """A trajectory for SFT-2/3: the response with its segments, tool calls and the core's flags."""

    id: str
    question: str
    golden_answers: list[str]
    dialect: str
    response: str
    segments: list[SftSegment]
    tool_calls: int
    prompt: str | None = None  # the dataset's own prompt text, when it had one
    correct: bool | None = None  # None: no golden answers to grade by
    format_ok: bool = True


@dataclass(frozen=True)
class PairSide:
    id: str
    dialect: str
    response: str
    segments: list[SftSegment]
    tool_calls: int
    correct: bool | None = None


@dataclass(frozen=True)
class PairRecord:
    """An SFT-1 pair: a question, the chosen and the rejected trajectory, and which side of act / don't act each is
    (`kind`: tool-vs-notool, …; `act`: the chosen side calls a tool)."""

    id: str
    question: str
    golden_answers: list[str]
    kind: str
    act: bool
    chosen: PairSide
    rejected: PairSide
    prompt: str | None = None


T = TypeVar("T")


def read_prepared(path: Path, shape: type[T]) -> list[T]:
    """Every line of a prepared file as `shape` (one validation per line, at load)."""
    adapter = TypeAdapter(shape)
    out: list[T] = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                out.append(adapter.validate_json(line))
            except ValidationError as e:
                err = e.errors()[0]
                field = ".".join(str(p) for p in err["loc"]) or "record"
                raise DataError(f"{path}:{n}:1: error: {field}: {err['msg']}") from None
    return out
