"""What must not turn a stage's outcome into a lie: a stdout or stderr that cannot be written (a full disk) does not
lose the stage — events.jsonl is the record — and a training run that goes non-finite fails at the step where it
did, instead of training an all-NaN model to `ok` or ending in an overflow traceback."""

import os
import subprocess

import pytest

from conftest import PY, REPO, merge, read_events, run_trainer


def test_a_full_disk_on_stdout_and_stderr_does_not_lose_the_stage(tmp_path, tiny_config, write_config):
    """`train … > /dev/full 2>&1`: every write to stdout and stderr fails with ENOSPC (it was an internal error and
    exit 1 within 0.1 s). The stage trains, saves and finishes `ok`, and its events are all in the run directory."""
    cfg = write_config(merge(tiny_config, {"stages": {"pretrain": {"steps": 2}}}))
    run = tmp_path / "run"
    with open("/dev/full", "w") as full:
        env = {**os.environ, "PYTHONPATH": str(REPO / "src" / "trainer"), "OMP_NUM_THREADS": "1"}
        code = subprocess.run([PY, "-m", "coa_trainer", "train", "--stage", "pretrain", "--config", str(cfg),
                               "--run-dir", str(run)], cwd=REPO, env=env, stdout=full, stderr=full,
                              timeout=240).returncode
    events = read_events(run)
    assert code == 0, [e for e in events if e["type"] == "error"]
    assert [e["type"] for e in events if e["type"] in ("error", "stage_finished")] == ["stage_finished"]
    assert events[-1]["status"] == "ok" and [e["step"] for e in events if e["type"] == "metrics"] == [1, 2]
    assert (run / "stages" / "pretrain" / "final" / "config.json").is_file()


@pytest.mark.parametrize(("lr", "step", "why"), [
    (1e10, 2, "the weights are no longer finite"),  # finite, and NaN from the second step on (was: `ok`, exit 0)
    (1e300, 1, "the optimiser update overflowed"),  # too large for float32 (was: an internal overflow traceback)
])
def test_a_diverging_stage_fails_at_the_step_it_diverged_and_saves_nothing_from_it(tmp_path, tiny_config,
                                                                                  write_config, lr, step, why):
    cfg = write_config(merge(tiny_config, {"stages": {"pretrain": {"steps": 4, "lr": lr, "checkpoint_every": 1,
                                                                   "checkpoint_minutes": 0}}}))
    run = tmp_path / "run"
    r = run_trainer("train", "--stage", "pretrain", "--config", str(cfg), "--run-dir", str(run))
    events = read_events(run)
    (err,) = [e for e in events if e["type"] == "error"]
    assert r.returncode == 1 and err["code"] == "diverged" and "detail" not in err, err
    assert err["message"].startswith(f"pretrain: training diverged at step {step}: ") and why in err["message"], err
    assert "stages.pretrain.lr" in err["message"]
    assert not [e for e in events if e["type"] == "stage_finished"]
    assert [e["step"] for e in events if e["type"] == "checkpoint"] == list(range(1, step)), "no NaN checkpoint"
    assert not (run / "stages" / "pretrain" / "final").exists()
