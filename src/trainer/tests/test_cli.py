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


def test_every_command_line_becomes_its_commands_typed_options(monkeypatch):
    """The command line is read once, at the top: every command's handler gets a typed options object (never
    argparse's namespace), with paths as paths, repeated options as tuples and the env server's token from
    COA_ENV_TOKEN beside --env-url."""
    from pathlib import Path

    from coa_trainer.base import options as o
    from coa_trainer.cli import COMMAND_HANDLERS, build_parser, parse_command

    monkeypatch.setenv("COA_ENV_TOKEN", "t0k")
    run = ["--config", "c.json", "--run-dir", "runs/a"]
    lines = {
        o.TrainOptions: [
            "train",
            "--stage",
            "rl2",
            *run,
            "--label",
            "rl2-b",
            "--env-url",
            "http://127.0.0.1:9",
            "seed=3",
        ],
        o.EvalOptions: ["eval", *run, "--split", "dev", "--split", "test", "--mode", "plain"],
        o.BoundaryOptions: ["boundary", *run, "--questions", "q.parquet", "--samples", "3"],
        o.ExportOnnxOptions: ["export-onnx", "--checkpoint", "m", "-o", "m.onnx"],
        o.PipelineOptions: ["pipeline", *run, "--seeds", "2", "--stages", "pretrain,sft1"],
        o.CollectOptions: ["collect", *run, "--teacher", "http://127.0.0.1:8/v1", "--limit", "4"],
        o.ConvertOptions: ["convert-checkpoint", "a.pt", "b"],
        o.DataOptions: ["data", "--out", "d", "--seed", "5"],
    }
    commands = build_parser()._subparsers._group_actions[0].choices  # every subcommand the parser knows
    assert len(lines) == len(commands) and set(COMMAND_HANDLERS) == set(lines)
    parsed = {kind: parse_command(argv) for kind, argv in lines.items()}
    for kind, opts in parsed.items():
        assert type(opts) is kind
    train = parsed[o.TrainOptions]
    assert (train.run_dir, train.name, train.overrides) == (Path("runs/a"), "rl2-b", ("seed=3",))
    assert train.env == o.EnvTarget("http://127.0.0.1:9", "t0k")
    assert parsed[o.EvalOptions].split == ("dev", "test") and parsed[o.EvalOptions].env == o.EnvTarget()
    assert parsed[o.BoundaryOptions].questions == Path("q.parquet") and parsed[o.BoundaryOptions].samples == 3
    assert parsed[o.PipelineOptions].seeds == 2 and parsed[o.CollectOptions].limit == 4
    assert parsed[o.ConvertOptions].paths == (Path("a.pt"), Path("b"))
