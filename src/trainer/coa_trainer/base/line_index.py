"""The line index beside a stage's record files (rollouts.coa.jsonl → rollouts.index.jsonl): one JSON line per write
of one step's records, {"step", "line", "offsets", "end"}, so the editor reads a step's rows at their byte offsets
instead of reading (or searching) the file. The format is the core's (src/core/lineIndex.ts): its name rule is read
from schemas/line-index.json, an entry is the class generated from its schema (contracts/line_index.py). Every writer of a stage's rollouts or flagged records appends
through `append_step`, and a resumed stage cuts both files back with `truncate`.

The index always describes its whole file: before appending, an index that does not end where the file ends (a file
written before indexes existed, a write cut short, an edit in the record view) is rebuilt from the file's lines."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

import pydantic

from ..contracts.line_index import LineIndexEntry
from ..contracts.schemas import load_schema_file


class _IndexName(pydantic.BaseModel):
    """How an indexed file's name becomes its index's (schemas/line-index.json: the core's LINE_INDEX_REPLACES and
    LINE_INDEX_SUFFIX; the file's `entry` schema is the generated LineIndexEntry's)."""

    model_config = pydantic.ConfigDict(frozen=True, extra="ignore")
    replaces: tuple[str, ...]
    suffix: str


@cache
def _naming() -> _IndexName:
    return _IndexName.model_validate(load_schema_file("line-index.json"))


def index_path(path: Path) -> Path:
    """rollouts.coa.jsonl → rollouts.index.jsonl (the core's LINE_INDEX_REPLACES / LINE_INDEX_SUFFIX)."""
    naming = _naming()
    name = path.name
    for ending in naming.replaces:
        if name.endswith(ending):
            name = name[: -len(ending)]
            break
    return path.with_name(name + naming.suffix)


def append_step(path: Path, records: Iterable[dict[str, Any]]) -> None:
    """Appends one step's records to `path` (a JSON line each) and their entry to its index (the step is the
    records' meta.step; were they of several steps, each run of one step gets its entry)."""
    records = list(records)
    if not records:
        return
    lines = [(json.dumps(r, ensure_ascii=False) + "\n").encode("utf-8") for r in records]
    path.parent.mkdir(parents=True, exist_ok=True)
    line, pos = _ready(path)
    entries: list[LineIndexEntry] = []
    for r, b in zip(records, lines):
        _add_line(entries, _meta_step(r), line, pos, len(b))
        line += 1
        pos += len(b)
    with open(path, "ab") as f:
        f.write(b"".join(lines))
    with open(index_path(path), "a", encoding="utf-8") as f:
        f.writelines(_entry_line(e) for e in entries)


def _add_line(entries: list[LineIndexEntry], step: int | None, line: int, offset: int, length: int) -> None:
    """A line of `length` bytes at `offset` (line number `line`) into the entries: the last entry grows when the line
    continues its step right after it, a new entry starts otherwise; a line without a step is in none."""
    if step is None:
        return
    last = entries[-1] if entries else None
    if last is not None and last.step == step and last.end == offset:
        last.offsets.append(offset)
        last.end = offset + length
    else:
        entries.append(LineIndexEntry(step=step, line=line, offsets=[offset], end=offset + length))


def _entry_line(e: LineIndexEntry) -> str:
    """An entry's line: json.dumps of its fields in the schema's order (step, line, offsets, end), as the core's
    vector spaces it."""
    return json.dumps(e.model_dump()) + "\n"


def truncate(path: Path, size: int) -> None:
    """`path` cut back to `size` bytes (a resumed stage's records of the steps it redoes), its index to the entries
    that end by then."""
    if not path.is_file():
        return
    with open(path, "r+b") as f:
        f.truncate(min(size, os.fstat(f.fileno()).st_size))
    idx = index_path(path)
    if idx.is_file():
        _write_index(idx, _entries(idx, path.stat().st_size))


def _entries(idx: Path, size: int) -> list[LineIndexEntry]:
    """The index's entries in order while each follows the one before and fits in `size` bytes (the core's
    chainedEntries): a torn last line or a stale entry ends them."""
    out: list[LineIndexEntry] = []
    line = end = 0
    with open(idx, encoding="utf-8") as f:
        for raw in f:
            if not raw.strip():
                continue
            e = _read_entry(raw)
            if e is None:
                break
            offsets = e.offsets
            inside = all(o < e.end and (o >= end if i == 0 else o > offsets[i - 1]) for i, o in enumerate(offsets))
            if e.line < line or not inside or e.end > size:
                break
            out.append(e)
            line, end = e.line + len(offsets), e.end
    return out


def _read_entry(raw: str) -> LineIndexEntry | None:
    """An index line as an entry, or None when it is not one by the core's schema: not JSON, a key missing or extra,
    a count that is not a whole number ≥ 0 (strict: no true, no 1.0, no "1"), no offsets."""
    try:
        e = LineIndexEntry.model_validate_json(raw, strict=True)
    except pydantic.ValidationError:
        return None
    counts = (e.step, e.line, e.end, *e.offsets)
    return e if e.offsets and all(0 <= c <= _MAX_COUNT for c in counts) else None


_MAX_COUNT = 2**53 - 1  # the core's counts are JavaScript's safe integers (z.number().int().nonnegative())


def _ready(path: Path) -> tuple[int, int]:
    """(lines, bytes) of `path` as its index describes them, rebuilding the index when it does not describe the file."""
    size = path.stat().st_size if path.is_file() else 0
    idx = index_path(path)
    if size == 0:
        if idx.is_file():
            _write_index(idx, [])
        return 0, 0
    if idx.is_file() and idx.stat().st_mtime_ns >= path.stat().st_mtime_ns:
        entries = _entries(idx, size)
        if entries and entries[-1].end == size:
            return entries[-1].line + len(entries[-1].offsets), size
    return _rebuild(path)


def _rebuild(path: Path) -> tuple[int, int]:
    """The index made from the file's lines: consecutive lines of one meta.step make an entry; a line without a step
    (not JSON, a record without meta.step) is in none. Returns (lines, bytes) of the file."""
    entries: list[LineIndexEntry] = []
    line = offset = 0
    with open(path, "rb") as f:
        for raw in f:
            if not raw.endswith(b"\n"):  # a torn last line: in no entry
                break
            _add_line(entries, _step_of(raw), line, offset, len(raw))
            line += 1
            offset += len(raw)
    size = path.stat().st_size
    if offset != size:  # a torn last line is ended, kept as it is (a line without a step): the next record starts
        with open(path, "ab") as f:  # on a line of its own instead of being glued to it
            f.write(b"\n")
        line, offset = line + 1, size + 1
    _write_index(index_path(path), entries)
    return line, offset


def _step_of(raw: bytes) -> int | None:
    try:
        return _meta_step(json.loads(raw))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None


def _meta_step(value: object) -> int | None:
    """A record's meta.step when it is a count (the core's stepOf)."""
    meta = value.get("meta") if isinstance(value, dict) else None
    step = meta.get("step") if isinstance(meta, dict) else None
    return step if isinstance(step, int) and not isinstance(step, bool) and step >= 0 else None


def _write_index(idx: Path, entries: list[LineIndexEntry]) -> None:
    tmp = idx.with_name(idx.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.writelines(_entry_line(e) for e in entries)
    os.replace(tmp, idx)
