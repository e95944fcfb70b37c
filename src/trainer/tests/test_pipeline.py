"""`python -m coa_trainer pipeline`: every stage end to end with tiny step counts against the real environment
server, the results table's shape, and SIGTERM (the running stage checkpoints, the server is stopped)."""

import json
import os
import signal
import subprocess
import urllib.error
import urllib.request

import pytest

from coa_trainer.base.events import validate_event
from coa_trainer.evaluation.claims import ResultRow, RunTable, run_claims
from coa_trainer.evaluation.results import comparisons
from conftest import PY, REPO, TINY, assert_typed_round_trip, needs_env_server, merge, read_events, run_trainer

needs_server = needs_env_server()

RL = {
    "steps": 2,
    "prompts_per_step": 2,
    "group_size": 2,
    "heldout_every": 0,
    "sample_every": 1,
    "max_new_tokens": 16,
    "max_turns": 2,
    "log_every": 1,
}
CONFIG = merge(TINY, {"stages": {"rl1": RL, "rl2": RL}, "eval": {"limit": 8}})
STAGES = ("pretrain", "sft1", "sft2", "sft3", "rl1", "rl2", "rl2-otc")
SETTINGS = ["no-tool", "workflow", "sft12", "sft-rl", "sft-rl-otc"]


def server_url(events: list[dict]) -> str:
    (msg,) = [e["message"] for e in events if e["type"] == "log" and "environment server at" in e["message"]]
    return msg.rsplit(" ", 1)[-1]


def assert_server_down(url: str) -> None:
    with pytest.raises((urllib.error.URLError, OSError)):
        urllib.request.urlopen(url + "/v1/health", timeout=5)


@needs_server
def test_pipeline_end_to_end(tmp_path, write_config):
    run = tmp_path / "run"
    r = run_trainer("pipeline", "--config", str(write_config(CONFIG)), "--run-dir", str(run), timeout=400)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    events = read_events(run)
    for e in events:
        validate_event(e)
    assert assert_typed_round_trip(run) > len(events)  # and the rollouts' records
    for stage in STAGES:
        final = run / "stages" / stage / "final"
        assert (final / "config.json").is_file() and (final / "coa_stage.json").is_file(), stage
        mine = [e for e in events if e.get("stage") == stage]
        assert [e["type"] for e in mine][0] == "run_started", stage
        assert any(e["type"] == "metrics" for e in mine), stage
        assert [e["status"] for e in mine if e["type"] == "stage_finished"] == ["ok"], stage
    started = {e["stage"]: e for e in events if e["type"] == "run_started"}
    # each stage's first event names what its training step runs on this install, each fallback with its reason
    for stage in STAGES:
        assert list(started[stage]["fast_path"]) == [
            "packed attention",
            "loss head",
            "RMSNorm/SwiGLU",
            "RoPE",
            "AdamW",
            "rollout engine",
            "rollout attention",
            "activation checkpointing",
        ], stage
        assert started[stage]["fast_path"]["AdamW"].startswith("for-loop (CPU:"), stage
        assert started[stage]["fast_path"]["rollout engine"].startswith("eager decode step and prefill (CPU:"), stage
        assert started[stage]["fast_path"]["activation checkpointing"].startswith("off (CPU: peak resident"), stage
    assert started["sft2"]["fast_path"]["loss head"].startswith("chunked PyTorch (CPU:")
    assert started["rl2"]["fast_path"]["loss head"].startswith("checkpointed chunks (CPU: the fused GRPO head")
    assert started["sft1"]["fast_path"]["loss head"] == "checkpointed chunks (the pairwise loss is not token-local)"
    assert started["rl2-otc"]["config"]["stages"]["rl2"]["reward"]["scheme"] == "otc-grpo"
    assert started["rl2"]["config"]["stages"]["rl2"]["reward"]["scheme"] != "otc-grpo"
    assert [e["status"] for e in events if e["type"] == "stage_finished" and e["stage"] == "pipeline"] == ["ok"]

    results = json.loads((run / "results.json").read_text())
    assert list(results) == ["rows", "split", "tc_optimal", "otc_headroom", "claims"] and results["split"] == "test"
    table = RunTable.of(results)
    assert results["claims"] == run_claims(table.rows, table.tc_optimal)
    assert 0 <= results["tc_optimal"] <= 2 and results["otc_headroom"]["tc_optimal"] == results["tc_optimal"]
    assert [row["setting"] for row in results["rows"]] == SETTINGS
    for row in results["rows"]:
        assert set(row) == {"setting", "em", "tc", "tp", "format_error_rate"}
        assert 0 <= row["em"] <= 1 and row["tc"] >= 0, row
        assert row["tp"] is None or row["tp"] >= 0
        assert row["format_error_rate"] is None or 0 <= row["format_error_rate"] <= 1
    by = {row["setting"]: row for row in results["rows"]}
    assert by["no-tool"]["tc"] == 0 and by["workflow"]["tc"] >= 1  # the workflow always searches once
    evals = {e["stage"]: e for e in events if e["type"] == "eval" and e["split"] == "test"}
    assert set(evals) == set(SETTINGS) and all(evals[s]["metrics"]["questions"] == 8 for s in SETTINGS)
    md = (run / "results.md").read_text()
    assert all(f"| {s} |" in md for s in SETTINGS)
    assert_server_down(server_url(events))


@needs_server
def test_sigterm_checkpoints_the_running_stage_and_stops_the_server(tmp_path, write_config):
    cfg = write_config(merge(CONFIG, {"stages": {"pretrain": {"steps": 100000, "log_every": 1}}}))
    run = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src" / "trainer"), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [
            PY,
            "-m",
            "coa_trainer",
            "pipeline",
            "--config",
            str(cfg),
            "--run-dir",
            str(run),
            "--stages",
            "pretrain,results",
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # wait until the stage is training
            if '"progress"' in line and '"pretrain"' in line:
                break
        proc.send_signal(signal.SIGTERM)
        proc.stdout.read()
        assert proc.wait(timeout=60) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
    events = read_events(run)
    finished = {e["stage"]: e for e in events if e["type"] == "stage_finished"}
    assert finished["pretrain"]["status"] == "cancelled" and finished["pipeline"]["status"] == "cancelled"
    assert list((run / "stages" / "pretrain" / "checkpoints").glob("step-*.safetensors"))
    assert not (run / "stages" / "pretrain" / "final").exists()
    assert_server_down(server_url(events))

    # --resume continues the interrupted stage from its checkpoint, then skips it once it is finished
    cfg = write_config(CONFIG, "run2.json")
    for _ in range(2):
        r = run_trainer("pipeline", "--config", str(cfg), "--run-dir", str(run), "--stages", "pretrain", "--resume")
        assert r.returncode == 0, r.stdout[-2000:]
    events = read_events(run)
    resumed = [e for e in events if e["type"] == "run_started" and e["stage"] == "pretrain"][-1]
    assert resumed["resumed_from"] == finished["pretrain"]["step"] >= 1
    assert (run / "stages" / "pretrain" / "final" / "coa_stage.json").is_file()
    assert events[-2]["type"] == "progress" and any(
        "pretrain already finished, skipped" in e.get("message", "") for e in events[-4:]
    )


def test_bad_stage_list_is_one_error_event(tmp_path, write_config):
    r = run_trainer(
        "pipeline",
        "--config",
        str(write_config(CONFIG)),
        "--run-dir",
        str(tmp_path / "run"),
        "--stages",
        "pretrain,rl9",
    )
    assert r.returncode == 2
    (err,) = [e for e in read_events(tmp_path / "run") if e["type"] == "error"]
    assert err["code"] == "bad_config" and "rl9" in err["message"]


def test_comparisons_report_what_the_numbers_say():
    def row(s, em, tc):
        return ResultRow(s, em, tc, em / tc if tc else None, 0.0)

    lines = comparisons(
        [row("workflow", 0.5, 1.0), row("sft12", 0.4, 1.2), row("sft-rl", 0.7, 1.5), row("sft-rl-otc", 0.69, 1.0)]
    )
    text = "\n".join(lines)
    assert "the agent beats the always-search workflow" in text
    assert "OTC cuts tool calls and keeps EM" in text
    lines = comparisons([row("workflow", 0.8, 1.0), row("sft-rl", 0.7, 1.0), row("sft-rl-otc", 0.5, 1.2)])
    text = "\n".join(lines)
    assert "does NOT beat" in text and "does NOT cut tool calls and does NOT keep EM" in text
    lines = comparisons([row("sft-rl", 0.7, 1.0), row("sft-rl-otc", 0.7, 0.99)])  # −1 %: seed noise, not a cut
    assert "OTC barely changes tool calls and keeps EM" in "\n".join(lines)


def test_stage_command_lines_never_carry_the_env_token(tmp_path):
    """The env token never appears on a stage's command line: any local user reads every command line with `ps`
    (then rewrites the run's OTC state). The token goes in the stage's environment (COA_ENV_TOKEN);
    the end-to-end test above proves the stages still reach the server with it."""
    from coa_trainer.cli import parse_command
    from coa_trainer.env.client import EnvClient
    from coa_trainer.pipeline.pipeline import Pipeline

    opts = parse_command(["pipeline", "--config", str(tmp_path / "run.json"), "--run-dir", str(tmp_path)])
    p = Pipeline(opts, {}, writer=None)
    p.env = EnvClient("http://127.0.0.1:9", "s3cret-t0ken")
    for step in ("rl1", "rl2", "collect"):
        argv = p.stage_argv(step)
        assert "--env-url=http://127.0.0.1:9" in argv
        assert not any("s3cret" in a or a.startswith("--env-token") for a in argv), argv
