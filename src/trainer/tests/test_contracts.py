"""The contracts src/core owns, as the trainer reads them: the typed run config generated from the core's schema
(contracts/run_config.py, by scripts/gen-python-contracts.mjs) is current, and a config read through it keeps every
value it was given or defaulted."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from coa_trainer.base.config import ConfigError, config_dict, default_config, stage_config, validate_config
from coa_trainer.contracts.run_config import RlStage, RunConfig, SftMixStage
from coa_trainer.contracts.schemas import schemas_dir
from conftest import REPO

PACKAGE = REPO / "src" / "trainer" / "coa_trainer"


def test_generated_contracts_are_current():
    """Regenerates the classes from the schemas of this checkout and compares: an edit of src/core/config.ts without
    `npm run build`, or a hand edit of the generated file, fails here with the command that fixes it."""
    node = os.environ.get("COA_NODE") or shutil.which("node")
    assert node, "node is needed to run scripts/gen-python-contracts.mjs"
    if not (REPO / ".venv" / "bin" / "datamodel-codegen").exists():
        pytest.fail("datamodel-codegen is missing from .venv: run npm run setup:python (src/trainer/requirements.txt)")
    r = subprocess.run([node, "scripts/gen-python-contracts.mjs", str(schemas_dir()), str(PACKAGE / "contracts"),
                        "--check"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_config_is_typed_and_round_trips():
    c = validate_config({"seed": 7, "stages": {"rl2": {"reward": {"scheme": "otc-grpo", "params": {"c": 2}}}},
                         "data": {"questions": {"train": "/q.parquet"}}})
    assert isinstance(c, RunConfig) and isinstance(c.stages.rl2, RlStage) and isinstance(c.stages.sft3, SftMixStage)
    assert stage_config(c, "rl2") is c.stages.rl2 and c.stages.rl2.reward.params == {"c": 2}
    assert c.data.questions.train == "/q.parquet" and c.data.sft == [] and c.stages.sft2.max_len is None
    # what a child process or an event gets back reads to the same config
    again = validate_config(config_dict(c))
    assert again == c
    assert config_dict(default_config()) == config_dict(validate_config({}))
    assert "name" not in config_dict(c)  # a key never given stays out (the editor's schema would not expect it)


def test_the_schema_still_guards_the_values():
    with pytest.raises(ConfigError, match=r"stages\.rl2\.group_size"):
        validate_config({"stages": {"rl2": {"group_size": 0}}})
    with pytest.raises(ConfigError, match="unknown_key|Additional properties"):
        validate_config({"unknown_key": 1})
