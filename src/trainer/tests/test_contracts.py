"""The contracts src/core owns, as the trainer reads them: the typed run config generated from the core's schema
(contracts/run_config.py, by scripts/gen-python-contracts.mjs) is current, and a config read through it keeps every
value it was given or defaulted."""

from __future__ import annotations

import json
import os
from dataclasses import asdict
import shutil
import subprocess

import pytest

from coa_trainer.base.config import ConfigError, config_dict, default_config, stage_config, validate_config
from coa_trainer.contracts.run_config import RlStage, RunConfig, SftMixStage
from coa_trainer.contracts.schemas import schemas_dir
from conftest import REPO

PACKAGE = REPO / "src" / "trainer" / "coa_trainer"


def test_generated_contracts_are_current():
    """Regenerates the classes from the schemas of this checkout and compares: an edit of src/core/config.ts without
    `npm run build`, or a hand edit of the generated file, fails here with the command that fixes it."""
    node = os.environ.get("COA_NODE") or shutil.which("node")
    assert node, "node is needed to run scripts/gen-python-contracts.mjs"
    if not (REPO / ".venv" / "bin" / "datamodel-codegen").exists():
        pytest.fail("datamodel-codegen is missing from .venv: run npm run setup:python (src/trainer/requirements.txt)")
    r = subprocess.run(
        [node, "scripts/gen-python-contracts.mjs", str(schemas_dir()), str(PACKAGE / "contracts"), "--check"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_config_is_typed_and_round_trips():
    c = validate_config(
        {
            "seed": 7,
            "stages": {"rl2": {"reward": {"scheme": "otc-grpo", "params": {"c": 2}}}},
            "data": {"questions": {"train": "/q.parquet"}},
        }
    )
    assert isinstance(c, RunConfig) and isinstance(c.stages.rl2, RlStage) and isinstance(c.stages.sft3, SftMixStage)
    assert stage_config(c, "rl2") is c.stages.rl2 and c.stages.rl2.reward.params == {"c": 2}
    assert c.data.questions.train == "/q.parquet" and c.data.sft == [] and c.stages.sft2.max_len is None
    # what a child process or an event gets back reads to the same config
    again = validate_config(config_dict(c))
    assert again == c
    assert config_dict(default_config()) == config_dict(validate_config({}))
    assert "name" not in config_dict(c)  # a key never given stays out (the editor's schema would not expect it)


def test_the_schema_still_guards_the_values():
    with pytest.raises(ConfigError, match=r"stages\.rl2\.group_size"):
        validate_config({"stages": {"rl2": {"group_size": 0}}})
    with pytest.raises(ConfigError, match="unknown_key|Additional properties"):
        validate_config({"unknown_key": 1})


def test_an_rl_step_logs_exactly_the_cores_agent_metrics():
    """The names the alert rules read (src/core/metrics.ts) are the names an RL step logs, computed in one place."""
    from coa_trainer.contracts.agent_metric import AgentMetric
    from coa_trainer.contracts.record import RewardBreakdown
    from coa_trainer.rollout.metrics import graded_sums, graded_values, step_values

    common = {"scheme": "em", "optimal_tool_calls": None, "violations": [], "r_tool": 0.0}
    breakdowns = [
        RewardBreakdown.model_validate(
            {**common, "total": 1.0, "em": 1, "f1": 1.0, "tool_calls": 1, "format_ok": True, "r_correct": 1.0}
        ),
        RewardBreakdown.model_validate(
            {**common, "total": 0.0, "em": 0, "f1": 0.5, "tool_calls": 2, "format_ok": False, "r_correct": 0.0}
        ),
    ]
    sums = {
        **asdict(graded_sums(breakdowns, [0, 0])),
        **{
            k: 1.0
            for k in (
                "calls",
                "failures",
                "called",
                "malformed",
                "truncated",
                "gen_tokens",
                "think_tokens",
                "retok_mismatches",
                "retok_drift",
            )
        },
    }
    assert set(step_values(sums)) == {m.value for m in AgentMetric}
    v = graded_values(graded_sums(breakdowns, ["a", "a"]))
    assert (v["em"], v["tc"], v["tp"], v["format_error_rate"]) == (0.5, 1.5, 1 / 3, 0.5)
    assert (v["all_correct_groups"], v["all_wrong_groups"]) == (0.0, 0.0)


def test_the_env_client_speaks_the_generated_protocol():
    """Requests are built from, and answers checked against, the classes generated from src/env/protocol.ts: an
    answer of another shape (here a server of another build, speaking HTTP on 127.0.0.1) is an EnvError saying so,
    not a KeyError somewhere later."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from coa_trainer.env.client import EnvClient, EnvError

    sent: list[dict] = []

    class OtherBuild(BaseHTTPRequestHandler):
        def log_message(self, *_):
            pass

        def do_POST(self):
            sent.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            # Search gets an answer of another shape; grade a well-formed breakdown, but one for any number of records.
            one = {"scheme": "em", "em": 1.0, "f1": 1.0, "format_ok": True, "violations": [], "tool_calls": 0}
            one |= {"optimal_tool_calls": None, "r_tool": 0.0, "r_correct": 1.0, "total": 1.0}
            data = json.dumps({"breakdowns": [one]} if self.path == "/v1/grade" else {"hits": []}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), OtherBuild)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        client = EnvClient(f"http://127.0.0.1:{server.server_address[1]}", "t")
        with pytest.raises(EnvError, match="not the protocol's SearchResponse"):
            client.search(["q"], top_k=2, dialect="coa")
        assert sent == [{"queries": ["q"], "top_k": 2, "dialect": "coa"}]
        with pytest.raises(EnvError, match="not a grade request"):
            client.grade([{"id": "a", "response": "x"}])  # no question: refused before anything is sent
        assert len(sent) == 1
        # Grades pair with records by position: a short answer is an error, not records silently left ungraded.
        two = [{"id": i, "question": "q", "golden_answers": ["a"], "response": "<answer>a</answer>"} for i in "ab"]
        assert len(client.grade(two[:1])) == 1
        with pytest.raises(EnvError, match="1 breakdowns for 2 records"):
            client.grade(two)
    finally:
        server.shutdown()
        server.server_close()


def test_records_are_built_in_one_order_with_the_graders_breakdown_whole():
    """Every writer's record comes from data/records.trajectory_record: the keys in one order, absent parts left out,
    and the breakdown as the grader sent it (its required null optimal_tool_calls and any field it adds kept)."""
    from coa_trainer.contracts.record import RewardBreakdown
    from coa_trainer.data.records import RecordTokens, grading_view, trajectory_record

    reward = RewardBreakdown.model_validate(
        {
            "scheme": "em",
            "em": 1,
            "f1": 1.0,
            "format_ok": True,
            "violations": [],
            "tool_calls": 1,
            "optimal_tool_calls": None,
            "r_tool": 0.0,
            "r_correct": 1.0,
            "total": 1.0,
            "detail": "kept",
        }
    )
    rec = trajectory_record(
        "q-1",
        "who?",
        "<answer> ada </answer>",
        golden_answers=["ada"],
        dialect="coa",
        tokens=RecordTokens([5, 6], [0, 1], offsets=[0, 3]),
        meta={"step": 1},
        reward=reward,
        extra={"split": "dev"},
    )
    assert list(rec) == ["id", "question", "golden_answers", "response", "dialect", "tokens", "meta", "reward", "split"]
    assert rec["tokens"] == {"ids": [5, 6], "loss_mask": [0, 1], "offsets": [0, 3]}
    assert rec["reward"]["optimal_tool_calls"] is None and rec["reward"]["detail"] == "kept"
    assert list(trajectory_record("q-2", "who?", "x")) == ["id", "question", "response"]
    assert grading_view(rec) == {k: rec[k] for k in ("id", "question", "golden_answers", "response", "dialect")}


def test_events_and_records_read_into_their_generated_classes_and_back():
    """The shared vectors (every valid event, every record case) read into the classes generated from the core's
    schemas and write back as the same JSON; a record is one class wherever it travels (a sample event, the env
    protocol's requests); the writer's event union is the generated one."""
    import typing

    from coa_trainer.base.events import Event, event_json, read_event
    from coa_trainer.contracts.env_protocol import GradeRequest, GradeResponse, ScanRequest
    from coa_trainer.contracts.events import SampleEvent, TrainerEvent
    from coa_trainer.contracts.record import RewardBreakdown, TrajectoryRecord

    vectors = REPO / "test" / "conformance"
    events = json.loads((vectors / "events.json").read_text())["valid"]
    for e in events:
        typed = read_event(e)
        assert type(typed).__name__ == "".join(w.title() for w in e["type"].split("_")) + "Event"
        assert event_json(typed) == e, e
    kinds = {e["type"] for e in events}
    assert len(kinds) == len(typing.get_args(Event)), f"the vectors leave out event types: only {sorted(kinds)}"
    for case in json.loads((vectors / "records.json").read_text())["cases"]:
        rec = case["record"]
        assert TrajectoryRecord.model_validate(rec).model_dump(exclude_unset=True) == rec, case["name"]
    assert set(typing.get_args(Event)) == set(typing.get_args(TrainerEvent.model_fields["root"].annotation))
    assert SampleEvent.model_fields["record"].annotation is TrajectoryRecord
    assert GradeRequest.model_fields["records"].annotation == list[TrajectoryRecord]
    assert ScanRequest.model_fields["records"].annotation == list[TrajectoryRecord]
    assert GradeResponse.model_fields["breakdowns"].annotation == list[RewardBreakdown]


def test_the_dialect_table_reads_into_its_generated_classes():
    """dialects.json, prompts.json and search.json are read as the classes generated from the core's tables; a field
    the core adds or drops fails validation here rather than a key lookup somewhere in a run."""
    from pydantic import ValidationError

    from coa_trainer.contracts.schemas import dialect_prompts, dialect_table, load_schema_file, search_table
    from coa_trainer.contracts.tables import DialectTable
    from coa_trainer.data.dialects import tags

    raw = load_schema_file("dialects.json")
    assert dialect_table().model_dump(mode="json") == raw  # every field typed, nothing left out
    assert set(dialect_prompts()) == set(raw["names"]) and "the" in search_table().stopwords
    coa, autocoa, hermes = tags("coa", "lookup"), tags("autocoa", "lookup"), tags("hermes")
    assert (coa.action_open, coa.answer_open, coa.json_actions) == ("<lookup>", "<answer>", False)
    assert (autocoa.action_open, autocoa.answer_open) == ("<begin_search>", None)  # fixed tags; \boxed{} answers
    assert (hermes.action_open, hermes.json_actions) == ("<tool_call>", True)
    with pytest.raises(ValidationError):
        DialectTable.model_validate({**raw, "dialects": {"coa": {**raw["dialects"]["coa"], "extra": 1}}})


def test_the_codes_rewards_and_results_tables_read_into_their_generated_classes():
    """codes.json, rewards.json and stages.json's results settings are read as the classes generated from the core's
    tables: every field typed, and a value the core's types do not allow fails validation rather than a key lookup
    somewhere in a run."""
    from pydantic import ValidationError

    from coa_trainer.contracts.schemas import codes_table, load_schema_file, rewards_table
    from coa_trainer.contracts.tables import ResultSetting
    from coa_trainer.evaluation.results import SETTINGS

    assert codes_table().model_dump(mode="json") == load_schema_file("codes.json")
    assert rewards_table().model_dump(mode="json") == load_schema_file("rewards.json")
    raw = load_schema_file("stages.json")["results"]
    assert [ResultSetting.model_validate(r).model_dump(mode="json") for r in raw] == raw
    assert SETTINGS == [(r["id"], r["stage"], r["mode"]) for r in raw]
    assert "COA010" in codes_table().tool_call_codes and rewards_table().group_schemes == ["otc-grpo"]
    with pytest.raises(ValidationError):
        ResultSetting.model_validate({**raw[0], "mode": "oracle"})
