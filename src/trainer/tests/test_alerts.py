"""RL alerts on synthetic metric series: each kind fires when its condition starts, once, and not on a calm run."""

from coa_trainer.alerts import AlertMonitor

TH = {"tool_call_explosion": 2.0, "think_collapse": 0.5, "all_wrong_groups": 0.5, "tool_failure_rate": 0.2,
      "window": 3}
CALM = {"tc": 1.0, "think_len": 20.0, "all_wrong_groups": 0.1, "tool_failure_rate": 0.0, "reward_mean": 0.5,
        "format_error_rate": 0.05}


def _run(series: list[dict], heldout: dict[int, float] | None = None) -> list[tuple[int, str]]:
    m = AlertMonitor(dict(TH))
    out = []
    for step, values in enumerate(series, 1):
        if heldout and step in heldout:
            m.observe_heldout(heldout[step])
        out += [(step, a.kind) for a in m.update(step, values)]
    return out


def _series(n: int, **changes_after) -> list[dict]:
    """n calm steps, then for the second half the given per-key values."""
    return [{**CALM, **(changes_after if i >= n // 2 else {})} for i in range(n)]


def test_calm_run_has_no_alerts():
    assert _run(_series(20)) == []


def test_tool_call_explosion():
    got = _run(_series(12, tc=3.5))
    assert [k for _, k in got] == ["tool_call_explosion"]
    assert got[0][0] > 6  # only once the recent window crosses 2× the baseline


def test_think_collapse():
    assert [k for _, k in _run(_series(12, think_len=4.0))] == ["think_collapse"]


def test_all_wrong_groups():
    assert [k for _, k in _run(_series(12, all_wrong_groups=0.9))] == ["all_wrong_groups"]


def test_tool_failures_fire_once_and_rearm():
    series = _series(8, tool_failure_rate=0.6) + [dict(CALM)] * 6 + [{**CALM, "tool_failure_rate": 0.9}] * 4
    kinds = [k for _, k in _run(series)]
    assert kinds == ["tool_failures", "tool_failures"]


def test_reward_hacking_by_format_errors():
    got = _run(_series(12, reward_mean=0.9, format_error_rate=0.4))
    assert [k for _, k in got] == ["reward_hacking"]
    # reward up with format errors flat is learning, not hacking
    assert _run(_series(12, reward_mean=0.9)) == []


def test_reward_hacking_by_heldout_em():
    series = _series(12, reward_mean=0.9)
    assert [k for _, k in _run(series, heldout={3: 0.8, 9: 0.5})] == ["reward_hacking"]
    assert _run(series, heldout={3: 0.8, 9: 0.82}) == []


def test_state_round_trip():
    m = AlertMonitor(dict(TH))
    for i, v in enumerate(_series(8, tc=3.5), 1):
        m.update(i, v)
    n = AlertMonitor(dict(TH))
    n.load_state_dict(m.state_dict())
    assert n.history == m.history and n.active == m.active
    assert n.update(9, {**CALM, "tc": 3.5}) == []  # still active: no second alert after resume
