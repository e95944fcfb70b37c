"""The shared conformance vectors (test/conformance/*.json) from the Python side.

Reward math and format rules live only in TypeScript; the trainer reaches them through the environment
server's grader. So these tests send every vector record to the real server's /v1/grade and check the
breakdowns the trainer will see — the HTTP contract and the core agree with the same files the TypeScript
tests use. (Events are checked against the Python mirror in test_events.py.)"""

import json

import pytest

from coa_trainer.contracts.schemas import schemas_dir
from coa_trainer.env.client import EnvClient
from conftest import REPO, needs_env_server

VECTORS = REPO / "test" / "conformance"
needs_server = needs_env_server()


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    # The grader needs no corpus content; a one-passage corpus in a temp dir keeps the index out of the repo.
    corpus = tmp_path_factory.mktemp("env") / "corpus.jsonl"
    corpus.write_text(json.dumps({"id": "0", "contents": '"Jaws"\nJaws is a 1975 film by Steven Spielberg.'}) + "\n")
    with EnvClient.start(corpus, "coa") as client:
        yield client


def _close(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and abs(a - b) <= 1e-9
    return a == b


@needs_server
def test_reward_vectors_through_the_grader(env):
    cases = json.loads((VECTORS / "rewards.json").read_text())["cases"]
    assert cases, "no reward vectors"
    for case in cases:
        got = [
            b.model_dump(mode="json") for b in env.grade(case["records"], scheme=case["scheme"], params=case["params"])
        ]
        assert len(got) == len(case["expect"]), case["name"]
        for i, (have, want) in enumerate(zip(got, case["expect"])):
            for key, value in want.items():
                assert _close(have[key], value), f"{case['name']} #{i} {key}: {have[key]!r} != {value!r}"


@needs_server
def test_format_vectors_through_the_grader(env):
    cases = json.loads((VECTORS / "format.json").read_text())["cases"]
    records = []
    for i, case in enumerate(cases):
        opts = case.get("options", {})
        if "complete" in opts:
            continue  # the grader always scores finished episodes
        records.append(
            (
                case,
                {
                    "id": f"v{i}",
                    "question": case["name"],
                    "response": case["text"],
                    "dialect": case["expect"]["dialect"],
                },
                opts,
            )
        )
    for case, record, opts in records:
        params = {"strictness": opts.get("strictness", "lenient"), "format_penalty": False}
        if "tools" in opts:
            params["tools"] = opts["tools"]
        if "maxTurns" in opts:
            params["max_turns"] = opts["maxTurns"]
        [b] = env.grade([record], scheme="em", params=params)
        want = case["expect"]
        errors = sorted({code for code, _, _ in want["diagnostics"] if not code == "COA016"})
        assert b.format_ok == want["format_ok"], case["name"]
        assert b.tool_calls == want["tool_calls"], case["name"]
        assert sorted(b.violations) == errors, case["name"]


@needs_server
def test_record_vectors_through_the_grader(env):
    """The reward's format gate gives a record the codes the editor and `coa validate` give it: its violations are
    the vector's error codes (the record's own dialect field wins over detection, as everywhere)."""
    codes = json.loads((schemas_dir() / "codes.json").read_text())
    severity = {code: r["severity"] for code, r in codes["rules"].items()}
    cases = [c for c in json.loads((VECTORS / "records.json").read_text())["cases"] if not c["expect"]["question"]]
    assert cases, "no record vectors"
    got = env.grade([c["record"] for c in cases], scheme="autocoa")
    for case, b in zip(cases, got):
        errors = list(dict.fromkeys(code for code in case["expect"]["codes"] if severity.get(code) == "error"))
        assert (b.violations, b.format_ok) == (errors, not errors), case["name"]


def test_answer_normalisation_vectors():
    """The closed-book check in evaluation/agent.py normalises answers itself (no server during pretraining):
    it must agree with the core on the shared answer vectors."""
    from coa_trainer.evaluation.agent import normalize_answer

    vectors = json.loads((VECTORS / "answers.json").read_text())
    assert vectors["normalize"], "no normalisation vectors"
    for raw, want in vectors["normalize"]:
        assert normalize_answer(raw) == want, raw
    for pred, golden, want in vectors["em"]:
        got = float(pred is not None and any(normalize_answer(pred) == normalize_answer(g) for g in golden))
        assert got == want, pred


def test_record_vectors_through_the_cli(tmp_path):
    """Which records are questions (prompt-only rows: no format rules) is the core's rule; the trainer meets it
    through `coa validate`, which must report exactly the vectors' codes for each record."""
    import shutil
    import subprocess

    node = shutil.which("node")
    if node is None:
        pytest.skip("node not on PATH")
    cases = json.loads((VECTORS / "records.json").read_text())["cases"]
    assert cases, "no record vectors"
    for case in cases:
        path = tmp_path / "r.coa.jsonl"
        path.write_text(json.dumps(case["record"]) + "\n")
        out = subprocess.run(
            [node, str(REPO / "bin" / "coa.js"), "validate", str(path)], capture_output=True, text=True, check=False
        )
        codes = [line.split()[2] for line in out.stdout.splitlines() if line.strip()]
        assert codes == case["expect"]["codes"], f"{case['name']}: {out.stdout}{out.stderr}"
        assert out.returncode == (1 if case["expect"]["codes"] else 0), case["name"]
        assert ("question" in out.stderr) == case["expect"]["question"], f"{case['name']}: {out.stderr}"


def test_group_vectors_through_the_trainers_metrics():
    """The shares of zero-variance, all-correct and all-wrong groups an RL step logs, against the vectors the editor's
    group view runs too (test/conformance/groups.json)."""
    from coa_trainer.contracts.record import RewardBreakdown
    from coa_trainer.rollout.metrics import graded_sums, graded_values

    cases = json.loads((VECTORS / "groups.json").read_text())["cases"]
    assert cases, "no group vectors"
    for case in cases:
        breakdowns = [
            RewardBreakdown(
                scheme="em",
                total=t,
                em=rc,
                f1=rc,
                tool_calls=0,
                optimal_tool_calls=None,
                format_ok=True,
                violations=[],
                r_tool=0.0,
                r_correct=rc,
            )
            for t, rc, _ in case["samples"]
        ]
        values = graded_values(graded_sums(breakdowns, [g for _, _, g in case["samples"]]))
        for key, want in case["expect"].items():
            assert _close(values[key], want), (case["why"], key, values[key], want)
