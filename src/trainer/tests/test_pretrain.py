"""Stage `pretrain` with the default config: closed-book EM on the dev split is high on known facts and near zero
on unknown ones (the knowledge split the agent stages build on)."""

import os

from conftest import read_events, run_trainer


def test_pretrain_learns_known_facts_only(tmp_path, write_config):
    cfg = write_config({"threads": 1, "device": "cpu"})  # everything else: the defaults of src/core/config.ts
    run = tmp_path / "run"
    r = run_trainer("train", "--stage", "pretrain", "--config", str(cfg), "--run-dir", str(run), timeout=400)
    assert r.returncode == 0, r.stdout[-2000:]
    events = read_events(run)
    (ev,) = [e for e in events if e["type"] == "eval" and e["split"] == "dev"]
    m = ev["metrics"]
    assert m["em_known_1hop"] >= 0.8, m
    assert m["em_unknown"] <= 0.1, m
    assert events[-1]["type"] == "stage_finished" and events[-1]["status"] == "ok"
    losses = [e["values"]["loss"] for e in events if e["type"] == "metrics"]
    assert losses[-1] < losses[0]
    # The stage says how it shares the CPU: the config's thread count, and the wait policy the entry point chose.
    policy = os.environ.get("OMP_WAIT_POLICY", "PASSIVE")
    assert any(
        e["type"] == "log" and e["message"] == f"pretrain: 1 torch thread, OpenMP wait policy {policy}" for e in events
    )
    # …and its metrics carry the machine's figures (system/*, src/core/metrics.ts SYSTEM_METRICS).
    metrics = [e["values"] for e in events if e["type"] == "metrics"]
    assert all(m["system/cpu_percent"] > 0 and m["system/rss_gb"] > 0 for m in metrics)
