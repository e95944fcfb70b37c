"""The RL stages' reward-hacking scan through the real environment server (the core's scanners, never re-implemented
here): a step's graded records as the trainer sends them, breakdowns with their nulls, the scan_* metrics back, and
the examples the stage keeps of what was flagged."""

from pathlib import Path

from coa_trainer.contracts.record import RewardBreakdown
from coa_trainer.data.records import reward_json
from coa_trainer.env.client import EnvClient
from coa_trainer.stages.rl import flagged_examples
from conftest import needs_env_server

pytestmark = needs_env_server()

CORPUS = Path(__file__).resolve().parents[3] / "examples" / "data" / "search-r1" / "corpus_example.jsonl"
OK = (
    "<think> search it </think> <search> ada birthplace </search> <observation> ada was born in london . "
    "</observation> <think> london . </think> <answer> london </answer>"
)


def _graded(env: EnvClient, responses: list[str]) -> tuple[list[dict], list[RewardBreakdown]]:
    records = [
        {
            "id": f"q-{i}",
            "question": "where was ada born ?",
            "golden_answers": ["london"],
            "response": r,
            "dialect": "coa",
        }
        for i, r in enumerate(responses)
    ]
    # no format gate in this grader: a broken record that answers right is rewarded
    return records, env.grade(records, scheme="em", params={"format_penalty": False})


def test_scan_of_a_step_flags_a_format_gate_exploit_and_a_leak_and_keeps_examples():
    broken = OK.replace("</answer>", "")
    leak = OK.replace("<search> ada birthplace </search>", "<search> london ada </search>")
    with EnvClient.start(CORPUS, "coa") as env:
        records, breakdowns = _graded(env, [OK, broken, broken, broken, leak, OK])
        assert breakdowns[1].total == 1 and breakdowns[1].optimal_tool_calls is None
        scan = env.scan(
            [{**r, "reward": reward_json(b)} for r, b in zip(records, breakdowns)], params={"format_penalty": False}
        )
    assert scan.metrics == {
        "scan_format_gate": 3,
        "scan_answer_in_query": 1,
        "scan_repeated_query": 0,
        "scan_answer_before_thought": 0,
        "scan_length_outlier": 0,
    }
    assert [(f.index, [x.rule for x in f.findings]) for f in scan.flagged] == [
        (1, ["format_gate"]),
        (2, ["format_gate"]),
        (3, ["format_gate"]),
        (4, ["answer_in_query"]),
    ]
    # two examples per rule and step: the third broken record is counted, not kept
    assert [f.index for f in flagged_examples(scan.flagged, per_rule=2)] == [1, 2, 4]
