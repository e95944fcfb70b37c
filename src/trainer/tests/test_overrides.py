"""`key=value` overrides of a run config on the trainer's command line: the shared vectors (the core runs the same
file for `coa data check`), validation of the merged config by the schema with the override named, and the
command line taking them anywhere among its options."""

import json
import subprocess
import sys

import pytest

from coa_trainer.base.config import ConfigError, load_config
from coa_trainer.base.overrides import OverrideError, apply_overrides, parse_override
from coa_trainer.cli import build_parser, parse_command_line
from conftest import REPO

CASES = json.loads((REPO / "test" / "conformance" / "overrides.json").read_text(encoding="utf-8"))["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_override_vectors(case):
    def run():
        return apply_overrides(case["config"], [parse_override(a) for a in case["args"]])

    if "error" in case:
        with pytest.raises(OverrideError) as info:
            run()
        assert info.value.text == case["error"]["arg"]
        assert info.value.key == case["error"]["key"]
        assert case["error"]["contains"] in str(info.value)
    else:
        got = run()
        assert got == case["result"]
        # the same JSON types as the core's (an integer stays one, a fraction is a float)
        assert json.dumps(got, sort_keys=True) == json.dumps(case["result"], sort_keys=True)


def test_load_config_applies_and_validates_overrides(tmp_path):
    cfg = tmp_path / "run.json"
    cfg.write_text('{"seed": 1, "stages": {"rl2": {"lr": 0.5}}}')
    config = load_config(cfg, ["stages.rl2.lr=1e-5", "eval.splits=[dev,test]", "model.lora.r=4"])
    assert config.stages.rl2.lr == 1e-5 and config.seed == 1
    assert [s.value if hasattr(s, "value") else s for s in config.eval.splits] == ["dev", "test"]
    assert config.model.lora.r == 4 and config.model.lora.alpha == 16  # the rest of lora from the schema's defaults
    with pytest.raises(ConfigError, match=r"command line: override stages.rl2.lr=-1: stages.rl2.lr: -1 is less than"):
        load_config(cfg, ["stages.rl2.lr=-1"])
    with pytest.raises(ConfigError, match=r"command line: override stages.rl2.lrr=1: stages.rl2.lrr: unknown key"):
        load_config(cfg, ["stages.rl2.lrr=1"])
    with pytest.raises(ConfigError, match=str(cfg)):  # a problem in the file still names the file
        cfg.write_text('{"seed": -1.5}')
        load_config(cfg, ["stages.rl2.lr=1e-5"])


def test_command_line_takes_overrides_among_options():
    parser = build_parser()
    args = parse_command_line(
        parser,
        [
            "train",
            "stages.rl2.lr=1e-5",
            "--stage",
            "rl2",
            "--config",
            "c.json",
            "--run-dir",
            "r",
            "~stages.rl2.steps",
            "--resume",
            "seed=3",
        ],
    )
    assert args.overrides == ["stages.rl2.lr=1e-5", "~stages.rl2.steps", "seed=3"] and args.resume
    with pytest.raises(SystemExit):
        parse_command_line(parser, ["train", "--stage", "rl2", "--config", "c.json", "--run-dir", "r", "extra.json"])
    with pytest.raises(SystemExit):  # a command without a run config takes none
        parse_command_line(parser, ["export-onnx", "--checkpoint", "c", "-o", "m.onnx", "seed=1"])


def test_bad_override_is_one_clear_line(tmp_path):
    cfg = tmp_path / "run.json"
    cfg.write_text("{}")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "coa_trainer",
            "data",
            "--config",
            str(cfg),
            "--out",
            str(tmp_path / "d"),
            "benchmark.persons=many",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2
    assert "override benchmark.persons=many: benchmark.persons: takes an integer" in out.stdout
    assert "Traceback" not in out.stdout + out.stderr
