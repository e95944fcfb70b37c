"""The command line contract: help, and one clear error event + non-zero exit for unusable input."""

import json

from conftest import merge, read_events, run_trainer


def test_help():
    r = run_trainer("--help")
    assert r.returncode == 0 and "train" in r.stdout and "eval" in r.stdout
    r = run_trainer("train", "--help")
    assert r.returncode == 0 and "--resume" in r.stdout and "sft3" in r.stdout


def test_bad_config_gives_one_error_event(tmp_path, tiny_config, write_config):
    cfg = write_config(merge(tiny_config, {"stages": {"sft1": {"beta": -2}}}))
    r = run_trainer("train", "--stage", "pretrain", "--config", str(cfg), "--run-dir", str(tmp_path / "run"))
    assert r.returncode == 2
    events = read_events(tmp_path / "run")
    assert [e["type"] for e in events] == ["error"]
    assert events[0]["code"] == "bad_config" and "stages.sft1.beta" in events[0]["message"]
    assert json.loads(r.stdout.strip().splitlines()[-1]) == events[0]  # echoed on stdout


def test_unreadable_json_config(tmp_path):
    cfg = tmp_path / "run.json"
    cfg.write_text("{ nope")
    r = run_trainer("train", "--stage", "pretrain", "--config", str(cfg), "--run-dir", str(tmp_path / "run"))
    assert r.returncode == 2
    (ev,) = read_events(tmp_path / "run")
    assert ev["code"] == "bad_config" and f"{cfg}:1:3" in ev["message"]


def test_missing_model_dir(tmp_path, tiny_config, write_config):
    cfg = write_config(merge(tiny_config, {"model": {"path": str(tmp_path / "nowhere")}}))
    r = run_trainer("train", "--stage", "sft2", "--config", str(cfg), "--run-dir", str(tmp_path / "run"))
    assert r.returncode == 2
    errors = [e for e in read_events(tmp_path / "run") if e["type"] == "error"]
    assert len(errors) == 1 and errors[0]["code"] == "missing_model" and "nowhere" in errors[0]["message"]


def test_later_stage_without_earlier_stage(tmp_path, tiny_config, write_config):
    cfg = write_config(tiny_config)
    r = run_trainer("train", "--stage", "sft1", "--config", str(cfg), "--run-dir", str(tmp_path / "run"))
    assert r.returncode == 2
    (ev,) = [e for e in read_events(tmp_path / "run") if e["type"] == "error"]
    assert ev["code"] == "missing_model" and "run the earlier stages" in ev["message"]
