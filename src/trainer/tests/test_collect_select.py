"""The parts of `coa_trainer collect` that need no model or server: selection and its reasons, the append-only file
after a torn write, how an endpoint's text answer is read (servers differ on stop strings), the results table's
comparison with the teacher's run."""

from __future__ import annotations

import json

import pytest

from coa_trainer.contracts.record import TrajectoryRecord
from coa_trainer.contracts.run_config import CollectSelect
from coa_trainer.evaluation.claims import ResultRow
from coa_trainer.rollout.agentio import AgentIO
from coa_trainer.stages.collect import (
    CollectError,
    append_records,
    comparison_lines,
    read_collection,
    select,
)
from coa_trainer.data.dialects import tags
from coa_trainer.rollout.teacher import Endpoint, EndpointSampler

SEL = CollectSelect(correct_only=True, format_clean=True, max_tool_calls=2, dedupe=True)


def _rec(
    i: int, q: str, response: str, em: float, ok: bool = True, calls: int = 1, mode: str = "coa"
) -> TrajectoryRecord:
    """A graded record as collect writes it (trajectory_record, then the server's breakdown as reward_json)."""
    return TrajectoryRecord.model_validate(
        {
            "id": f"{q}:{mode}:{i}",
            "question": q,
            "response": response,
            "meta": {"mode": mode, "step": i + 1},
            "reward": {
                "scheme": "em",
                "em": em,
                "f1": em,
                "format_ok": ok,
                "violations": [] if ok else ["COA001"],
                "tool_calls": calls,
                "optimal_tool_calls": None,
                "r_tool": 0.0,
                "r_correct": em,
                "total": em,
            },
        }
    )


def test_selection_drops_each_record_for_its_first_reason():
    recs = [
        _rec(0, "a", "r1", 1.0),  # kept
        _rec(1, "a", "r1", 1.0),  # same response as a kept one
        _rec(2, "a", "r2", 0.0, ok=False),  # wrong (and malformed: the first reason counts)
        _rec(3, "a", "r3", 1.0, ok=False),  # format
        _rec(4, "a", "r4", 1.0, calls=3),  # too many tool calls
        _rec(5, "b", "r1", 1.0),  # same text, other question: kept
        _rec(6, "b", "r5", 1.0, calls=0, mode="cot"),  # kept, tool-free
    ]
    kept, dropped, reasons = select(recs, SEL)
    assert [r.id for r in kept] == ["a:coa:0", "b:coa:5", "b:cot:6"]
    assert dropped == {"incorrect": 1, "format": 1, "too_many_tool_calls": 1, "duplicate": 1}
    assert reasons == [None, "duplicate", "incorrect", "format", "too_many_tool_calls", None, None]
    everything = CollectSelect(correct_only=False, format_clean=False, max_tool_calls=None, dedupe=False)
    assert len(select(recs, everything)[0]) == len(recs)


def _line(i: int, response: str) -> dict:
    return _rec(i, "q", response, 1.0).model_dump(mode="json", exclude_unset=True)


def test_a_torn_last_line_is_cut_and_nothing_else_changes(tmp_path):
    path = tmp_path / "c.coa.jsonl"
    append_records(path, [_line(0, "one"), _line(1, "two")])
    whole = path.read_bytes()
    with open(path, "ab") as f:
        f.write(b'{"id": "q:coa:2", "question"')
    assert list(read_collection(path, repair=False)) == ["q:coa:0", "q:coa:1"]
    assert path.read_bytes() != whole  # not repaired when not asked
    assert list(read_collection(path, repair=True)) == ["q:coa:0", "q:coa:1"]
    assert path.read_bytes() == whole
    append_records(path, [_line(0, "again")])  # a repeated id keeps its first record
    first = read_collection(path, repair=True)["q:coa:0"]
    assert first.record.response == "one"
    assert first.line + "\n" == whole.decode("utf-8").split("\n")[0] + "\n"  # the line as written


def test_a_response_with_unicode_line_separators_reads_back_whole(tmp_path):
    path = tmp_path / "c.coa.jsonl"
    text = "a\u2028b\u2029c\x85d\x0ce"  # str.splitlines() breaks lines at each of these; JSON leaves them raw
    append_records(path, [_line(0, text), _line(1, "two")])
    got = read_collection(path, repair=True)
    assert [c.record.response for c in got.values()] == [text, "two"]


def test_a_line_that_is_not_a_record_is_named_with_its_line(tmp_path):
    path = tmp_path / "c.coa.jsonl"
    append_records(path, [_line(0, "one"), {"id": "q:coa:1", "response": "no question"}])
    with pytest.raises(CollectError, match=r"c\.coa\.jsonl:2: not a collected record \(question: Field required\)"):
        read_collection(path, repair=False)


def _sampler(stops_in_text):
    s = EndpointSampler(
        Endpoint("http://127.0.0.1:9/v1"),
        AgentIO(None, tags("search-r1"), False),
        "m",
        "completions",
        temperature=0.0,
        top_p=1.0,
        concurrency=1,
    )
    s.stops_in_text = stops_in_text
    return s


def test_endpoint_answers_are_read_whatever_the_server_does_with_stop_strings():
    shown, dropped, unknown = _sampler(True), _sampler(False), _sampler(None)
    turn = "<think> x </think>\n<search> q"
    # transformers serve: the stop string and what its last token merged after it are in the text
    assert shown._close(turn + " </search>\n\n", "stop", None) == (turn + " </search>\n\n", True)
    # a server that ignored `stop`: cut after the first closing tag and the whitespace right after it
    assert shown._close(turn + " </search>\n<information>made up", "length", None) == (turn + " </search>\n", True)
    # vLLM: dropped from the text, named in stop_reason
    assert dropped._close(turn + " ", "stop", "</search>") == (turn + " </search>", True)
    # OpenAI-like: dropped and not named — an unclosed action or answer was closed by the stop
    assert dropped._close(turn + " ", "stop", None) == (turn + " </search>", True)
    assert unknown._close("<answer> Paris ", "stop", None) == ("<answer> Paris </answer>", True)
    # a server that shows its stops: an unclosed answer at a stop is the model's end of sequence
    assert shown._close("<answer> Paris", "stop", None) == ("<answer> Paris", True)
    assert dropped._close("<answer> Paris", "stop", -1) == ("<answer> Paris", True)  # stop_reason null: EOS
    assert dropped._close(turn, "length", None) == (turn, False)


def test_results_compare_a_collection_trained_run_with_its_teachers_run(tmp_path):
    teacher_run = tmp_path / "oracle"
    (teacher_run / "stages" / "sft3" / "final").mkdir(parents=True)
    (teacher_run / "results.json").write_text(
        json.dumps(
            {
                "rows": [
                    {"setting": "sft12", "em": 0.8, "tc": 1.4, "tp": 0.5, "format_error_rate": 0.0},
                    {"setting": "workflow", "em": 0.3, "tc": 1.2, "tp": 0.2, "format_error_rate": 0.2},
                ]
            }
        )
    )
    run = tmp_path / "student"
    (run / "stages" / "collect").mkdir(parents=True)
    assert comparison_lines(run, []) == []  # no collection: nothing to say
    info = {
        "settings": {"teacher": {"kind": "model", "path": str(teacher_run / "stages" / "sft3" / "final")}},
        "kept": 40,
        "collected": 100,
    }
    (run / "stages" / "collect" / "collect.json").write_text(json.dumps(info))
    rows = [ResultRow("sft12", 0.7, 1.1, 0.6, 0.01), ResultRow("workflow", 0.31, 1.2, 0.2, 0.2), ResultRow("sft-rl")]
    text = "\n".join(comparison_lines(run, rows))
    assert "40 trajectories kept of 100" in text and "Against oracle" in text
    assert "| sft12 | 0.700 | 0.800 | -0.100 | 1.100 | 1.400 |" in text
    assert "- sft12: EM 0.700 with the collected data vs 0.800: lower." in text
    assert "- workflow: EM 0.310 with the collected data vs 0.300: about the same (within 0.02)." in text
    assert "sft-rl" not in text
