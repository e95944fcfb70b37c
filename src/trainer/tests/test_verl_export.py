"""`coa export verl`: RL-2 of a run config (on AutoCoA's published HotpotQA parquets) as verl's launch, checked against
verl itself — its Hydra config at the pinned commit (test/fixtures/verl-config-b178a3cd, Apache-2.0) composed with
the exported overrides and resolved as verl's main_ppo does, the questions loaded by the loader verl's RLHFDataset
uses (`datasets`, parquet) and rendered by the model's chat template, the search tool's config resolved as verl's
tool registry does (its URL from COA_ENV_URL) — and launch.sh handing verl exactly those arguments through a shell."""

import json
import os
import shutil
import subprocess

import pytest

from conftest import REPO

VERL_CONFIG = REPO / "test" / "fixtures" / "verl-config-b178a3cd" / "config"
AUTOCOA = REPO / "examples" / "data" / "autocoa"
NODE = os.environ.get("COA_NODE") or shutil.which("node")
pytestmark = pytest.mark.skipif(
    NODE is None or not (REPO / "dist" / "cli.js").is_file() and not os.environ.get("CI"),
    reason="node and dist/cli.js (npm run build)",
)


def compose(overrides: list[str]):
    """verl's config as `python -m verl.trainer.main_ppo <overrides>` builds it (hydra.main with config_name
    ppo_trainer), resolved as its TaskRunner.run does (OmegaConf.resolve)."""
    from hydra import compose as hydra_compose, initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=str(VERL_CONFIG), version_base=None):
        cfg = hydra_compose(config_name="ppo_trainer", overrides=overrides)
    OmegaConf.resolve(cfg)
    return cfg


@pytest.fixture(scope="module")
def exported(tmp_path_factory, realistic_model_dir):
    out = tmp_path_factory.mktemp("export") / "verl out 'q'"  # a space and a quote: the launch must stay exact
    cfg = out.parent / "run.json"
    cfg.write_text(
        json.dumps(
            {
                "name": "hotpot-rl2",
                "dialect": "hermes",
                "model": {"path": str(realistic_model_dir)},
                "data": {
                    "questions": {
                        "train": str(AUTOCOA / "hotpotqa_train.parquet"),
                        "dev": str(AUTOCOA / "hotpotqa_dev.parquet"),
                    }
                },
                "stages": {
                    "rl2": {
                        "reward": {"scheme": "otc-grpo", "params": {"c": 4, "alpha": 1}},
                        "group_size": 5,
                        "prompts_per_step": 16,
                        "mini_batches": 2,
                        "top_k": 3,
                    }
                },
            }
        )
    )
    r = subprocess.run(
        [
            NODE,
            str(REPO / "dist" / "cli.js"),
            "export",
            "verl",
            str(cfg),
            "--out",
            str(out),
            "stages.rl2.lr=1e-7",
            "stages.rl2.max_turns=2",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    return out, json.loads((out / "verl-launch.json").read_text()), r


def test_verl_composes_the_exported_config(exported):
    out, launch, _ = exported
    assert launch["verl_commit"] == "b178a3cd56f58b2d502255daba591e92833930a7"
    cfg = compose(launch["overrides"])
    assert cfg.algorithm.adv_estimator == "grpo"
    assert cfg.actor_rollout_ref.actor.optim.lr == pytest.approx(1e-7)  # the override given to the export
    assert cfg.actor_rollout_ref.rollout.n == 5 and cfg.data.train_batch_size == 16
    assert cfg.actor_rollout_ref.actor.ppo_mini_batch_size == 8
    assert cfg.actor_rollout_ref.actor.kl_loss_type == "low_var_kl" and cfg.actor_rollout_ref.actor.use_kl_loss
    assert (
        cfg.actor_rollout_ref.rollout.multi_turn.enable and cfg.actor_rollout_ref.rollout.multi_turn.format == "hermes"
    )
    assert cfg.actor_rollout_ref.rollout.multi_turn.max_assistant_turns == 3
    assert cfg.actor_rollout_ref.rollout.multi_turn.tool_config_path == str(out / "search_tool.yaml")
    assert cfg.data.train_files == str(out / "train.parquet") and cfg.data.val_files == str(out / "val.parquet")
    assert cfg.reward_model.reward_manager == "batch" and cfg.reward_model.use_reward_loop is False
    reward = cfg.custom_reward_function
    assert reward.path == str(REPO / "src" / "trainer" / "coa_trainer" / "integrations" / "verl_reward.py")
    assert reward.name == "compute_score"
    assert dict(reward.reward_kwargs) == {"scheme": "otc-grpo", "params": {"c": 4, "alpha": 1}, "run": "hotpot-rl2"}
    assert list(cfg.trainer.logger) == ["console", "file"]
    assert cfg.trainer.rollout_data_dir == str(out / "rollouts") and cfg.trainer.total_training_steps == 24
    assert launch["env"] == {"VERL_FILE_LOGGER_PATH": str(out / "metrics.jsonl")}
    assert (
        cfg.actor_rollout_ref.model.path
        == launch["overrides"][
            [o.split("=")[0] for o in launch["overrides"]].index("actor_rollout_ref.model.path")
        ].split("=", 1)[1]
    )


def test_a_key_verl_does_not_have_fails_to_compose(exported):
    """The check can fail: a misspelt key is refused by verl's own config (Hydra's struct mode)."""
    from hydra.errors import ConfigCompositionException

    _, launch, _ = exported
    with pytest.raises(ConfigCompositionException, match="clip_ratioo"):
        compose([*launch["overrides"], "actor_rollout_ref.actor.clip_ratioo=0.2"])


def test_data_in_verls_layout_loads_and_joins_back(exported, realistic_model_dir):
    import datasets
    import pyarrow.parquet as pq
    from transformers import AutoTokenizer

    out, launch, _ = exported
    train = datasets.load_dataset("parquet", data_files=str(out / "train.parquet"))["train"]  # RLHFDataset's loader
    source = pq.read_table(AUTOCOA / "hotpotqa_train.parquet").to_pylist()
    assert len(train) == launch["questions"]["train"] == len(source)
    row = train[0]
    assert set(row) == {"data_source", "prompt", "ability", "reward_model", "extra_info", "agent_name"}
    assert row["agent_name"] == "tool_agent" and row["data_source"] == source[0]["data_source"]
    truth = source[0]["reward_model"]["ground_truth"]  # AutoCoA's: one answer as a string
    assert row["reward_model"]["ground_truth"]["target"] == ([truth] if isinstance(truth, str) else truth["target"])
    assert row["extra_info"]["id"] == source[0]["_id"] and row["extra_info"]["split"] == "train"
    assert row["extra_info"]["index"] == 0 and row["extra_info"]["question"] in row["prompt"][-1]["content"]
    assert [m["role"] for m in row["prompt"]] == ["system", "user"]  # the hermes dialect's prompts
    tok = AutoTokenizer.from_pretrained(realistic_model_dir)
    text = tok.apply_chat_template(row["prompt"], add_generation_prompt=True, tokenize=False)
    assert row["extra_info"]["question"] in text
    ids = {r["extra_info"]["id"] for r in train}
    assert ids == {r["_id"] for r in source}  # results join back to the user's rows on id
    assert len(datasets.load_dataset("parquet", data_files=str(out / "val.parquet"))["train"]) == 400


def test_search_tool_config_resolves_the_server_url_from_the_environment(exported, monkeypatch):
    from omegaconf import OmegaConf

    out, _, _ = exported
    tools = OmegaConf.load(out / "search_tool.yaml")  # as verl/tools/utils/tool_registry.py reads it
    (tool,) = tools.tools
    assert tool.class_name == "verl.tools.search_tool.SearchTool"
    monkeypatch.setenv("COA_ENV_URL", "http://127.0.0.1:4100/t/secret")
    config = OmegaConf.to_container(tool.config, resolve=True)
    assert config["retrieval_service_url"] == "http://127.0.0.1:4100/t/secret/verl-hotpot-rl2/retrieve"
    assert config["topk"] == 3 and config["type"] == "native"
    assert OmegaConf.to_container(tool.tool_schema, resolve=True)["function"]["parameters"]["required"] == [
        "query_list"
    ]
    assert "secret" not in (out / "launch.sh").read_text() + (out / "verl-launch.json").read_text()


def test_launch_script_hands_verl_exactly_the_overrides(exported, tmp_path):
    """launch.sh through a real shell: `python3` on PATH is a stand-in that records the arguments it got."""
    out, launch, r = exported
    assert r.stdout == (out / "launch.sh").read_text()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "argv"
    (bin_dir / "python3").write_text(
        f"#!/bin/sh\nprintf '%s\\0' \"$@\" > '{record}'\nprintf '%s' \"$VERL_FILE_LOGGER_PATH\" > '{record}.env'\n"
    )
    (bin_dir / "python3").chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "COA_ENV_URL": "http://127.0.0.1:1/t/x"}
    done = subprocess.run(
        ["sh", str(out / "launch.sh"), "trainer.n_gpus_per_node=8"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    argv = record.read_text().split("\0")[:-1]
    assert argv == ["-m", "verl.trainer.main_ppo", *launch["overrides"], "trainer.n_gpus_per_node=8"]
    assert (tmp_path / "argv.env").read_text() == str(out / "metrics.jsonl")
    refused = subprocess.run(
        ["sh", str(out / "launch.sh")], env={"PATH": env["PATH"]}, capture_output=True, text=True, timeout=60
    )
    assert refused.returncode != 0 and "COA_ENV_URL" in refused.stderr  # no server URL, no launch
    bare = subprocess.run(
        ["sh", str(out / "launch.sh")],
        env={**env, "COA_ENV_URL": "http://127.0.0.1:1"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bare.returncode == 2 and "token_url" in bare.stderr  # the search tool could not authenticate


def test_export_refuses_what_verl_cannot_train(tmp_path):
    cfg = tmp_path / "run.json"
    cfg.write_text(json.dumps({"data": {"questions": {"train": str(AUTOCOA / "hotpotqa_dev.parquet")}}}))
    r = subprocess.run(
        [NODE, str(REPO / "dist" / "cli.js"), "export", "verl", str(cfg), "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and "model.path" in r.stderr and "internal error" not in r.stderr
    r = subprocess.run(
        [
            NODE,
            str(REPO / "dist" / "cli.js"),
            "export",
            "verl",
            str(cfg),
            "--out",
            str(tmp_path / "o"),
            "model.path=Qwen/Qwen2.5-3B-Instruct",
            "stages.rl2.group_size=many",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and "stages.rl2.group_size: takes an integer" in r.stderr
