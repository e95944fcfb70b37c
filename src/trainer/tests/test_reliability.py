"""Reliability on the trainer side: validated labels (and SFT stages honouring them), one trainer per run
directory (stale locks reclaimed), SIGTERM during start-up, events exactly once across resume. The SIGKILL drills of
whole stages and pipelines are the chaos suite (test/chaos)."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from coa_trainer.base.events import STEP_EVENTS, EventWriter
from coa_trainer.base.lifecycle import LOCK_NAME, RunLock, RunLockBusy
from conftest import PY, REPO, merge, read_events, run_trainer
from coa_trainer.contracts.events import CheckpointEvent, LogEvent, MetricsEvent, ProgressEvent

ENV = {**os.environ, "PYTHONPATH": str(REPO / "src" / "trainer"), "OMP_NUM_THREADS": "1"}


def _wait_for_progress(proc: subprocess.Popen, n: int) -> None:
    """Read the trainer's stdout until its n-th progress event: it is mid-stage from then on."""
    assert proc.stdout is not None
    seen = 0
    for line in proc.stdout:
        seen += '"progress"' in line
        if seen == n:
            return


@pytest.mark.parametrize("label", ["../../x", "/tmp/abs", "a/b", "..", "rl2..otc", "-x", "a b"])
def test_label_that_is_not_a_plain_name_is_refused(tmp_path, label):
    victim = tmp_path / "x" / "final"
    victim.mkdir(parents=True)
    (victim / "keep.txt").write_text("mine")
    run = tmp_path / "a" / "b" / "run"
    r = subprocess.run(
        [
            PY,
            "-m",
            "coa_trainer",
            "train",
            "--stage",
            "sft2",
            "--config",
            "nope.json",
            "--run-dir",
            str(run),
            f"--label={label}",
        ],
        cwd=REPO,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert r.returncode == 2
    assert "--label" in r.stderr and "is not a valid name" in r.stderr and "Traceback" not in r.stderr
    assert not run.exists() and (victim / "keep.txt").read_text() == "mine"


def test_sft_stage_honours_label_and_run_dir_lock_refuses_a_second_trainer(tmp_path, tiny_config, write_config):
    cfg = write_config(merge(tiny_config, {"stages": {"pretrain": {"steps": 2}, "sft1": {"steps": 2}}}))
    run = tmp_path / "run"
    assert run_trainer("train", "--stage", "pretrain", "--config", str(cfg), "--run-dir", str(run)).returncode == 0
    r = run_trainer("train", "--stage", "sft1", "--config", str(cfg), "--run-dir", str(run), "--label", "sft1-b")
    assert r.returncode == 0, r.stdout[-2000:]
    mine = [e for e in read_events(run) if e.get("stage") in ("sft1", "sft1-b")]
    assert mine and {e["stage"] for e in mine} == {"sft1-b"}, "every event of the labelled run carries the label"
    assert (run / "stages" / "sft1-b" / "final" / "coa_stage.json").is_file()
    assert json.loads((run / "stages" / "sft1-b" / "final" / "coa_stage.json").read_text())["stage"] == "sft1-b"
    assert not (run / "stages" / "sft1").exists()

    # A trainer holding the directory: a second one refuses in one line, writes nothing, exits 2.
    lock = RunLock.acquire(run, "pipeline")
    try:
        before = (run / "events.jsonl").read_bytes()
        for argv in (["train", "--stage", "sft2"], ["pipeline", "--stages", "sft2"], ["collect"]):
            r = run_trainer(*argv, "--config", str(cfg), "--run-dir", str(run), "--resume")
            assert r.returncode == 2
            assert "is in use by another trainer" in r.stderr and f"pid {os.getpid()}" in r.stderr, r.stderr
            assert (run / "events.jsonl").read_bytes() == before
        with pytest.raises(RunLockBusy):
            RunLock.acquire(run, "again")
    finally:
        lock.release()


def test_a_lock_left_by_a_dead_trainer_is_reclaimed(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    run = tmp_path / "run"
    run.mkdir()
    (run / LOCK_NAME).write_text(json.dumps({"pid": dead.pid, "command": "pipeline", "since": 0}) + "\n")
    lock = RunLock.acquire(run, "train --stage sft1")
    try:
        assert json.loads((run / LOCK_NAME).read_text())["pid"] == os.getpid()
    finally:
        lock.release()
    # and once released, the next trainer gets it
    RunLock.acquire(run, "next").release()


def torch_loading(pid: int) -> bool:
    """The process is importing torch (its shared library is mapped): imports, well before any stage code runs."""
    with open(f"/proc/{pid}/maps", encoding="utf-8") as f:
        return "libtorch" in f.read()


@pytest.mark.parametrize("phase", ["imports", "data", "training"])
def test_sigterm_during_startup_is_a_cancelled_stage_and_exit_130(tmp_path, tiny_config, write_config, phase):
    """SIGTERM before the stage's own handler exists (it comes with the model: while importing torch or writing the
    benchmark data) is `stage_finished` cancelled and exit 130 in every phase, not a 143 with no event."""
    cfg = write_config(merge(tiny_config, {"stages": {"pretrain": {"steps": 100000}}}))
    run = tmp_path / "run"
    proc = subprocess.Popen(
        [PY, "-m", "coa_trainer", "train", "--stage", "pretrain", "--config", str(cfg), "--run-dir", str(run)],
        cwd=REPO,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        if phase == "training":
            assert proc.stdout is not None
            for line in proc.stdout:
                if '"progress"' in line:
                    break
        else:
            reached = (lambda: torch_loading(proc.pid)) if phase == "imports" else (lambda: (run / "data").is_dir())
            deadline = time.time() + 120
            while not reached() and proc.poll() is None and time.time() < deadline:
                time.sleep(0.002)
        assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, (proc.returncode, err[-2000:])
    assert "Traceback" not in err
    finished = [e for e in read_events(run) if e["type"] == "stage_finished"]
    assert [(e["stage"], e["status"]) for e in finished] == [("pretrain", "cancelled")]


def test_resume_drops_the_events_of_the_steps_it_redoes(tmp_path):
    """The writer's half of exactly-once events: a checkpoint records the file size; a resume from it drops the
    stage's step events written after it (and nothing else); a writer holding the old file follows the new one."""
    run = tmp_path / "run"
    pipeline = EventWriter(run, echo=None)
    stage = EventWriter(run, echo=None)
    pipeline.emit(LogEvent(level="info", message="pipeline: sft2"))
    for step in range(1, 7):
        stage.emit(MetricsEvent(stage="sft2", step=step, values={"loss": 1.0 / step}))
        stage.emit(ProgressEvent(stage="sft2", step=step, total=10, elapsed_s=1.0, eta_s=None))
        stage.emit(MetricsEvent(stage="other", step=step, values={"loss": 0.5}))
        if step == 4:
            marks = stage.resume_marks()
            stage.emit(CheckpointEvent(stage="sft2", step=4, path="ckpt"))
    stage.close()  # SIGKILL: nothing more from it; a line cut in half by the kill
    with open(run / "events.jsonl", "a", encoding="utf-8") as f:
        f.write('{"v": 1, "type": "metr')
    resumed = EventWriter(run, echo=None)
    dropped = resumed.supersede("sft2", 4, marks["events_offset"])
    assert dropped == 4  # metrics + progress of steps 5 and 6
    for step in (5, 6):
        resumed.emit(MetricsEvent(stage="sft2", step=step, values={"loss": 1.0 / step}))
    pipeline.emit(LogEvent(level="info", message="pipeline: after"))  # the pipeline's writer follows the new file
    lines = (run / "events.jsonl").read_text(encoding="utf-8").splitlines()
    events = [json.loads(x) for x in lines if x.startswith('{"v": 1, "time"')]
    keys = [(e["type"], e["stage"], e["step"]) for e in events if e["type"] in STEP_EVENTS]
    assert len(keys) == len(set(keys)), "each (type, stage, step) once"
    assert sorted(e["step"] for e in events if e["type"] == "metrics" and e["stage"] == "sft2") == [1, 2, 3, 4, 5, 6]
    assert [e["step"] for e in events if e.get("stage") == "other"] == [1, 2, 3, 4, 5, 6], "other stages untouched"
    assert events[-1]["message"] == "pipeline: after"
    assert not any(x.startswith('{"v": 1, "type": "metr') for x in lines), "the line cut by the kill is gone"
    assert not list(run.glob("*.resume-tmp"))


# ---------------------------------------------------------------- a trainer that never loses a stage


def _pretrain_cfg(write_config, tiny_config, **stage):
    return write_config(
        merge(tiny_config, {"stages": {"pretrain": {"steps": 12, "log_every": 1, "checkpoint_minutes": 0, **stage}}})
    )


def _events_ok(run) -> list[dict]:
    events = read_events(run)
    keys = [(e["type"], e["stage"], e["step"]) for e in events if e["type"] in STEP_EVENTS]
    assert len(keys) == len(set(keys)), "each step event once"
    return events


def test_a_reader_that_goes_away_does_not_stop_the_stage(tmp_path, tiny_config, write_config):
    """The editor reloads, `| tee` ends: the trainer's stdout pipe closes. The stage must not die at its next event
    with a BrokenPipeError and no checkpoint: events go to events.jsonl only and the stage finishes."""
    cfg = _pretrain_cfg(write_config, tiny_config)
    run = tmp_path / "run"
    proc = subprocess.Popen(
        [PY, "-m", "coa_trainer", "train", "--stage", "pretrain", "--config", str(cfg), "--run-dir", str(run)],
        cwd=REPO,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    proc.stdout.readline()  # the first event, then the reader is gone
    proc.stdout.close()
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-2000:]
    finished = [e for e in _events_ok(run) if e["type"] == "stage_finished"]
    assert [(e["stage"], e["status"]) for e in finished] == [("pretrain", "ok")]
    assert (run / "stages" / "pretrain" / "final" / "config.json").is_file()


@pytest.mark.parametrize("signals", [("SIGINT",), ("SIGHUP",), ("SIGTERM", "SIGINT")])
def test_every_stop_signal_checkpoints_and_cancels(tmp_path, tiny_config, write_config, signals):
    """Ctrl-C, SIGHUP, and SIGTERM then SIGINT 5 ms later (a second signal during the save) each checkpoint, write
    `cancelled` and exit 130 — no traceback, no silent exit, no aborted save — and a resume finishes."""
    cfg = _pretrain_cfg(write_config, tiny_config, steps=100000)
    run = tmp_path / "run"
    proc = subprocess.Popen(
        [PY, "-m", "coa_trainer", "train", "--stage", "pretrain", "--config", str(cfg), "--run-dir", str(run)],
        cwd=REPO,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for_progress(proc, 3)
        for i, name in enumerate(signals):
            if i:
                time.sleep(0.005)
            proc.send_signal(getattr(signal, name))
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and "Traceback" not in err, (proc.returncode, err[-2000:])
    events = _events_ok(run)
    finished = [e for e in events if e["type"] == "stage_finished"]
    assert [(e["stage"], e["status"]) for e in finished] == [("pretrain", "cancelled")]
    ckpt = [e for e in events if e["type"] == "checkpoint"]
    assert ckpt and ckpt[-1]["step"] >= 3 and Path(ckpt[-1]["path"]).is_file()
    assert not list((run / "stages" / "pretrain" / "checkpoints").glob("*.tmp"))


def test_checkpoints_by_time_and_no_duplicate_events_after_a_kill_before_the_first(tmp_path, tiny_config, write_config):
    """checkpoint_minutes saves without a step cadence; and a stage SIGKILLed before any checkpoint, resumed, starts
    over without keeping its first attempt's step events (22 duplicates in SFT-2 before)."""
    cfg = _pretrain_cfg(write_config, tiny_config, steps=6, checkpoint_minutes=0.0001)
    run = tmp_path / "timed"
    assert run_trainer("train", "--stage", "pretrain", "--config", str(cfg), "--run-dir", str(run)).returncode == 0
    steps = [e["step"] for e in read_events(run) if e["type"] == "checkpoint" and "final" not in e["path"]]
    assert steps and all(1 <= s < 6 for s in steps), "saved by the clock, with checkpoint_every 0"

    cfg = _pretrain_cfg(write_config, tiny_config, steps=40)  # no checkpoint before the kill
    run = tmp_path / "killed"
    argv = [PY, "-m", "coa_trainer", "train", "--stage", "pretrain", "--config", str(cfg), "--run-dir", str(run)]
    proc = subprocess.Popen(argv, cwd=REPO, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    _wait_for_progress(proc, 4)
    proc.kill()
    proc.wait()
    with open(run / "events.jsonl", "a", encoding="utf-8") as f:  # the kill cut an event in half
        f.write('{"v": 1, "time": 1, "run": "killed", "type": "metr')
    r = subprocess.run([*argv, "--resume"], cwd=REPO, env=ENV, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:]
    events = _events_ok(run)
    assert [e["step"] for e in events if e["type"] == "metrics"] == list(range(1, 41))
    assert all(line.endswith("}") for line in (run / "events.jsonl").read_text().splitlines())


def test_a_label_naming_another_stage_is_refused(tmp_path, tiny_config, write_config):
    cfg = write_config(merge(tiny_config, {"stages": {"pretrain": {"steps": 2}, "sft2": {"steps": 2}}}))
    run = tmp_path / "run"
    assert run_trainer("train", "--stage", "pretrain", "--config", str(cfg), "--run-dir", str(run)).returncode == 0
    before = (run / "stages" / "pretrain" / "final" / "coa_stage.json").read_bytes()
    r = run_trainer("train", "--stage", "sft2", "--config", str(cfg), "--run-dir", str(run), "--label", "pretrain")
    (err,) = [e for e in read_events(run) if e["type"] == "error"]
    assert r.returncode == 2 and err["code"] == "bad_config" and "names another stage" in err["message"], err
    assert (run / "stages" / "pretrain" / "final" / "coa_stage.json").read_bytes() == before
