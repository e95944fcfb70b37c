"""A stop signal (SIGINT, SIGTERM, SIGHUP) ends a stage at once in every phase — an SFT-style update, a checkpoint
being written, an RL rollout, an RL update, the held-out check, the final evaluation — with the last completed step
checkpointed, `stage_finished` cancelled and exit 130; a resume from there ends exactly where an uninterrupted run
does. The phase is read from the trainer's own events (COA_TRACE_PHASES: a debug `log` as each phase begins), and the
trainer's stop line names the phase the signal came in, so each test proves it stopped the phase it names. How fast
each phase stops is measured by bench/reliability/signals.py, not here."""

import json
import os
import signal
import subprocess

import pytest

from coa_trainer.base.events import STEP_EVENTS
from conftest import PY, REPO, TINY, merge, needs_env_server, read_events, run_trainer

ENV = {**os.environ, "PYTHONPATH": str(REPO / "src" / "trainer"), "OMP_NUM_THREADS": "1", "COA_TRACE_PHASES": "1"}
# Big enough that each phase lasts a good fraction of a second on a loaded machine (the signal must land inside it):
# ~6 M parameters, so a step's forward/backward takes ~1 s and its checkpoint (70 MB with AdamW's moments) ~0.3 s.
PRETRAIN = merge(
    TINY,
    {
        "model": {
            "embedded": {
                "hidden_size": 256,
                "num_layers": 6,
                "num_heads": 4,
                "num_kv_heads": 2,
                "intermediate_size": 1024,
                "max_position": 512,
            }
        },
        "stages": {"pretrain": {"steps": 2, "checkpoint_every": 1, "checkpoint_minutes": 0}},
    },
)


def stop_in(
    argv: list[str], phase: str, step: int, sig: signal.Signals, env: dict | None = None
) -> subprocess.CompletedProcess:
    """Run the trainer until its trace says `phase` of `step` began, send `sig`, and wait for it to end."""
    proc = subprocess.Popen(
        [PY, "-m", "coa_trainer", *argv],
        cwd=REPO,
        env={**ENV, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            e = json.loads(line)
            assert e["type"] not in ("stage_finished", "error"), f"ended before {phase} of step {step}: {e}"
            if e["type"] == "log" and e["level"] == "debug" and e["message"].endswith(f": {phase} of step {step}"):
                proc.send_signal(sig)
                break
        else:
            raise AssertionError(f"no {phase} of step {step}")
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def assert_cancelled(
    r: subprocess.CompletedProcess, run, label: str, phase: str, at: int, sig: signal.Signals, step: int
) -> list[dict]:
    """Exit 130 without a traceback; the stop line says `sig` came during `phase` of step `at`; the stage is
    cancelled at `step` (its last completed step), whose checkpoint is the newest and complete; every step event
    once."""
    assert r.returncode == 130 and "Traceback" not in r.stderr, (r.returncode, r.stderr[-2000:])
    events = read_events(run)
    keys = [
        (e["type"], e["stage"], e["step"], e.get("kind"), e.get("split")) for e in events if e["type"] in STEP_EVENTS
    ]
    assert len(keys) == len(set(keys)), "each step event once (alerts: each kind once)"
    mine = [e for e in events if e.get("stage") == label or e.get("message", "").startswith(f"{label}: ")]
    stopped = [e["message"] for e in mine if e["type"] == "log" and "stopped by" in e["message"]]
    assert stopped == [
        f"{label}: stopped by {sig.name} during {phase} of step {at}; resume with --resume from step {step}"
    ], stopped
    assert mine[-1]["type"] == "stage_finished" and mine[-1]["status"] == "cancelled" and mine[-1]["step"] == step
    ckpts = [e for e in events if e["type"] == "checkpoint" and e["stage"] == label]
    assert ckpts[-1]["step"] == step and os.path.exists(ckpts[-1]["path"]), ckpts[-1:]
    assert len([c for c in ckpts if c["step"] == step]) == 1, "the last completed step is saved once"
    folder = run / "stages" / label / "checkpoints"
    assert not [p.name for p in folder.iterdir() if p.name.startswith(".")], "no half-written checkpoint left"
    assert not (run / "stages" / label / "final").exists(), "a stopped stage is not finished"
    return events


def test_pretrain_stops_at_once_in_its_update_checkpoint_and_evaluation_and_resumes_exactly(tmp_path, write_config):
    """SIGINT in the middle of a step's forward/backward drops that step (the checkpoint is the step before, with
    the RNG states from before it), and the resumed run trains that step exactly as an uninterrupted run does (the
    evaluation-stopped run below never stopped in a step: its losses are the reference); SIGHUP while a checkpoint is
    written lets the write finish and saves nothing more; SIGTERM in the final evaluation (after the last step: once
    ignored, the stage ended `ok`) stops it."""
    cfg = write_config(PRETRAIN)
    argv = ["train", "--stage", "pretrain", "--config", str(cfg), "--run-dir"]

    mid_step = tmp_path / "update"
    r = stop_in([*argv, str(mid_step)], "update", 2, signal.SIGINT)
    assert_cancelled(r, mid_step, "pretrain", "update", 2, signal.SIGINT, 1)

    writing = tmp_path / "checkpoint"
    r = stop_in([*argv, str(writing)], "checkpoint", 1, signal.SIGHUP)
    assert_cancelled(r, writing, "pretrain", "checkpoint", 1, signal.SIGHUP, 1)

    evaluating = tmp_path / "eval"
    r = stop_in([*argv, str(evaluating)], "eval", 2, signal.SIGTERM)
    events = assert_cancelled(r, evaluating, "pretrain", "eval", 2, signal.SIGTERM, 2)
    assert not [e for e in events if e["type"] == "eval"], "the evaluation was cut, not finished"

    r = run_trainer(*argv, str(mid_step), "--resume")
    assert r.returncode == 0, r.stdout[-2000:]
    assert [e["status"] for e in read_events(mid_step) if e["type"] == "stage_finished"] == ["cancelled", "ok"]
    losses = [
        {e["step"]: e["values"]["loss"] for e in read_events(run) if e["type"] == "metrics"}
        for run in (mid_step, evaluating)
    ]
    assert losses[0] == losses[1] and sorted(losses[0]) == [1, 2]


# ---------------------------------------------------------------- RL: rollout, update, held-out check, evaluation

RL = {
    "steps": 1,
    "prompts_per_step": 2,
    "group_size": 4,
    "max_new_tokens": 32,
    "max_turns": 2,
    "max_obs_tokens": 24,
    "heldout_every": 1,
    "heldout_limit": 8,
    "warmup_steps": 1,
    "log_every": 1,
    "checkpoint_minutes": 0,
}
RL_MODEL = {
    "model": {
        "embedded": {
            "hidden_size": 128,
            "num_layers": 4,
            "num_heads": 4,
            "num_kv_heads": 2,
            "intermediate_size": 256,
            "max_position": 512,
        }
    }
}


@pytest.fixture(scope="module")
def rl_base(tmp_path_factory):
    """A 0.6 M-parameter embedded model (a rollout of 8 trajectories, an update: about a second each), the
    benchmark files and one environment server, shared by the RL tests."""
    from coa_trainer.base.config import validate_config
    from coa_trainer.data.benchmark import ensure_benchmark_files, vocabulary_texts
    from coa_trainer.env.client import EnvClient
    from coa_trainer.model.load import write_embedded_model

    d = tmp_path_factory.mktemp("rlstop")
    config = validate_config(merge(TINY, RL_MODEL))
    bench = ensure_benchmark_files(config, d / "data")
    write_embedded_model(config, vocabulary_texts(bench, config), d / "model", 0)
    cfg = d / "run.json"
    cfg.write_text(
        json.dumps(
            merge(
                TINY,
                {
                    **RL_MODEL,
                    "benchmark": {"data_dir": str(d / "data")},
                    "stages": {
                        "rl1": {**RL, "init_from": str(d / "model"), "reward": {"scheme": "otc-grpo", "params": {}}}
                    },
                },
            )
        )
    )
    with EnvClient.start(d / "data" / "corpus.jsonl", "coa") as env:
        yield (
            ["train", "--stage", "rl1", "--config", str(cfg), f"--env-url={env.url}", "--run-dir"],
            {"COA_ENV_TOKEN": env.token},
        )


@needs_env_server()
@pytest.mark.parametrize(
    ("phase", "step", "sig", "saved"),
    [
        ("rollout", 1, signal.SIGTERM, 0),  # generation and the tool calls to the server: the step is dropped
        ("update", 1, signal.SIGINT, 0),  # its forward/backward, after the grading moved the OTC minimum: dropped too
        ("heldout", 1, signal.SIGHUP, 1),  # the step's update is done: only the check goes, the step stands
        ("eval", 1, signal.SIGINT, 1),  # the final evaluation (its model complete)
    ],
)
def test_rl_stops_at_once_in_every_phase(tmp_path, rl_base, phase, step, sig, saved):
    argv, token = rl_base
    run = tmp_path / "run"
    r = stop_in([*argv, str(run)], phase, step, sig, token)
    events = assert_cancelled(r, run, "rl1", phase, step, sig, saved)
    metrics = {e["step"]: e["values"] for e in events if e["type"] == "metrics"}
    assert sorted(metrics) == list(range(1, saved + 1))
    if phase == "heldout":
        assert "heldout_em" not in metrics[1], "the cut check reports nothing"
    if phase == "eval":  # --resume only evaluates and saves: no step again
        r = run_trainer(*argv, str(run), "--resume", env=token)
        assert r.returncode == 0, r.stdout[-2000:]
        events = read_events(run)
        assert [e["step"] for e in events if e["type"] == "metrics"] == [1]
        assert [e["split"] for e in events if e["type"] == "eval"] == ["dev"]
        assert (run / "stages" / "rl1" / "final" / "coa_stage.json").is_file()


@needs_env_server()
def test_pipeline_stops_with_its_stage_during_the_stage_evaluation(tmp_path, write_config):
    """SIGHUP to the pipeline while its stage evaluates (the end of a stage, where a stop was once ignored: the stage
    ended `ok` and wrote final/, so a resume skipped it unevaluated): the stage and the pipeline both end cancelled,
    exit 130, and the stage has no final/."""
    cfg = write_config(merge(PRETRAIN, {"stages": {"pretrain": {"steps": 1}}}))
    run = tmp_path / "run"
    r = stop_in(
        ["pipeline", "--config", str(cfg), "--run-dir", str(run), "--stages", "pretrain"], "eval", 1, signal.SIGHUP
    )
    assert r.returncode == 130 and "Traceback" not in r.stderr, (r.returncode, r.stderr[-2000:])
    finished = {e["stage"]: e["status"] for e in read_events(run) if e["type"] == "stage_finished"}
    assert finished == {"pretrain": "cancelled", "pipeline": "cancelled"}
    assert not (run / "stages" / "pretrain" / "final").exists()
