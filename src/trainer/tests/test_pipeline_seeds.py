"""`pipeline --seeds N`: one whole pipeline per seed in its own directory (own config, knowledge base, server), the
aggregated results beside them, SIGTERM reaching the running seed's stage, and --resume skipping finished seeds.
The models are left out (--stages results): the plumbing is under test here, the training in test_pipeline.py."""

import json
import os
import signal
import subprocess

from conftest import (
    PY,
    REPO,
    TINY,
    needs_env_server,
    merge,
    read_events,
    run_trainer,
)

needs_server = needs_env_server()

CONFIG = merge(TINY, {"eval": {"limit": 4}})


@needs_server
def test_each_seed_is_a_whole_pipeline_of_its_own(tmp_path, write_config):
    run = tmp_path / "run"
    args = (
        "pipeline",
        "--config",
        str(write_config(CONFIG)),
        "--run-dir",
        str(run),
        "--seeds",
        "2",
        "--stages",
        "results",
        "--split",
        "dev",
    )
    r = run_trainer(*args)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    seeds = [TINY["seed"], TINY["seed"] + 1]
    kbs, configs = [], []
    for s in seeds:
        cfg = json.loads((run / "pipeline" / f"seed-{s}.run.json").read_text())
        assert cfg["seed"] == s
        configs.append({k: v for k, v in cfg.items() if k != "seed"})
        sub = run / f"seed-{s}"
        assert json.loads((sub / "results.json").read_text())["split"] == "dev"
        kbs.append((sub / "data" / "kb.json").read_text())
        events = read_events(sub)  # each seed's pipeline ran with its own server and events
        assert [e["status"] for e in events if e["type"] == "stage_finished"] == ["ok"]
        assert any("environment server at" in e.get("message", "") for e in events)
    assert configs[0] == configs[1]  # only the seed differs
    assert kbs[0] != kbs[1]  # another seed, another knowledge base: nothing shared but code
    doc = json.loads((run / "results.json").read_text())
    assert doc["seeds"] == seeds and doc["split"] == "dev" and len(doc["per_seed"]) == 2
    assert {r["setting"] for r in doc["rows"]} >= {"sft-rl", "sft-rl-otc"}  # rows of nulls: no model was trained
    assert all(r["em"] is None and r["seeds"] == 0 for r in doc["rows"])
    assert "(2 seeds)" in (run / "results.md").read_text()
    mine = read_events(run)
    assert [e["stage"] for e in mine if e["type"] == "run_started"] == ["seeds"]
    assert [e["step"] for e in mine if e["type"] == "progress"] == [1, 2]
    assert [e["status"] for e in mine if e["type"] == "stage_finished"] == ["ok"]

    r = run_trainer(*args, "--resume")  # both seeds have their results: skipped, the table written again
    assert r.returncode == 0
    skipped = [e["message"] for e in read_events(run) if "already has its results, skipped" in e.get("message", "")]
    assert len(skipped) == 2


@needs_server
def test_sigterm_stops_the_running_seed_which_checkpoints(tmp_path, write_config):
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
            "--seeds",
            "2",
            "--stages",
            "pretrain",
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if '"progress"' in line and '"pretrain"' in line:
                break
        proc.send_signal(signal.SIGTERM)
        proc.stdout.read()
        assert proc.wait(timeout=60) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
    first = run / f"seed-{TINY['seed']}"
    assert list((first / "stages" / "pretrain" / "checkpoints").glob("step-*.safetensors"))
    assert not (run / f"seed-{TINY['seed'] + 1}").exists()  # the second seed never started
    finished = [e["status"] for e in read_events(run) if e["type"] == "stage_finished"]
    assert finished == ["cancelled"]


def test_bad_seed_count_and_shared_server_are_config_errors(tmp_path, write_config):
    cfg = str(write_config(CONFIG))
    r = run_trainer("pipeline", "--config", cfg, "--run-dir", str(tmp_path / "a"), "--seeds", "0")
    assert r.returncode == 2
    (err,) = [e for e in read_events(tmp_path / "a") if e["type"] == "error"]
    assert err["code"] == "bad_config" and "--seeds 0" in err["message"]
    r = run_trainer(
        "pipeline",
        "--config",
        cfg,
        "--run-dir",
        str(tmp_path / "b"),
        "--seeds",
        "2",
        "--env-url",
        "http://127.0.0.1:9",
        env={"COA_ENV_TOKEN": "x"},
    )
    assert r.returncode == 2
    (err,) = [e for e in read_events(tmp_path / "b") if e["type"] == "error"]
    assert "own knowledge base and corpus" in err["message"]


def test_the_derived_run_configs_change_their_fields_where_they_stand(tmp_path):
    """A seed's config and RL-2 OTC's are the run config's JSON with their own fields changed in place: the same
    keys in the same order (a diff of two seeds' files shows the seed alone)."""
    from coa_trainer.base.config import config_dict, validate_config
    from coa_trainer.base.runlayout import final_dir
    from coa_trainer.pipeline.pipeline import otc_config
    from coa_trainer.pipeline.seeds import seed_config

    config = validate_config(merge(TINY, {"logging": {"wandb": {"name": "exp"}}, "stages": {"rl2": {"steps": 7}}}))
    run = tmp_path / "run"
    want = config_dict(config)
    want["seed"] = 11
    want["logging"]["wandb"].update(group="run", name="exp-seed-11")
    assert seed_config(config, 11, run).read_text() == json.dumps(want, indent=2) + "\n"

    rl1 = final_dir(run, "rl1")  # RL-2 OTC starts where RL-2 would: here RL-1's result
    rl1.mkdir(parents=True)
    (rl1 / "config.json").write_text("{}")
    want = config_dict(config)
    want["stages"]["rl2"]["reward"]["scheme"] = "otc-grpo"
    want["stages"]["rl2"]["init_from"] = str(rl1)
    assert otc_config(config, run).read_text() == json.dumps(want, indent=2) + "\n"
    assert config.stages.rl2.reward.scheme == "autocoa" and config.seed == TINY["seed"]  # the run's own unchanged
