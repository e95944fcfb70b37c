"""One path rule for a run config: every path in it (model.path, stages.*.init_from, the data files, collect.teacher,
env.cli, logging dirs …; schemas/config-paths.json) is relative to the config file's directory — for the trainer as
for `coa data check` — whatever the working directory; and the CLI the trainer runs is env.cli, else COA_CLI, else the
checkout's build."""

import json
import os
import subprocess

import pytest

from conftest import REPO, needs_env_server
from coa_trainer.base.config import load_config
from coa_trainer.base.core_cli import find_core_cli
from coa_trainer.env.client import EnvClient, EnvError
from coa_trainer.stages.setup import resolve_init

CORPUS = REPO / "examples" / "data" / "search-r1" / "corpus_example.jsonl"


@pytest.fixture
def project(tmp_path, realistic_model_dir, monkeypatch):
    """proj/configs/run.json naming a model, a stage's starting point and other files by relative paths, and a
    working directory elsewhere."""
    proj = tmp_path / "proj"
    (proj / "configs").mkdir(parents=True)
    (proj / "models").mkdir()
    (proj / "models" / "qwen").symlink_to(realistic_model_dir, target_is_directory=True)
    config = {
        "model": {"path": "../models/qwen"},
        "stages": {"rl2": {"init_from": "../models/qwen"}},
        "collect": {"teacher": {"path": "../models/qwen"}},
        "benchmark": {"data_dir": "bench"},
        "env": {"cli": "../tools/cli.js", "node": "node", "corpus": "wiki.jsonl"},
        "logging": {"tensorboard": {"dir": "../tb"}},
    }
    (proj / "configs" / "run.json").write_text(json.dumps(config))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    return proj


def test_every_path_is_relative_to_the_config_file_not_the_working_directory(project):
    config = load_config("../proj/configs/run.json")
    here = project.resolve()
    assert config.model.path == str(here / "models" / "qwen")
    assert config.stages.rl2.init_from == str(here / "models" / "qwen")
    assert config.collect.teacher.path == str(here / "models" / "qwen")
    assert config.benchmark.data_dir == str(here / "configs" / "bench")
    assert config.env.cli == str(here / "tools" / "cli.js")
    assert config.env.corpus == str(here / "configs" / "wiki.jsonl")
    assert config.env.node == "node"  # a command name, looked up on PATH
    assert config.logging.tensorboard.dir == str(here / "tb")
    # where the trainer's stages start: found, from a working directory where "../models/qwen" does not exist
    assert not os.path.exists("../models/qwen")
    assert resolve_init(config, project / "runs" / "r", "rl2", None, True) == here / "models" / "qwen"
    assert resolve_init(config, project / "runs" / "r", "sft2", None, True) == here / "models" / "qwen"


def test_data_check_and_the_trainer_read_the_same_model_directory(project):
    """`coa data check` said "model directory ok" for a model the trainer then did not find (it resolved model.path
    against the working directory). Both now name the same directory."""
    out = subprocess.run(
        ["node", str(REPO / "bin" / "coa.js"), "data", "check", "../proj/configs/run.json"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    config = load_config("../proj/configs/run.json")
    found = dict(
        line.rsplit(": ", 1)[0].split(": ", 1)
        for line in out.stdout.splitlines()
        if line.endswith(": model directory ok")
    )
    assert os.path.realpath(found["model.path"]) == os.path.realpath(config.model.path)
    assert os.path.realpath(found["stages.rl2.init_from"]) == os.path.realpath(config.stages.rl2.init_from)


def test_a_bad_init_from_is_reported_by_data_check_with_its_place(project):
    cfg = project / "configs" / "run.json"
    raw = json.loads(cfg.read_text())
    raw["stages"]["rl2"]["init_from"] = "../models/missing"
    cfg.write_text(json.dumps(raw, indent=2))
    out = subprocess.run(
        ["node", str(REPO / "bin" / "coa.js"), "data", "check", str(cfg)], capture_output=True, text=True
    )
    assert out.returncode == 2
    assert f"{cfg}:" in out.stderr and "stages.rl2.init_from" in out.stderr and "models/missing" in out.stderr


def test_env_cli_old_default_means_not_given_and_coa_cli_is_honoured(tmp_path, monkeypatch):
    cfg = tmp_path / "run.json"
    cfg.write_text(json.dumps({"env": {"cli": "dist/cli.js"}}))  # what every copied config used to carry
    config = load_config(cfg)
    assert config.env.cli is None
    assert find_core_cli(config.env.cli)[0] == REPO / "dist" / "cli.js"
    monkeypatch.setenv("COA_CLI", str(tmp_path / "nowhere" / "cli.js"))
    with pytest.raises(EnvError, match=r"nowhere/cli\.js not found.*COA_CLI"):
        EnvClient.start(CORPUS, cli=config.env.cli)
    # the config's own env.cli comes first
    cfg.write_text(json.dumps({"env": {"cli": "tools/cli.js"}}))
    assert find_core_cli(load_config(cfg).env.cli)[0] == tmp_path / "tools" / "cli.js"


@needs_env_server()
def test_the_environment_server_starts_from_the_cli_coa_cli_names(tmp_path, monkeypatch):
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "cli.js").symlink_to(REPO / "dist" / "cli.js")
    monkeypatch.setenv("COA_CLI", str(tmp_path / "build" / "cli.js"))
    monkeypatch.chdir(tmp_path)
    env = EnvClient.start(
        CORPUS, cli=load_config(_write(tmp_path, {})).env.cli, extra_args=["--index", str(tmp_path / "idx")]
    )
    try:
        assert env.search(["Evan Morris"], 1).observations
    finally:
        env.stop()


def _write(d, config):
    path = d / "run.json"
    path.write_text(json.dumps(config))
    return path
