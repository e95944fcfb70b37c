"""torchrun with 2 CPU processes (gloo) gives the same losses as 1 process with the same global batch."""

import os
import subprocess

import pytest

from conftest import PY, REPO, merge, read_events, run_trainer


def _losses(run_dir, stage):
    return [
        (e["step"], e["values"]["loss"]) for e in read_events(run_dir) if e["type"] == "metrics" and e["stage"] == stage
    ]


@pytest.mark.parametrize("stage", ["pretrain", "sft1", "pretrain-packed"])
def test_two_processes_equal_one(tmp_path, tiny_config, write_config, stage):
    # pretrain-packed: packed token-budget micro-batches, gradients accumulated under DDP's no_sync
    extra = {"packing": True, "micro_batch_tokens": 48} if stage.endswith("-packed") else {}
    stage = stage.removesuffix("-packed")
    over = {"stages": {stage: {"steps": 5, "batch_size": 4, **extra}}}
    cfg = write_config(merge(tiny_config, over))
    if stage != "pretrain":
        base = tmp_path / "base"
        assert run_trainer("train", "--stage", "pretrain", "--config", str(cfg), "--run-dir", str(base)).returncode == 0
        cfg = write_config(
            merge(
                tiny_config,
                {
                    **over,
                    "stages": {
                        stage: {**over["stages"][stage], "init_from": str(base / "stages" / "pretrain" / "final")}
                    },
                },
            ),
            "run2.json",
        )
    one = tmp_path / "one"
    r = run_trainer("train", "--stage", stage, "--config", str(cfg), "--run-dir", str(one))
    assert r.returncode == 0, r.stdout[-2000:]

    two = tmp_path / "two"
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "src" / "trainer"),
        "OMP_NUM_THREADS": "1",
        "GLOO_SOCKET_IFNAME": "lo",
    }
    r = subprocess.run(
        [
            PY,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node=2",
            "-m",
            "coa_trainer",
            "train",
            "--stage",
            stage,
            "--config",
            str(cfg),
            "--run-dir",
            str(two),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    started = [e for e in read_events(two) if e["type"] == "run_started"]
    assert started[0]["world_size"] == 2
    a, b = _losses(one, stage), _losses(two, stage)
    assert len(a) == len(b) == 5
    for (sa, la), (sb, lb) in zip(a, b):
        assert sa == sb and abs(la - lb) <= 1e-5 * max(1.0, abs(la)), (sa, la, lb)


def test_a_rank_that_joined_a_group_exits_with_its_status_and_its_output(tmp_path):
    """lifecycle.run_and_exit ends a torchrun worker without the interpreter's finalization (where gloo's worker
    threads can abort the process): the status each rank chose still reaches torchrun (0 and 7), and what each rank
    printed reaches its stdout and stderr; the interpreter's exit handlers never run (finalization was skipped)."""
    script = tmp_path / "rank.py"
    script.write_text(
        "import atexit, sys, torch\n"
        "import torch.distributed as dist\n"
        "from coa_trainer.base.distributed import DistInfo\n"
        "from coa_trainer.base.lifecycle import run_and_exit\n"
        "def main():\n"
        "    di = DistInfo.from_env()\n"
        "    di.init(torch.device('cpu'))\n"
        "    atexit.register(lambda: print(f'rank {di.rank} finalized'))\n"
        "    got = [None, None]\n"
        "    dist.all_gather_object(got, di.rank)\n"
        "    print(f'rank {di.rank} saw {got}', end='')\n"
        "    sys.stderr.write(f'rank {di.rank} err')\n"
        "    di.shutdown()\n"
        "    sys.exit(int(sys.argv[1]) if di.rank == 1 else 0)\n"
        "run_and_exit(main)\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "src" / "trainer"),
        "OMP_NUM_THREADS": "1",
        "GLOO_SOCKET_IFNAME": "lo",
    }

    def torchrun(code: int) -> subprocess.CompletedProcess:
        return subprocess.run(
            [
                PY,
                "-m",
                "torch.distributed.run",
                "--standalone",
                "--nproc_per_node=2",
                "--tee=3",
                str(script),
                str(code),
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    ok = torchrun(0)
    assert ok.returncode == 0, (ok.stdout + ok.stderr)[-3000:]
    for rank in (0, 1):
        assert f"rank {rank} saw [0, 1]" in ok.stdout and f"rank {rank} err" in ok.stderr
    assert "finalized" not in ok.stdout
    failed = torchrun(7)
    assert failed.returncode != 0
    assert "exitcode  : 7" in failed.stderr, failed.stderr[-3000:]
    assert "rank 1 saw [0, 1]" in failed.stdout
