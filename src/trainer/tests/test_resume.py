"""Kill a run right after a checkpoint, resume it, and get exactly the uninterrupted run's losses and weights."""

import json
import os
import shutil
import signal
import subprocess

from safetensors.torch import load_file

from conftest import PY, REPO, merge, read_events, run_trainer

STEPS = 160


def _losses(run_dir, stage):
    return {
        e["step"]: e["values"]["loss"] for e in read_events(run_dir) if e["type"] == "metrics" and e["stage"] == stage
    }


def test_kill_and_resume_is_bit_identical(tmp_path, tiny_config, write_config):
    cfg = write_config(merge(tiny_config, {"stages": {"sft2": {"steps": STEPS, "checkpoint_every": 5}}}))
    # a pretrained model to fine-tune, shared by both runs
    base = tmp_path / "base"
    assert run_trainer("train", "--stage", "pretrain", "--config", str(cfg), "--run-dir", str(base)).returncode == 0
    for name in ("a", "b"):  # copies: a link leading out of a run directory is refused (base/rundir.py)
        shutil.copytree(base / "stages" / "pretrain" / "final", tmp_path / name / "stages" / "pretrain" / "final")
        shutil.copytree(base / "data", tmp_path / name / "data")

    a = tmp_path / "a"
    r = run_trainer("train", "--stage", "sft2", "--config", str(cfg), "--run-dir", str(a))
    assert r.returncode == 0, r.stdout[-2000:]

    b = tmp_path / "b"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src" / "trainer"), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [PY, "-m", "coa_trainer", "train", "--stage", "sft2", "--config", str(cfg), "--run-dir", str(b)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    killed_after = None
    assert proc.stdout is not None
    for line in proc.stdout:
        ev = json.loads(line)
        if ev["type"] == "checkpoint":
            proc.send_signal(signal.SIGKILL)  # no chance to clean up
            killed_after = ev["step"]
            break
    proc.wait(timeout=60)
    assert killed_after is not None and proc.returncode == -signal.SIGKILL
    assert not (b / "stages" / "sft2" / "final").exists()
    ckpts = sorted(p.name for p in (b / "stages" / "sft2" / "checkpoints").iterdir() if not p.name.startswith("."))
    assert ckpts and all(n.startswith("step-") and n.endswith(".safetensors") for n in ckpts)

    r = run_trainer("train", "--stage", "sft2", "--config", str(cfg), "--run-dir", str(b), "--resume")
    assert r.returncode == 0, r.stdout[-2000:]
    started = [e for e in read_events(b) if e["type"] == "run_started"]
    resumed_from = started[-1]["resumed_from"]
    assert resumed_from is not None and resumed_from >= killed_after

    la, lb = _losses(a, "sft2"), _losses(b, "sft2")
    assert len(la) == STEPS
    for step in range(resumed_from + 1, STEPS + 1):
        assert lb[step] == la[step], f"step {step}: {lb[step]!r} != {la[step]!r}"
    wa = load_file(str(a / "stages" / "sft2" / "final" / "model.safetensors"))
    wb = load_file(str(b / "stages" / "sft2" / "final" / "model.safetensors"))
    assert wa.keys() == wb.keys()
    for k in wa:
        assert (wa[k] == wb[k]).all(), k

    # the stage's cumulative count of trained tokens survives the kill (kept in the checkpoint)
    def last_total(run_dir):
        return [
            e["values"]["trained_tokens_total"]
            for e in read_events(run_dir)
            if e["type"] == "metrics" and e["stage"] == "sft2"
        ][-1]

    assert last_total(b) == last_total(a) > 0
