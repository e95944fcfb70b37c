"""torchrun with 2 CPU processes (gloo) gives the same losses as 1 process with the same global batch."""

import os
import subprocess

import pytest

from conftest import PY, REPO, merge, read_events, run_trainer


def _losses(run_dir, stage):
    return [(e["step"], e["values"]["loss"]) for e in read_events(run_dir) if e["type"] == "metrics"
            and e["stage"] == stage]


@pytest.mark.parametrize("stage", ["pretrain", "sft1", "pretrain-packed"])
def test_two_processes_equal_one(tmp_path, tiny_config, write_config, stage):
    # pretrain-packed: packed token-budget micro-batches, gradients accumulated under DDP's no_sync
    extra = {"packing": True, "micro_batch_tokens": 48} if stage.endswith("-packed") else {}
    stage = stage.removesuffix("-packed")
    over = {"stages": {stage: {"steps": 5, "batch_size": 4, **extra}}}
    cfg = write_config(merge(tiny_config, over))
    if stage != "pretrain":
        base = tmp_path / "base"
        assert run_trainer("train", "--stage", "pretrain", "--config", str(cfg), "--run-dir", str(base)
                           ).returncode == 0
        cfg = write_config(merge(tiny_config, {**over, "stages": {stage: {
            **over["stages"][stage], "init_from": str(base / "stages" / "pretrain" / "final")}}}), "run2.json")
    one = tmp_path / "one"
    r = run_trainer("train", "--stage", stage, "--config", str(cfg), "--run-dir", str(one))
    assert r.returncode == 0, r.stdout[-2000:]

    two = tmp_path / "two"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src" / "trainer"), "OMP_NUM_THREADS": "1",
           "GLOO_SOCKET_IFNAME": "lo"}
    r = subprocess.run([PY, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "-m",
                        "coa_trainer", "train", "--stage", stage, "--config", str(cfg), "--run-dir", str(two)],
                       cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    started = [e for e in read_events(two) if e["type"] == "run_started"]
    assert started[0]["world_size"] == 2
    a, b = _losses(one, stage), _losses(two, stage)
    assert len(a) == len(b) == 5
    for (sa, la), (sb, lb) in zip(a, b):
        assert sa == sb and abs(la - lb) <= 1e-5 * max(1.0, abs(la)), (sa, la, lb)
