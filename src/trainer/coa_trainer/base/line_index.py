"""The line index beside a stage's record files (rollouts.coa.jsonl → rollouts.index.jsonl): one JSON line per write
of one step's records, {"step", "line", "offsets", "end"}, so the editor reads a step's rows at their byte offsets
instead of reading (or searching) the file. The format is the core's (src/core/lineIndex.ts): its name rule and
entry schema are read from schemas/line-index.json. Every writer of a stage's rollouts or flagged records appends
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

from ..contracts.schemas import load_schema_file


@cache
def _format() -> dict[str, Any]:
    return load_schema_file("line-index.json")


def index_path(path: Path) -> Path:
    """rollouts.coa.jsonl → rollouts.index.jsonl (the core's LINE_INDEX_REPLACES / LINE_INDEX_SUFFIX)."""
    fmt = _format()
    name = path.name
    for ending in fmt["replaces"]:
        if name.endswith(ending):
            name = name[: -len(ending)]
            break
    return path.with_name(name + fmt["suffix"])


def append_step(path: Path, records: Iterable[dict[str, Any]]) -> None:
    """Appends one step's records to `path` (a JSON line each) and their entry to its index (the step is the
    records' meta.step; were they of several steps, each run of one step gets its entry)."""
    records = list(records)
    if not records:
        return
    lines = [(json.dumps(r, ensure_ascii=False) + "\n").encode("utf-8") for r in records]
    path.parent.mkdir(parents=True, exist_ok=True)
    line, pos = _ready(path)
    entries: list[dict[str, Any]] = []
    for r, b in zip(records, lines):
        step = _meta_step(r)
        last = entries[-1] if entries else None
        if step is not None and last is not None and last["step"] == step and last["end"] == pos:
            last["offsets"].append(pos)
            last["end"] = pos + len(b)
        elif step is not None:
            entries.append({"step": step, "line": line, "offsets": [pos], "end": pos + len(b)})
        line += 1
        pos += len(b)
    with open(path, "ab") as f:
        f.write(b"".join(lines))
    with open(index_path(path), "a", encoding="utf-8") as f:
        f.writelines(json.dumps(e) + "\n" for e in entries)


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


def _entries(idx: Path, size: int) -> list[dict[str, Any]]:
    """The index's entries in order while each follows the one before and fits in `size` bytes (the core's
    chainedEntries): a torn last line or a stale entry ends them."""
    out: list[dict[str, Any]] = []
    line = end = 0
    with open(idx, encoding="utf-8") as f:
        for raw in f:
            if not raw.strip():
                continue
            try:
                e = json.loads(raw)
            except json.JSONDecodeError:
                break
            if not _well_formed(e):
                break
            offsets = e["offsets"]
            inside = all(o < e["end"] and (o >= end if i == 0 else o > offsets[i - 1]) for i, o in enumerate(offsets))
            if e["line"] < line or not inside or e["end"] > size:
                break
            out.append(e)
            line, end = e["line"] + len(offsets), e["end"]
    return out


def _well_formed(e: object) -> bool:
    def count(v: object) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and v >= 0

    return (
        isinstance(e, dict)
        and set(e) == set(_format()["entry"]["required"])
        and count(e["step"])
        and count(e["line"])
        and count(e["end"])
        and isinstance(e["offsets"], list)
        and len(e["offsets"]) > 0
        and all(count(o) for o in e["offsets"])
    )


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
        if entries and entries[-1]["end"] == size:
            return entries[-1]["line"] + len(entries[-1]["offsets"]), size
    return _rebuild(path)


def _rebuild(path: Path) -> tuple[int, int]:
    """The index made from the file's lines: consecutive lines of one meta.step make an entry; a line without a step
    (not JSON, a record without meta.step) is in none. Returns (lines, bytes) of the file."""
    entries: list[dict[str, Any]] = []
    line = offset = 0
    with open(path, "rb") as f:
        for raw in f:
            if not raw.endswith(b"\n"):  # a torn last line: in no entry
                break
            step = _step_of(raw)
            last = entries[-1] if entries else None
            if step is None:
                pass
            elif last is not None and last["step"] == step and last["end"] == offset:
                last["offsets"].append(offset)
                last["end"] = offset + len(raw)
            else:
                entries.append({"step": step, "line": line, "offsets": [offset], "end": offset + len(raw)})
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


def _write_index(idx: Path, entries: list[dict[str, Any]]) -> None:
    tmp = idx.with_name(idx.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(e) + "\n" for e in entries)
    os.replace(tmp, idx)
