import io
import json
import math

import pytest

from coa_trainer.base.events import EventError, EventWriter, event_error, parse_event_line, validate_event
from conftest import REPO
from coa_trainer.contracts.events import LogEvent, MetricsEvent, ProgressEvent, SampleEvent

VECTORS = REPO / "test" / "conformance" / "events.json"


def _vectors():
    assert VECTORS.is_file(), f"{VECTORS} is missing: the shared conformance vectors are provided by the core"
    return json.loads(VECTORS.read_text())


def test_conformance_valid_events_are_accepted():
    for event in _vectors()["valid"]:
        assert event_error(event) is None, (event_error(event), event)


def test_conformance_invalid_events_are_rejected():
    for case in _vectors()["invalid"]:
        assert event_error(case["event"]) is not None, case["why"]


def test_writer_appends_flushes_and_echoes(tmp_path):
    out = io.StringIO()
    w = EventWriter(tmp_path / "run-1", echo=out)
    w.emit(MetricsEvent(stage="sft2", step=3, values={"loss": float("nan"), "lr": 1e-3, "inf": math.inf}))
    # flushed: readable before close
    lines = (tmp_path / "run-1" / "events.jsonl").read_text().splitlines()
    assert len(lines) == 1
    ev = parse_event_line(lines[0])
    assert ev["run"] == "run-1" and ev["v"] == 1 and isinstance(ev["time"], float)
    assert ev["values"] == {"loss": None, "lr": 1e-3, "inf": None}
    assert out.getvalue().strip() == lines[0]
    w.close()
    w2 = EventWriter(tmp_path / "run-1", echo=None)
    w2.emit(LogEvent(level="info", message="again"))
    w2.close()
    assert len((tmp_path / "run-1" / "events.jsonl").read_text().splitlines()) == 2


def test_writer_refuses_malformed_events(tmp_path):
    w = EventWriter(tmp_path / "r", echo=None)
    with pytest.raises(EventError):
        w.emit(ProgressEvent(stage="pretrain", step=-1, total=3, elapsed_s=0.0, eta_s=None))
    with pytest.raises(EventError):
        w.emit(
            SampleEvent(
                stage="sft2",
                step=1,
                record={"id": "a", "question": "q", "response": "r", "tokens": {"ids": [1, 2], "loss_mask": [1]}},
            )
        )
    w.close()


def test_nan_literals_are_not_json():
    line = '{"v":1,"time":1.0,"run":"r","type":"metrics","stage":"s","step":0,"values":{"loss":NaN}}'
    with pytest.raises(EventError):
        parse_event_line(line)


def test_integers_written_as_floats_are_integers_like_in_js():
    validate_event({"v": 1, "time": 1.0, "run": "r", "type": "checkpoint", "stage": "s", "step": 2.0, "path": "p"})
    with pytest.raises(EventError):
        validate_event({"v": 1, "time": 1.0, "run": "r", "type": "checkpoint", "stage": "s", "step": True, "path": "p"})


def test_an_event_line_s_head_is_read_strictly_and_a_torn_line_has_none():
    from coa_trainer.base.events import event_head

    head = event_head(
        b'{"v": 1, "time": 1.0, "run": "r", "type": "metrics", "stage": "sft2", "step": 3, "values": {}}\n'
    )
    assert head is not None and (head.type, head.stage, head.step, head.status) == ("metrics", "sft2", 3, None)
    for line in ('{"v": 1, "type": "metr', "[1]", '{"step": 3.0}', '{"step": true}', '{"step": "3"}', '{"stage": 1}'):
        assert event_head(line) is None, line


def test_a_stage_s_finished_step_is_that_of_its_last_attempt(tmp_path):
    """The step of the last `stage_finished` ok after the stage's last `run_started` (other stages', torn lines and
    a step that is not an integer are not it); None once it is started again, or failed."""
    from coa_trainer.base.runlayout import final_dir, finished_step

    run = tmp_path / "run"
    final_dir(run, "sft2").mkdir(parents=True)
    (final_dir(run, "sft2") / "coa_stage.json").write_text("{}", encoding="utf-8")
    events = run / "events.jsonl"

    def add(*lines: str) -> int | None:
        with open(events, "a", encoding="utf-8") as f:
            f.writelines(line + "\n" for line in lines)
        return finished_step(run, "sft2")

    started = '{"v": 1, "type": "run_started", "stage": "sft2"}'
    assert add(started, '{"v": 1, "type": "stage_finished", "stage": "sft2", "step": 7, "status": "ok"}') == 7
    assert add('{"v": 1, "type": "stage_finished", "stage": "other", "step": 9, "status": "ok"}') == 7
    assert add('{"v": 1, "type": "stage_finished", "stage": "sft2", "step": 8.5, "status": "ok"}') == 7
    assert add('{"v": 1, "type": "stage_finished", "stage": "sft2", "st') == 7
    assert add(started) is None
    assert add('{"v": 1, "type": "stage_finished", "stage": "sft2", "step": 3, "status": "failed"}') is None
    assert add('{"v": 1, "type": "stage_finished", "stage": "sft2", "step": 4, "status": "ok"}') == 4
    (final_dir(run, "sft2") / "coa_stage.json").unlink()
    assert finished_step(run, "sft2") is None, "final/ gone: not finished"
