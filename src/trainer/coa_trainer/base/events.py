"""Event protocol v1: EventWriter appends one JSON object per line to runs/<id>/events.jsonl (flushed per event)
and echoes it on stdout. Events and records are validated against the JSON Schemas generated from the core
(src/core/events.ts, src/core/record.ts → schemas/events.schema.json, schemas/record.schema.json); both languages
are checked against test/conformance/events.json.

Exactly once across resume (docs/training.md, "Stopping, killing, resuming"): a checkpoint records the events file's size
(`resume_marks`); a stage resumed from it drops its own step events written after that point (`supersede`: the
steps it is about to redo), by writing the file anew and renaming it over the old one. Readers following the file
see a new inode and start again from the top (src/core/eventTail.ts reports a reset); writers still holding the old
file reopen it before their next event."""

from __future__ import annotations

import json
import math
import os
import sys
import time
from functools import lru_cache
from pathlib import Path
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TextIO

import pydantic

from ..contracts.events import (
    AlertEvent,
    CheckpointEvent,
    ErrorEvent,
    EvalEvent,
    HistogramEvent,
    LogEvent,
    MetricsEvent,
    ProgressEvent,
    RunStartedEvent,
    SampleEvent,
    StageFinishedEvent,
    TrainerEvent,
)
from ..contracts.run_config import RunConfig
from ..contracts.schemas import load_schema_file

if TYPE_CHECKING:  # jsonschema is imported when an event is first checked, not with this module
    from jsonschema import ValidationError
    from jsonschema.protocols import Validator

PROTOCOL_VERSION = 1
# One event, as the class of its type generated from src/core/events.ts (contracts/events.py): what the writer takes
# and a reader gets back.
Event = (
    RunStartedEvent
    | ProgressEvent
    | MetricsEvent
    | SampleEvent
    | CheckpointEvent
    | EvalEvent
    | AlertEvent
    | StageFinishedEvent
    | LogEvent
    | ErrorEvent
    | HistogramEvent
)
# Events that belong to one step of one stage: after a resume each (type, stage, step) appears once in events.jsonl.
STEP_EVENTS = ("metrics", "progress", "sample", "checkpoint", "eval", "alert", "histogram")


class EventError(ValueError):
    pass


def _same_length_as(
    validator: Validator, spec: dict[str, list[str]], instance: object, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    """The `x-same-length-as` keyword of the generated schemas ({"ids": [keys…]}: each key's array is as long
    as ids); JSON Schema cannot compare lengths, so the core exports the rule as a keyword of its own."""
    from jsonschema import ValidationError

    if not isinstance(instance, dict):
        return
    for ref, keys in spec.items():
        for key in keys:
            if (
                isinstance(instance.get(key), list)
                and isinstance(instance.get(ref), list)
                and len(instance[key]) != len(instance[ref])
            ):
                yield ValidationError(
                    f"{key} has {len(instance[key])} entries but {ref} has {len(instance[ref])}", path=[key]
                )


@lru_cache(maxsize=None)
def _validator(schema_file: str, event_type: str | None = None) -> Validator:
    """A compiled validator for a generated schema (for events: the branch of one event type, for clear errors)."""
    from jsonschema import Draft202012Validator, validators

    schema = load_schema_file(schema_file)
    if event_type is not None:
        schema = {"$schema": _events_schema().dialect, **_branches()[event_type]}
    cls = validators.extend(Draft202012Validator, {"x-same-length-as": _same_length_as})
    return cls(schema)


class _EventsSchema(pydantic.BaseModel):
    """schemas/events.schema.json: its JSON Schema dialect and one branch per event type (each kept as the schema
    jsonschema checks an event of that type against)."""

    model_config = pydantic.ConfigDict(frozen=True, extra="ignore")
    dialect: str = pydantic.Field(alias="$schema")
    branches: list[dict[str, Any]] = pydantic.Field(alias="oneOf")


class _Const(pydantic.BaseModel):
    const: str


class _TypeProperty(pydantic.BaseModel):
    type: _Const


class _Branch(pydantic.BaseModel):
    """What a branch says of its event's type: properties.type.const."""

    properties: _TypeProperty


@lru_cache(maxsize=None)
def _events_schema() -> _EventsSchema:
    return _EventsSchema.model_validate(load_schema_file("events.schema.json"))


@lru_cache(maxsize=None)
def _branches() -> dict[str, dict[str, Any]]:
    """Each event type's branch of the schema."""
    return {_Branch.model_validate(b).properties.type.const: b for b in _events_schema().branches}


def _first_error(validator: Validator, value: Any) -> str | None:
    from jsonschema.exceptions import best_match

    err = best_match(validator.iter_errors(value))
    if err is None:
        return None
    where = ".".join(str(p) for p in err.absolute_path) or "(root)"
    return f"{where}: {err.message}"


def record_error(r: object) -> str | None:
    """Why a trajectory record is invalid (None if valid), by schemas/record.schema.json."""
    return _first_error(_validator("record.schema.json"), r)


def event_error(event: object) -> str | None:
    """Why an event is invalid under protocol v1 (None if valid), by schemas/events.schema.json."""
    if not isinstance(event, dict):
        return "(root): expected object"
    kind = event.get("type")
    if kind not in _branches():
        return f"type: unknown event type {kind!r} (expected one of {', '.join(_branches())})"
    return _first_error(_validator("events.schema.json", kind), event)


def validate_event(event: object) -> None:
    err = event_error(event)
    if err:
        raise EventError(err)


def read_event(value: object) -> Event:
    """An event read as JSON data (a line parsed, a vector): checked against the schema (bounds and lengths the
    classes leave out: an EventError naming the field), then made the class of its type."""
    validate_event(value)
    return TrainerEvent.model_validate(value).root


def event_json(event: Event) -> dict[str, Any]:
    """An event as its line holds it: v, time, run and type first, then the fields it was given in its class's order
    (a field never given stays out, an optional one given None is written null), NaN/inf written null."""
    fields = event.model_dump(exclude_unset=True)
    head = {"v": event.v, "time": event.time, "run": event.run, "type": event.type}
    return sanitize({**head, **{k: v for k, v in fields.items() if k not in head}})


class EventHead(pydantic.BaseModel):
    """What an events.jsonl line is sorted by when a whole file is scanned (resume, a finished stage's step): its type,
    stage, step and status, read strictly — a line where one of them is of another JSON type is no head, as a line
    that is not a JSON object. The rest of the line is not checked (read_event does that)."""

    model_config = pydantic.ConfigDict(frozen=True, extra="ignore", strict=True)
    type: str | None = None
    stage: str | None = None
    step: int | None = None
    status: str | None = None


def event_head(line: bytes | str) -> EventHead | None:
    """The head of an events.jsonl line, or None (not JSON, not an object, a head field of another type)."""
    try:
        return EventHead.model_validate_json(line)
    except pydantic.ValidationError:
        return None


def parse_event_line(line: str) -> dict:
    """Parse one events.jsonl line; raises EventError (NaN/Infinity literals are not JSON)."""

    def no_constants(name: str) -> Any:
        raise EventError(f"invalid JSON: {name} is not a JSON number")

    try:
        value = json.loads(line, parse_constant=no_constants)
    except json.JSONDecodeError as e:
        raise EventError(f"invalid JSON: {e.msg}") from e
    validate_event(value)
    return value


# ---------------------------------------------------------------- writing


def sanitize(value: Any) -> Any:
    """NaN/±inf → None (JSON has no NaN); tensors/numpy scalars → Python numbers; tuples → lists."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): sanitize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [sanitize(v) for v in value]
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", 0) == 0:
        return sanitize(value.item())
    return value


class EventWriter:
    """Appends validated events to <run_dir>/events.jsonl and echoes them on stdout.

    Only one process writes (rank 0 under DDP): other ranks get enabled=False and emit nothing."""

    def __init__(
        self, run_dir: str | Path, run_id: str | None = None, *, echo: TextIO | None = sys.stdout, enabled: bool = True
    ):
        self.run_dir = Path(run_dir)
        self.run = run_id or self.run_dir.resolve().name
        self.echo = echo
        self.enabled = enabled
        self.path = self.run_dir / "events.jsonl"
        self._file = None
        self._ino = 0
        self.sinks: Any = None  # base/metric_sinks.MetricSinks: W&B / TensorBoard, fed every event written
        if enabled:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            self._open()

    def _open(self) -> None:
        from .rundir import check_inside

        check_inside(self.run_dir, self.path)  # never append through a link to a file outside the run (base/rundir.py)
        self._cut_torn_line()
        self._file = open(self.path, "a", encoding="utf-8")
        self._ino = os.fstat(self._file.fileno()).st_ino

    def _cut_torn_line(self) -> None:
        """A last line without its newline is an event cut by a kill or a full disk: it never was an event, so it
        goes (kept, it would sit in the file as an unreadable line through every resume)."""
        if not self.path.is_file():
            return
        with open(self.path, "r+b") as f:
            size = f.seek(0, os.SEEK_END)
            if size == 0:
                return
            f.seek(size - 1)
            if f.read(1) == b"\n":
                return
            back = min(size, 1 << 20)
            f.seek(size - back)
            tail = f.read(back)
            cut = tail.rfind(b"\n")
            f.truncate(size - back + cut + 1 if cut >= 0 else (0 if back == size else size))
            f.flush()
            os.fsync(f.fileno())

    def _current_file(self) -> Any:
        """The open file, reopened when another writer replaced events.jsonl (a resumed stage's supersede)."""
        assert self._file is not None
        try:
            replaced = os.stat(self.path).st_ino != self._ino
        except FileNotFoundError:
            replaced = True
        if replaced:
            self._file.close()
            self._open()
        return self._file

    def emit(self, event: Event) -> dict[str, Any]:
        """Writes the event (the class of its type), stamped with this run and the time now; returns it as written."""
        stamped = event.model_copy(update={"time": time.time(), "run": self.run})
        data = event_json(stamped)
        validate_event(data)  # a malformed event is a trainer bug: fail loudly rather than confuse the editor
        if not self.enabled:
            return data
        line = json.dumps(data, allow_nan=False, ensure_ascii=False)
        f = self._current_file()
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno()) if event.type in ("stage_finished", "error", "checkpoint") else None
        if self.echo is not None:
            try:
                self.echo.write(line + "\n")
                self.echo.flush()
            except (OSError, ValueError):
                # The echo cannot take more — its reader went away (a closed pipe), stdout was closed, or it is a
                # full disk (`> /dev/full`), any write error: the events file is the record, so the stage goes on
                # without an echo instead of dying with its work unsaved.
                echo, self.echo = self.echo, None
                if echo is getattr(sys, "stdout", None) or echo is sys.__stdout__:
                    from .lifecycle import stdout_gone

                    stdout_gone()
        if self.sinks is not None:
            self.sinks.handle(stamped)
        return data

    def attach_logging(self, config: RunConfig) -> None:
        """Also log to W&B / TensorBoard as the run config's `logging` section asks (rank 0 only: the writer that is
        enabled)."""
        if not self.enabled or self.sinks is not None:
            return
        from .config import config_dict
        from .metric_sinks import metric_sinks

        self.sinks = metric_sinks(
            config,
            self.run_dir,
            self.run,
            config_dict(config),
            lambda message: self.emit(LogEvent(level="warning", message=f"logging: {message}")),
        )

    def resume_marks(self) -> dict:
        """What a checkpoint records so that a resume from it can drop the events written after it."""
        if not self.enabled:
            return {}
        return {"events_offset": self._current_file().tell()}

    def supersede(self, stage: str, step: int, offset: int | None) -> int:
        """Drop `stage`'s step events (STEP_EVENTS) with a step after `step` written at or after byte `offset` — the
        steps a run resumed from that checkpoint does again. Everything else stays, in order. Atomic: a new file,
        fsynced, renamed over events.jsonl. Returns how many events were dropped."""
        if not self.enabled or not self.path.is_file():
            return 0
        with open(self.path, "rb") as f:
            data = f.read()
        start = min(max(offset or 0, 0), len(data))
        start = data.rfind(b"\n", 0, start) + 1  # a whole line (an offset is always one; be safe)
        kept: list[bytes] = []
        dropped = 0
        for raw in data[start:].splitlines(keepends=True):
            head = event_head(raw)  # None: a line cut by a kill, kept as it is (readers report it)
            if (
                head is not None
                and head.type in STEP_EVENTS
                and head.stage == stage
                and head.step is not None
                and head.step > step
            ):
                dropped += 1
            else:
                kept.append(raw if raw.endswith(b"\n") else raw + b"\n")
        if dropped == 0:
            return 0
        tmp = self.path.with_name(self.path.name + ".resume-tmp")
        tmp.unlink(missing_ok=True)  # a link left under that name is removed, never written through
        with open(tmp, "xb") as f:
            f.write(data[:start])
            f.writelines(kept)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        self._current_file()  # reopen ours now
        return dropped

    def close(self) -> None:
        if self.sinks is not None:
            sinks, self.sinks = self.sinks, None
            sinks.close()
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> "EventWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
