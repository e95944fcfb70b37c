"""distributed.strategy fsdp: FSDP2 with 2 gloo processes under torchrun gives one process's losses (SFT stage, RL
stage, GRPO updates), writes sharded checkpoints (a state file per rank) that resume bit for bit on the same world size (and refuses
another), and still ends each stage with an ordinary HF directory."""

import json
import os
import shutil
import subprocess

import pytest
import torch
from conftest import (
    PY,
    REPO,
    TINY,
    needs_env_server,
    merge,
    read_events,
    run_trainer,
)

TESTS = REPO / "src" / "trainer" / "tests"
ENV = {**os.environ, "PYTHONPATH": str(REPO / "src" / "trainer"), "OMP_NUM_THREADS": "1", "GLOO_SOCKET_IFNAME": "lo"}


def torchrun(*args: str, cwd=REPO) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PY, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", *args],
        cwd=cwd,
        check=False,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )


def metrics(run_dir, stage):
    return {e["step"]: e["values"] for e in read_events(run_dir) if e["type"] == "metrics" and e["stage"] == stage}


def unfinish(run, stage):
    """As if killed while writing final/: no final directory, no stage_finished (a finished stage is not rerun)."""
    shutil.rmtree(run / "stages" / stage / "final")
    lines = (run / "events.jsonl").read_text().splitlines(keepends=True)
    (run / "events.jsonl").write_text("".join(x for x in lines if '"stage_finished"' not in x))


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """The tiny embedded model (random weights) and the benchmark files, shared by the stage tests."""
    from coa_trainer.data.benchmark import ensure_benchmark_files
    from coa_trainer.base.config import validate_config
    from coa_trainer.model.load import write_embedded_model
    from coa_trainer.data.benchmark import vocabulary_texts

    d = tmp_path_factory.mktemp("fsdpbase")
    config = validate_config(TINY)
    bench = ensure_benchmark_files(config, d / "data")
    write_embedded_model(config, vocabulary_texts(bench, config), d / "model", 0)
    return d


def _config(tmp_path, base, stages, name="run.json", **top):
    cfg = merge(
        TINY,
        {"benchmark": {"data_dir": str(base / "data")}, "distributed": {"strategy": "fsdp"}, "stages": stages, **top},
    )
    p = tmp_path / name
    p.write_text(json.dumps(cfg))
    return p


def test_fsdp_sft_stage_equals_one_process_and_resumes_bit_identically(tmp_path, base):
    """SFT-2 with packed token-budget micro-batches (the ranks get different numbers of them) and activation
    checkpointing inside the FSDP units: 2 FSDP processes log one process's losses; the sharded checkpoint at step 2
    resumes to exactly the uninterrupted steps 3-4; the final directory is a plain HF model with one process's
    weights."""
    cfg = _config(
        tmp_path,
        base,
        {
            "sft2": {
                "steps": 4,
                "batch_size": 4,
                "checkpoint_every": 2,
                "packing": True,
                "micro_batch_tokens": 200,
                "init_from": str(base / "model"),
            }
        },
        model={"gradient_checkpointing": True},
    )
    one, two = tmp_path / "one", tmp_path / "two"
    r = run_trainer("train", "--stage", "sft2", "--config", str(cfg), "--run-dir", str(one))
    assert r.returncode == 0, r.stdout[-2000:]
    r = torchrun("-m", "coa_trainer", "train", "--stage", "sft2", "--config", str(cfg), "--run-dir", str(two))
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert [e["world_size"] for e in read_events(two) if e["type"] == "run_started"] == [2]
    m1, m2 = metrics(one, "sft2"), metrics(two, "sft2")
    assert sorted(m1) == sorted(m2) == [1, 2, 3, 4]
    for s in m1:
        assert m2[s]["loss"] == pytest.approx(m1[s]["loss"], rel=1e-5), s
        assert m2[s]["grad_norm"] == pytest.approx(m1[s]["grad_norm"], rel=1e-4), s
    ckpts = sorted(p.name for p in (two / "stages" / "sft2" / "checkpoints").iterdir())
    assert ckpts == ["step-000002.sharded"]  # sharded: one state file per rank, no single-file checkpoint
    shards = {p.name for p in (two / "stages" / "sft2" / "checkpoints" / ckpts[0]).iterdir()}
    assert shards == {"rank-00000.safetensors", "rank-00001.safetensors"}  # no pickle anywhere (model/statefile.py)

    from transformers import AutoModelForCausalLM

    a = AutoModelForCausalLM.from_pretrained(str(one / "stages" / "sft2" / "final"))
    b = AutoModelForCausalLM.from_pretrained(str(two / "stages" / "sft2" / "final"))
    for (ka, va), (kb, vb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert ka == kb and torch.allclose(va, vb, atol=1e-5), ka

    resumed = tmp_path / "resumed"
    shutil.copytree(two, resumed)
    unfinish(resumed, "sft2")
    r = torchrun(
        "-m", "coa_trainer", "train", "--stage", "sft2", "--config", str(cfg), "--run-dir", str(resumed), "--resume"
    )
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert [e["resumed_from"] for e in read_events(resumed) if e["type"] == "run_started"] == [None, 2]
    events = read_events(resumed)
    second = max(i for i, e in enumerate(events) if e["type"] == "run_started")
    again = [e for e in events[second:] if e["type"] == "metrics"]
    assert [e["step"] for e in again] == [3, 4]
    # exactly once across the resume: the first attempt's steps 3-4 were dropped from events.jsonl (base/events.py)
    assert [e["step"] for e in events if e["type"] == "metrics"] == [1, 2, 3, 4]
    for e in again:
        for k in ("loss", "grad_norm", "lr"):
            assert e["values"][k] == m2[e["step"]][k], (e["step"], k)

    # resumed by one process: a clear error, not a crash or a silent restart
    unfinish(resumed, "sft2")
    r = run_trainer("train", "--stage", "sft2", "--config", str(cfg), "--run-dir", str(resumed), "--resume")
    assert r.returncode == 2
    err = [e for e in read_events(resumed) if e["type"] == "error"][-1]
    assert err["code"] == "bad_config" and "sharded (FSDP) checkpoint" in err["message"]


def test_fsdp_grpo_updates_and_generation_equal_one_process(tmp_path):
    """GRPO updates (2 PPO epochs, k3 KL, packed micro-batches) and greedy generation on gathered parameters:
    2 FSDP processes give one process's trajectories, loss terms, gradient norm and final weights."""
    worker = str(TESTS / "fsdp_worker.py")
    r = subprocess.run(
        [PY, worker, str(tmp_path / "one.json")], env=ENV, capture_output=True, text=True, timeout=300, check=False
    )
    assert r.returncode == 0, r.stderr[-3000:]
    r = torchrun(worker, str(tmp_path / "two.json"))
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    a, b = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("one", "two"))
    assert a["generated"] == b["generated"] and len(a["generated"]) == 8
    assert a["totals"]["count"] == b["totals"]["count"] > 0 and a["totals"]["clip_sum"] > 0
    for k, v in a["totals"].items():
        assert b["totals"][k] == pytest.approx(v, rel=1e-5, abs=1e-5), k
    assert b["grad_norm"] == pytest.approx(a["grad_norm"], rel=1e-5)
    assert a["weights"].keys() == b["weights"].keys()
    for k, v in a["weights"].items():
        assert b["weights"][k] == pytest.approx(v, abs=1e-4), k
        assert b["weights_abs"][k] == pytest.approx(a["weights_abs"][k], abs=1e-4), k


needs_server = needs_env_server()


@needs_server
def test_fsdp_rl_stage_equals_one_process(tmp_path, base):
    """RL-2 under FSDP2: rollouts on gathered parameters, held-out eval on rank 0, sharded checkpoints, the final HF
    directory; near-greedy sampling gives one process's trajectories, so the logged metrics agree."""
    rl = {
        "prompts_per_step": 2,
        "group_size": 4,
        "max_new_tokens": 16,
        "max_turns": 2,
        "max_obs_tokens": 24,
        "sample_every": 0,
        "heldout_every": 2,
        "heldout_limit": 4,
        "warmup_steps": 1,
        "steps": 2,
        "temperature": 0.001,
        "checkpoint_every": 1,
        "kl_coef": 0.01,
        "init_from": str(base / "model"),
    }
    cfg = _config(tmp_path, base, {"rl2": rl})
    one, two = tmp_path / "one", tmp_path / "two"
    r = run_trainer("train", "--stage", "rl2", "--config", str(cfg), "--run-dir", str(one))
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    r = torchrun("-m", "coa_trainer", "train", "--stage", "rl2", "--config", str(cfg), "--run-dir", str(two))
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    m1, m2 = metrics(one, "rl2"), metrics(two, "rl2")
    assert sorted(m1) == sorted(m2) == [1, 2]
    for s in (1, 2):
        assert m2[s]["trajectories"] == 8
        for k in ("reward_mean", "tc", "response_len", "truncation_ratio", "think_len"):
            assert m2[s][k] == m1[s][k], (s, k)
        for k in ("loss", "kl", "entropy"):
            assert m2[s][k] == pytest.approx(m1[s][k], rel=1e-4, abs=1e-6), (s, k)
    assert m2[2]["heldout_em"] == m1[2]["heldout_em"]
    assert [p.name for p in (two / "stages" / "rl2" / "checkpoints").iterdir()] == ["step-000001.sharded"]
    assert (two / "stages" / "rl2" / "final" / "config.json").is_file()
    evals = [e for e in read_events(two) if e["type"] == "eval"]
    first = next(e for e in read_events(one) if e["type"] == "eval")
    assert len(evals) == 1 and evals[0]["metrics"] == first["metrics"]
