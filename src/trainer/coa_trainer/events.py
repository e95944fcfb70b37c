"""Event protocol v1 — the Python mirror of src/core/events.ts (and the record of src/core/record.ts).

EventWriter appends one JSON object per line to runs/<id>/events.jsonl (flushed per event) and echoes it on
stdout. validate_event() accepts exactly what the zod schema accepts; both are checked against
test/conformance/events.json.

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
from pathlib import Path
from typing import Any, Callable, TextIO

PROTOCOL_VERSION = 1
ALERT_KINDS = ("tool_call_explosion", "think_collapse", "all_wrong_groups", "reward_hacking", "tool_failures",
               "nan_loss", "other")
SCHEMES = ("em", "f1", "cover-em", "autocoa", "otc-ppo", "otc-grpo")
DIALECT_NAMES = ("coa", "search-r1", "autocoa", "hermes")
MAX_SAFE = 2**53 - 1
# Events that belong to one step of one stage: after a resume each (type, stage, step) appears once in events.jsonl.
STEP_EVENTS = ("metrics", "progress", "sample", "checkpoint", "eval", "alert")


class EventError(ValueError):
    pass


# ---------------------------------------------------------------- validation (mirrors zod semantics)

def _is_number(x: Any) -> bool:
    # JSON numbers; zod's z.number() rejects NaN and ±Infinity, and booleans are not numbers in JS.
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _is_int(x: Any) -> bool:
    return _is_number(x) and float(x).is_integer() and abs(x) <= MAX_SAFE


def _is_str(x: Any, min_len: int = 0) -> bool:
    return isinstance(x, str) and len(x) >= min_len


Check = Callable[[Any], bool]


def _opt(check: Check) -> Check:
    return check  # applied only when the key is present (see _fields)


def _nullable(check: Check) -> Check:
    return lambda x: x is None or check(x)


def _array(check: Check) -> Check:
    return lambda x: isinstance(x, list) and all(check(i) for i in x)


def _record(check: Check) -> Check:
    return lambda x: isinstance(x, dict) and all(isinstance(k, str) and check(v) for k, v in x.items())


def _literal(value: Any) -> Check:
    return lambda x: x == value and type(x) is type(value)


def _enum(values: tuple) -> Check:
    return lambda x: isinstance(x, str) and x in values


def _fields(obj: Any, required: dict[str, Check], optional: dict[str, Check] | None = None) -> str | None:
    if not isinstance(obj, dict):
        return "(root): expected object"
    for key, check in required.items():
        if key not in obj:
            return f"{key}: required"
        if not check(obj[key]):
            return f"{key}: invalid value {obj[key]!r}"
    for key, check in (optional or {}).items():
        # zod's .optional() accepts a missing key or undefined; JSON has no undefined, so present means checked.
        if key in obj and not check(obj[key]):
            return f"{key}: invalid value {obj[key]!r}"
    return None


def _tokens_error(t: Any) -> str | None:
    err = _fields(t, {"ids": _array(_is_int)}, {
        "loss_mask": _array(_is_number),
        "logprobs": _array(_nullable(_is_number)),
        "advantages": _array(_is_number),
        "offsets": _array(_is_int),
    })
    if err:
        return err
    for key in ("loss_mask", "logprobs", "advantages", "offsets"):
        if key in t and len(t[key]) != len(t["ids"]):
            return f"{key}: has {len(t[key])} entries but ids has {len(t['ids'])}"
    return None


def _breakdown_ok(b: Any) -> bool:
    return _fields(b, {
        "scheme": _enum(SCHEMES), "em": _is_number, "f1": _is_number, "format_ok": lambda x: isinstance(x, bool),
        "violations": _array(_is_str), "tool_calls": _is_int, "optimal_tool_calls": _nullable(_is_int),
        "r_tool": _is_number, "r_correct": _is_number, "total": _is_number,
    }) is None


def _meta_ok(m: Any) -> bool:
    return _fields(m, {}, {
        "run": _is_str, "stage": _is_str, "step": _is_int, "sample": _is_int,
        "group": lambda x: _is_str(x) or _is_number(x),
    }) is None


def record_error(r: Any) -> str | None:
    """Why a trajectory record is invalid (None if valid). Mirrors RecordSchema."""
    err = _fields(r, {"id": lambda x: _is_str(x, 1), "question": _is_str, "response": _is_str}, {
        "golden_answers": _array(_is_str), "dialect": _enum(DIALECT_NAMES), "reward": _breakdown_ok, "meta": _meta_ok,
    })
    if err:
        return err
    if "tokens" in r:
        terr = _tokens_error(r["tokens"])
        if terr:
            return f"tokens.{terr}"
    return None


_nonneg_int = lambda x: _is_int(x) and x >= 0  # noqa: E731
_finite_or_null = _nullable(_is_number)
_STAGE_STEP = {"stage": lambda x: _is_str(x, 1), "step": _nonneg_int}

_TYPES: dict[str, tuple[dict[str, Check], dict[str, Check]]] = {
    "run_started": ({"stage": lambda x: _is_str(x, 1), "config": _record(lambda _: True), "total_steps": _nonneg_int,
                     "device": _is_str, "world_size": lambda x: _is_int(x) and x > 0},
                    {"pid": _is_int, "resumed_from": _nullable(_is_int)}),
    "progress": ({**_STAGE_STEP, "total": _nonneg_int, "elapsed_s": lambda x: _is_number(x) and x >= 0,
                  "eta_s": _nullable(lambda x: _is_number(x) and x >= 0)}, {}),
    "metrics": ({**_STAGE_STEP, "values": _record(_finite_or_null)}, {}),
    "sample": ({**_STAGE_STEP, "record": lambda x: record_error(x) is None}, {}),
    "checkpoint": ({**_STAGE_STEP, "path": lambda x: _is_str(x, 1)}, {}),
    "eval": ({**_STAGE_STEP, "split": lambda x: _is_str(x, 1), "metrics": _record(_finite_or_null)}, {}),
    "alert": ({**_STAGE_STEP, "kind": _enum(ALERT_KINDS), "severity": _enum(("warning", "error")),
               "message": lambda x: _is_str(x, 1)}, {}),
    "stage_finished": ({**_STAGE_STEP, "status": _enum(("ok", "cancelled", "failed")),
                        "checkpoint": _nullable(_is_str)}, {}),
    "log": ({"level": _enum(("debug", "info", "warning", "error")), "message": _is_str}, {}),
    "error": ({"message": lambda x: _is_str(x, 1)}, {"code": _is_str, "detail": _is_str, "stage": _is_str}),
}
EVENT_TYPES = tuple(_TYPES)


def event_error(event: Any) -> str | None:
    """Why an event is invalid under protocol v1 (None if valid)."""
    base = _fields(event, {"v": _literal(PROTOCOL_VERSION), "time": _is_number, "run": lambda x: _is_str(x, 1),
                           "type": _enum(EVENT_TYPES)})
    if base:
        return base
    required, optional = _TYPES[event["type"]]
    if event["type"] == "sample" and "record" in event:
        rerr = record_error(event["record"])
        if rerr:
            return f"record.{rerr}"
    return _fields(event, required, optional)


def validate_event(event: Any) -> None:
    err = event_error(event)
    if err:
        raise EventError(err)


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

    def __init__(self, run_dir: str | Path, run_id: str | None = None, *, echo: TextIO | None = sys.stdout,
                 enabled: bool = True):
        self.run_dir = Path(run_dir)
        self.run = run_id or self.run_dir.resolve().name
        self.echo = echo
        self.enabled = enabled
        self.path = self.run_dir / "events.jsonl"
        self._file = None
        self._ino = 0
        if enabled:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            self._open()

    def _open(self) -> None:
        self._file = open(self.path, "a", encoding="utf-8")
        self._ino = os.fstat(self._file.fileno()).st_ino
        if self._file.tell() > 0:  # a line cut by a kill must not swallow the next event
            with open(self.path, "rb") as f:
                f.seek(-1, os.SEEK_END)
                if f.read(1) != b"\n":
                    self._file.write("\n")
                    self._file.flush()

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

    def emit(self, type: str, **fields: Any) -> dict:
        event = sanitize({"v": PROTOCOL_VERSION, "time": time.time(), "run": self.run, "type": type, **fields})
        validate_event(event)  # a malformed event is a trainer bug: fail loudly rather than confuse the editor
        if not self.enabled:
            return event
        line = json.dumps(event, allow_nan=False, ensure_ascii=False)
        f = self._current_file()
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno()) if type in ("stage_finished", "error", "checkpoint") else None
        if self.echo is not None:
            self.echo.write(line + "\n")
            self.echo.flush()
        return event

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
            try:
                e = json.loads(raw)
            except ValueError:  # a line cut by a kill: keep it as it is (readers report it)
                kept.append(raw if raw.endswith(b"\n") else raw + b"\n")
                continue
            if (isinstance(e, dict) and e.get("type") in STEP_EVENTS and e.get("stage") == stage
                    and isinstance(e.get("step"), int) and e["step"] > step):
                dropped += 1
            else:
                kept.append(raw if raw.endswith(b"\n") else raw + b"\n")
        if dropped == 0:
            return 0
        tmp = self.path.with_name(self.path.name + ".resume-tmp")
        with open(tmp, "wb") as f:
            f.write(data[:start])
            f.writelines(kept)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        self._current_file()  # reopen ours now
        return dropped

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> "EventWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
