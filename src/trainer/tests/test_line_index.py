"""The line index the trainer writes beside its rollouts and flagged files (base/line_index.py; the format is the
core's, src/core/lineIndex.ts): the shared vector written byte for byte, entries valid against the generated schema,
a resume's cut, and files the writer finds without an index (an older run), torn or edited."""

import json
import os

import jsonschema

from coa_trainer.base import line_index
from coa_trainer.contracts.schemas import load_schema_file
from conftest import REPO

VECTOR = json.loads((REPO / "test" / "conformance" / "line-index.json").read_text(encoding="utf-8"))


def _write(path, writes):
    for w in writes:
        line_index.append_step(path, w)


def _entries(path):
    return [json.loads(x) for x in line_index.index_path(path).read_text().splitlines()]


def test_the_shared_vector_written_byte_for_byte(tmp_path):
    f = tmp_path / "rollouts.coa.jsonl"
    _write(f, VECTOR["writes"])
    assert f.read_text(encoding="utf-8") == VECTOR["file"]
    assert line_index.index_path(f) == tmp_path / "rollouts.index.jsonl"
    assert _entries(f) == VECTOR["entries"]
    schema = load_schema_file("line-index.json")["entry"]
    for e in _entries(f):
        jsonschema.validate(e, schema)
    lines = VECTOR["file"].splitlines()
    for step, at in VECTOR["steps"].items():
        assert [json.loads(lines[i])["meta"]["step"] for i in at] == [int(step)] * len(at)


def test_flagged_and_other_names():
    assert line_index.index_path(REPO / "x" / "flagged.coa.jsonl").name == "flagged.index.jsonl"
    assert line_index.index_path(REPO / "x" / "dump.jsonl").name == "dump.index.jsonl"


def test_a_resume_cuts_the_file_and_its_index_back_and_appends_after(tmp_path):
    f = tmp_path / "rollouts.coa.jsonl"
    _write(f, VECTOR["writes"])
    cut = VECTOR["entries"][1]["end"]  # after the first write of step 10 (a checkpoint's rollouts_offset)
    line_index.truncate(f, cut)
    assert f.stat().st_size == cut and _entries(f) == VECTOR["entries"][:2]
    _write(f, VECTOR["writes"][2:])  # the steps redone
    assert f.read_text(encoding="utf-8") == VECTOR["file"] and _entries(f) == VECTOR["entries"]
    line_index.truncate(tmp_path / "none.coa.jsonl", 0)  # no file yet: nothing to cut


def test_a_file_written_without_an_index_is_indexed_whole_before_the_next_step(tmp_path):
    f = tmp_path / "rollouts.coa.jsonl"
    text = VECTOR["file"]
    f.write_text(text, encoding="utf-8")  # an older trainer's file: no index beside it
    _write(f, VECTOR["writes"][:1])
    writes = [*VECTOR["writes"], *VECTOR["writes"][:1]]
    g = tmp_path / "same.coa.jsonl"
    _write(g, writes)
    assert f.read_bytes() == g.read_bytes()
    # Rebuilt from the lines, consecutive records of a step make one entry (two writes of step 10 become one).
    assert [(e["step"], e["line"], len(e["offsets"])) for e in _entries(f)] == [
        (1, 0, 2),
        (10, 2, 2),
        (2, 4, 1),
        (1, 5, 2),
    ]


def test_a_torn_line_is_ended_and_left_out(tmp_path):
    f = tmp_path / "rollouts.coa.jsonl"
    _write(f, VECTOR["writes"][:1])
    with open(f, "ab") as fh:
        fh.write(b'{"id": "torn", "meta": {"st')  # a write cut short
    _write(f, VECTOR["writes"][1:2])
    lines = f.read_bytes().split(b"\n")
    assert lines[2] == b'{"id": "torn", "meta": {"st', "kept as it was"
    assert json.loads(lines[3])["id"] == "q2-10-0", "the next record starts on a line of its own"
    assert [(e["step"], e["line"]) for e in _entries(f)] == [(1, 0), (10, 3)], "the torn line is in no entry"


def test_an_index_older_than_its_file_is_rebuilt_before_appending(tmp_path):
    """The record view saved an edit that moved lines (here: step 1's two records swapped, the size unchanged):
    the index still ends where the file does but no longer describes it, and it is older than the file."""
    f = tmp_path / "rollouts.coa.jsonl"
    _write(f, VECTOR["writes"][:2])
    first, second, rest = f.read_bytes().split(b"\n", 2)
    f.write_bytes(second + b"\n" + first + b"\n" + rest)
    old = f.stat().st_mtime_ns - 10**9
    os.utime(line_index.index_path(f), ns=(old, old))
    _write(f, VECTOR["writes"][2:3])
    assert [e["offsets"] for e in _entries(f)][0] == [0, len(second) + 1]
    rows = f.read_bytes()
    for e in _entries(f):
        for o in e["offsets"]:
            assert json.loads(rows[o : rows.index(b"\n", o)])["meta"]["step"] == e["step"]


def test_an_entry_the_core_would_refuse_ends_the_entries_read(tmp_path):
    """Each entry is read by the core's schema (the generated LineIndexEntry, strictly): one that is not an entry ends
    the index there, as chainedEntries ends it, so the writer rebuilds rather than trusts it."""
    f = tmp_path / "rollouts.coa.jsonl"
    _write(f, VECTOR["writes"][:2])
    idx = line_index.index_path(f)
    first = idx.read_text(encoding="utf-8").splitlines()[0]
    e = VECTOR["entries"][1]
    for bad in (
        {**e, "step": True},
        {**e, "line": float(e["line"])},
        {**e, "end": str(e["end"])},
        {**e, "offsets": []},
        {**e, "offsets": [-1]},
        {**e, "step": 2**53},
        {**e, "extra": 1},
        {k: v for k, v in e.items() if k != "end"},
        [e["step"], e["line"], e["offsets"], e["end"]],
    ):
        idx.write_text(f"{first}\n{json.dumps(bad)}\n", encoding="utf-8")
        line_index.truncate(f, f.stat().st_size)  # the index rewritten with the entries read from it
        assert _entries(f) == VECTOR["entries"][:1], bad
    idx.write_text(f"{first}\n{json.dumps(e)}\n", encoding="utf-8")
    line_index.truncate(f, f.stat().st_size)
    assert _entries(f) == VECTOR["entries"][:2], "the same entry well formed is read"
