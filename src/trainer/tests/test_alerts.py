"""RL alerts through the real environment server (the rules live in src/core/alerts.ts; test/unit/core/alerts.test.ts
covers each kind): the Python monitor sends its state and gets the core's alerts, edge-triggered, across a
checkpoint round trip and from a checkpoint written before the rules moved (whole-history state)."""

import pytest

from conftest import REPO, env_server_available
from coa_trainer.env.alerts import AlertMonitor
from coa_trainer.env.client import EnvClient, EnvError

TH = {"tool_call_explosion": 2.0, "think_collapse": 0.5, "all_wrong_groups": 0.5, "tool_failure_rate": 0.2, "window": 3}
CALM = {
    "tc": 1.0,
    "think_len": 20.0,
    "all_wrong_groups": 0.1,
    "tool_failure_rate": 0.0,
    "reward_mean": 0.5,
    "format_error_rate": 0.05,
}
CORPUS = REPO / "examples" / "data" / "search-r1" / "corpus_example.jsonl"


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    why = env_server_available()
    if why:
        pytest.skip(why)
    client = EnvClient.start(CORPUS, extra_args=["--index", str(tmp_path_factory.mktemp("idx"))])
    yield client
    client.stop()


def _run(env, series, heldout=None, monitor=None):
    m = monitor or AlertMonitor(dict(TH), env)
    out = []
    for step, values in enumerate(series, 1):
        if heldout and step in heldout:
            m.observe_heldout(heldout[step])
        out += [(step, a.kind, a.severity) for a in m.update(step, values)]
    return out


def _series(n, **after):
    return [{**CALM, **(after if i >= n // 2 else {})} for i in range(n)]


def test_calm_and_each_kind(env):
    assert _run(env, _series(12)) == []
    got = _run(env, _series(12, tc=3.5))
    assert [k for _, k, _ in got] == ["tool_call_explosion"] and got[0][0] > 6
    assert [k for _, k, _ in _run(env, _series(12, tool_failure_rate=0.6))] == ["tool_failures"]
    assert [k for _, k, _ in _run(env, _series(12, reward_mean=0.9), heldout={3: 0.8, 9: 0.5})] == ["reward_hacking"]


def test_nan_and_non_numbers_do_not_break_the_request(env):
    m = AlertMonitor(dict(TH), env)
    assert m.update(1, {**CALM, "loss": float("nan"), "flag": True, "name": "x", "none": None}) == []
    assert "loss" not in m.state_dict()["series"]


def test_state_round_trip_and_legacy_checkpoint(env):
    m = AlertMonitor(dict(TH), env)
    _run(env, _series(8, tc=3.5), monitor=m)
    n = AlertMonitor(dict(TH), env)
    n.load_state_dict(m.state_dict())
    assert n.update(9, {**CALM, "tc": 3.5}) == []  # still active: no second alert after resume
    legacy = AlertMonitor(dict(TH), env)
    legacy.load_state_dict({"history": {"tc": [1.0] * 4 + [3.5] * 4}, "heldout": [], "active": []})
    assert [a.kind for a in legacy.update(9, {"tc": 3.5})] == ["tool_call_explosion"]


def test_bad_thresholds_are_a_clear_error(env):
    with pytest.raises(EnvError, match="thresholds.window"):
        AlertMonitor({"window": 0}, env).update(1, CALM)
