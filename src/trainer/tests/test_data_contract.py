"""The data contract from the Python side (docs/training.md, "Data contract"): what `coa data prepare` writes is
read by the trainer with Python string indices, so segment offsets must be code points — checked here on text
with astral characters, where UTF-16 offsets would be off by one per emoji. Bad data: one error line, exit 2."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO

CLI = REPO / "dist" / "cli.js"
TAGS = {"think": "<think>", "action": "<search>", "observation": "<observation>", "answer": "<answer>"}


def coa(*args: str) -> subprocess.CompletedProcess:
    node = os.environ.get("COA_NODE") or shutil.which("node")
    assert node, "node is needed for the data contract (COA_NODE or node on PATH)"
    assert CLI.is_file(), f"{CLI} missing: run `node scripts/build.mjs` (npm run build)"
    return subprocess.run([node, str(CLI), *args], cwd=REPO, capture_output=True, text=True, timeout=120)


def test_sft_segments_are_python_string_indices(tmp_path: Path):
    response = (
        "<think>🦈 not sure 𝔁, search.</think>\n<search>jaws 📚 author</search>\n"
        "<observation>Doc 1 🦈 Peter Benchley wrote Jaws.</observation>\n<answer>Peter Benchley</answer>"
    )
    src = tmp_path / "t.coa.jsonl"
    src.write_text(
        json.dumps(
            {"id": "a", "question": "who wrote jaws?", "golden_answers": ["Peter Benchley"], "response": response},
            ensure_ascii=False,
        )
        + "\n",
        encoding="utf-8",
    )
    out = tmp_path / "sft.jsonl"
    r = coa("data", "prepare", "sft", str(src), "--out", str(out))
    assert r.returncode == 0, r.stderr
    rec = json.loads(out.read_text(encoding="utf-8"))
    assert rec["response"] == response
    segs = rec["segments"]
    assert segs[0]["start"] == 0 and segs[-1]["end"] == len(response)
    for a, b in zip(segs, segs[1:]):
        assert a["end"] == b["start"], "segments are contiguous"
    for s in segs:
        piece = response[s["start"] : s["end"]]
        if s["kind"] in TAGS:
            assert piece.startswith(TAGS[s["kind"]]) and piece.endswith(TAGS[s["kind"]].replace("<", "</")), piece
        else:
            assert piece.strip() == "", piece
    assert [s["kind"] for s in segs if s["kind"] != "text"] == ["think", "action", "observation", "answer"]
    assert rec["tool_calls"] == 1 and rec["correct"] is True and rec["dialect"] == "coa"
    from coa_trainer.data.prepared import SftRecord, read_prepared

    (typed,) = read_prepared(out, SftRecord)  # how the trainer reads the line: the same record, typed
    assert [(s.kind, s.start, s.end) for s in typed.segments] == [(s["kind"], s["start"], s["end"]) for s in segs]
    assert (typed.tool_calls, typed.correct, typed.format_ok, typed.response) == (1, True, True, response)


def test_questions_from_the_autocoa_parquet(tmp_path: Path):
    out = tmp_path / "questions.jsonl"
    r = coa("data", "prepare", "questions", "examples/data/autocoa/hotpotqa_dev.parquet", "--out", str(out))
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 400
    assert [row["origin"]["line"] for row in rows[:3]] == [1, 2, 3]
    assert all(set(row) == {"id", "question", "golden_answers", "data_source", "origin"} for row in rows)
    assert all(
        row["question"] and row["golden_answers"] and all(isinstance(g, str) for g in row["golden_answers"])
        for row in rows
    )


def test_bad_data_is_one_error_line_and_exit_2(tmp_path: Path):
    bad = tmp_path / "q.jsonl"
    bad.write_text('{"question": "q?", "golden_answers": ["a"]}\n{"question": "x", "golden_answers": 7}\n')
    out = tmp_path / "out.jsonl"
    r = coa("data", "prepare", "questions", str(bad), "--out", str(out))
    assert r.returncode == 2
    assert re.fullmatch(rf"{re.escape(str(bad))}:2:\d+: error: golden_answers: .+\n", r.stderr), r.stderr
    assert not out.exists()


def test_repeated_ids_of_autocoas_test_parquet_join_back_to_its_rows(tmp_path: Path):
    """AutoCoA's test parquet repeats 343 ids across its source files. The trainer's questions (through `coa data
    prepare`) keep each id on its first row and qualify later rows, the original in `source_id`, which evaluation
    records carry in `meta`: every result joins back to its row of the user's parquet."""
    import pandas as pd

    from coa_trainer.base.config import validate_config
    from coa_trainer.data.userdata import UserData, source_of

    parquet = REPO / "examples" / "data" / "autocoa" / "all_test.parquet"
    config = validate_config({"data": {"questions": {"test": str(parquet)}}})
    questions = UserData(config, tmp_path / "prepared").split("test")
    rows = pd.read_parquet(parquet, columns=["id", "source_file"])
    assert len(questions) == 2935 and len({q.id for q in questions}) == 2935
    first_row = {}
    for i, row_id in enumerate(rows["id"]):
        first_row.setdefault(row_id, i)
    kept = [q for q in questions if q.source_id is None]
    assert {q.id for q in kept} == set(first_row)  # every id of the file names one question: its first row's
    renamed = [q for q in questions if q.source_id is not None]
    assert len(renamed) == 712 - 343 and all(q.id != q.source_id and q.source_id in first_row for q in renamed)
    assert source_of(renamed[0]) == {"source_id": renamed[0].source_id} and source_of(kept[0]) == {}
    # joined on the original id: each result names rows of the parquet with that id
    originals = [q.source_id or q.id for q in questions]
    assert set(originals) == set(rows["id"])


def test_a_prepared_line_is_read_once_into_its_class_and_a_bad_one_names_its_line(tmp_path):
    """The prepared files are read into typed records at load; a line not in the core's shape is a DataError with its
    file, line and field rather than a KeyError wherever a stage first reads it."""
    from coa_trainer.data.prepared import DataError, PairRecord, SftRecord, read_prepared

    seg = {"kind": "answer", "start": 0, "end": 5}
    row = {"id": "a", "question": "q", "golden_answers": ["x"], "dialect": "coa", "prompt": None, "response": "x"}
    row |= {"segments": [seg], "tool_calls": 0, "reward": None, "correct": True, "format_ok": True}
    path = tmp_path / "sft.jsonl"
    path.write_text(json.dumps(row) + "\n\n" + json.dumps({**row, "segments": [{"kind": "answer"}]}) + "\n")
    with pytest.raises(DataError, match=r"sft\.jsonl:3:1: error: segments\.0\.start: Field required"):
        read_prepared(path, SftRecord)
    path.write_text(json.dumps(row) + "\n")
    (r,) = read_prepared(path, SftRecord)
    assert (r.segments[0].end, r.correct, r.format_ok, r.prompt) == (5, True, True, None)
    side = {k: row[k] for k in ("id", "dialect", "response", "segments", "tool_calls", "correct")}
    pair = {"id": "p", "question": "q", "golden_answers": [], "prompt": None, "kind": "tool-vs-notool", "act": True}
    path.write_text(json.dumps({**pair, "chosen": side, "rejected": side}) + "\n")
    (p,) = read_prepared(path, PairRecord)
    assert p.act and p.chosen.segments == r.segments and p.rejected.dialect == "coa"
