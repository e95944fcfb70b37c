"""W&B (offline) and TensorBoard from a real pipeline run: two short stages (pretraining, then RL-2 against the real
environment server), read back with each tool's own reader — TensorBoard's EventAccumulator, and W&B's offline run
file (its LevelDB-log framing, each record parsed with W&B's own protobuf `Record`) — must hold every series the live
panel charts from the events (each metrics event's values, each eval's as eval/<split>/<metric>) at the same steps.
The run's `key=value` overrides reach the stages the pipeline starts."""

import json
import struct
import subprocess
from pathlib import Path

import pytest

from conftest import TINY, merge, read_events, run_trainer, needs_env_server
from coa_trainer.contracts.events import LogEvent, MetricsEvent

needs_server = needs_env_server()

RL = {
    "steps": 5,
    "prompts_per_step": 2,
    "group_size": 2,
    "heldout_every": 0,
    "sample_every": 0,
    "max_new_tokens": 12,
    "max_turns": 2,
    "log_every": 1,
    "warmup_steps": 1,
}
CONFIG = merge(
    TINY,
    {
        "stages": {"rl2": RL},
        "eval": {"limit": 4, "max_new_tokens": 12},
        "logging": {"wandb": {"project": "coa-test", "mode": "offline", "tags": ["ci"]}, "tensorboard": {}},
    },
)


def panel_series(events: list[dict]) -> dict[tuple[str, str], dict[int, float]]:
    """(stage, name) → {step: value}: what the live panel charts (webview/live-panel/model.ts), plus its results rows."""
    out: dict[tuple[str, str], dict[int, float]] = {}
    for e in events:
        if e["type"] == "metrics":
            values = e["values"]
        elif e["type"] == "eval":
            values = {f"eval/{e['split']}/{k}": v for k, v in e["metrics"].items()}
        else:
            continue
        for name, v in values.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                out.setdefault((e["stage"], name), {})[e["step"]] = float(v)
    return out


def tensorboard_series(log_dir: Path) -> dict[tuple[str, str], dict[int, float]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out: dict[tuple[str, str], dict[int, float]] = {}
    for stage_dir in sorted(p for p in log_dir.iterdir() if p.is_dir()):
        acc = EventAccumulator(str(stage_dir), size_guidance={"tensors": 0, "scalars": 0})
        acc.Reload()
        for tag in acc.Tags()["tensors"]:  # TensorBoard's writer stores scalars as tensors of the scalars plugin
            for ev in acc.Tensors(tag):
                out.setdefault((stage_dir.name, tag), {})[ev.step] = float(ev.tensor_proto.float_val[0])
    return out


def wandb_records(path: Path):
    """The records of a W&B offline run file: W&B's LevelDB-log framing (a 7-byte ':W&B' header, 32 KiB blocks of
    chunks with a 7-byte header: crc32c, length, type full/first/middle/last), each record W&B's protobuf Record."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data[:4] == b":W&B", data[:7]
    pos, block, pending = 7, 32768, b""
    while pos + 7 <= len(data):
        left = block - pos % block
        if left < 7:  # a block's tail too short for a header is padding
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        chunk = data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind == 0 and length == 0:
            continue
        pending = chunk if kind in (1, 2) else pending + chunk
        if kind in (1, 4):
            rec = wandb_internal_pb2.Record()
            rec.ParseFromString(pending)
            yield rec
            pending = b""


def wandb_series(run_dir: Path) -> tuple[dict[tuple[str, str], dict[int, float]], dict[str, dict]]:
    out: dict[tuple[str, str], dict[int, float]] = {}
    runs: dict[str, dict] = {}
    for f in sorted((run_dir / "wandb").glob("offline-run-*/run-*.wandb")):
        stage = None
        for rec in wandb_records(f):
            kind = rec.WhichOneof("record_type")
            if kind == "run":
                stage = rec.run.job_type
                runs[stage] = {
                    "name": rec.run.display_name,
                    "group": rec.run.run_group,
                    "project": rec.run.project,
                    "tags": list(rec.run.tags),
                    "id": rec.run.run_id,
                }
            elif kind == "exit":
                runs[stage]["exit_code"] = rec.exit.exit_code
            elif kind == "history":
                items = {i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in rec.history.item}
                step = int(items.pop("step"))
                for name, v in items.items():
                    if not name.startswith("_"):
                        out.setdefault((stage, name), {})[step] = float(v)
    return out, runs


def assert_same(got: dict, want: dict, where: str) -> None:
    assert set(got) == set(want), (
        f"{where}: missing {sorted(set(want) - set(got))[:10]}, extra {sorted(set(got) - set(want))[:10]}"
    )
    for key, steps in want.items():
        assert set(got[key]) == set(steps), f"{where}: {key} steps {sorted(got[key])} != {sorted(steps)}"
        for step, v in steps.items():
            assert got[key][step] == pytest.approx(v, rel=1e-6, abs=1e-6), f"{where}: {key} at {step}"


@needs_server
def test_pipeline_logs_every_panel_metric_to_wandb_and_tensorboard(tmp_path, write_config):
    run = tmp_path / "run"
    r = run_trainer(
        "pipeline",
        "--config",
        str(write_config(CONFIG)),
        "--run-dir",
        str(run),
        "--stages",
        "pretrain,rl2",
        "stages.rl2.steps=3",
        "stages.pretrain.steps=4",
        timeout=400,
    )
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    events = read_events(run)
    started = {e["stage"]: e for e in events if e["type"] == "run_started"}
    assert started["rl2"]["config"]["stages"]["rl2"]["steps"] == 3  # the pipeline passed its overrides on
    assert started["pretrain"]["total_steps"] == 4
    for line in r.stdout.splitlines():  # W&B wrote nothing on stdout, where the events go
        json.loads(line)

    want = panel_series(events)
    names = {name for _, name in want}
    # what the live panel charts for these stages: loss/lr/throughput (pretraining), reward, EM/F1, TC/TP, format
    # errors (RL)
    for name in ("loss", "lr", "tokens_per_s", "reward_mean", "em", "f1", "tc", "format_error_rate", "eval/dev/em"):
        assert name in names, (name, sorted(names))
    assert {s for s, _ in want} == {"pretrain", "rl2"}

    assert_same(tensorboard_series(run / "tensorboard"), want, "tensorboard")
    got, runs = wandb_series(run)
    assert_same(got, want, "wandb")
    rl2_id = runs["rl2"].pop("id")
    assert rl2_id.startswith("run-rl2-"), rl2_id  # <run id>-<stage>-<hash of the run directory>
    assert runs["rl2"] == {
        "name": "run/rl2",
        "group": "run",
        "project": "coa-test",
        "tags": ["ci"],
        "exit_code": 0,
    }  # finished when the stage did
    assert runs["pretrain"]["exit_code"] == 0


def test_a_failing_sink_is_switched_off_with_one_warning(tmp_path):
    from coa_trainer.base.events import EventWriter
    from coa_trainer.base.metric_sinks import MetricSinks, TensorBoardSink

    blocker = tmp_path / "tb"
    blocker.write_text("a file where the log directory should be")
    with EventWriter(tmp_path / "r", echo=None) as w:
        w.sinks = MetricSinks([TensorBoardSink(blocker)], lambda m: w.emit(LogEvent(level="warning", message=m)))
        w.emit(MetricsEvent(stage="sft2", step=1, values={"loss": 1.0}))
        w.emit(MetricsEvent(stage="sft2", step=2, values={"loss": 0.5}))
    events = read_events(tmp_path / "r")
    warnings = [e["message"] for e in events if e["type"] == "log"]
    assert len(warnings) == 1 and "TensorBoardSink: switched off" in warnings[0]
    assert [e["step"] for e in events if e["type"] == "metrics"] == [1, 2]


def test_wandb_sync_takes_the_offline_run(tmp_path):
    """The offline run is one `wandb sync` can upload: its dry run lists it (no network needed to list)."""
    from coa_trainer.base.metric_sinks import WandbSink
    from coa_trainer.contracts.run_config import WandbLogging

    sink = WandbSink(
        WandbLogging(project="p", entity=None, name=None, group=None, mode="offline", dir=None, tags=[]),
        "r1",
        tmp_path,
        {"seed": 1},
    )
    sink.write("rl2", 1, {"reward_mean": 0.5}, 0.0)
    sink.finish(None, True)
    import sys

    (run_dir,) = (tmp_path / "wandb").glob("offline-run-*-r1-rl2-*")
    out = subprocess.run(
        [sys.executable, "-m", "wandb", "sync", "--dry-run", str(run_dir)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert "Would sync 1 run(s)" in out.stdout + out.stderr and "run-r1-rl2-" in out.stdout + out.stderr, (
        out.stdout + out.stderr
    )


def test_wandb_run_ids_continue_on_resume_and_never_across_run_directories(tmp_path):
    """A resumed stage continues its own W&B run; two runs of one name (every --seeds seed is seed-N) do not
    continue each other's."""
    from coa_trainer.base.metric_sinks import WandbSink
    from coa_trainer.contracts.run_config import WandbLogging

    cfg = WandbLogging(project="p", entity=None, name=None, group=None, mode="offline", dir=None, tags=[])
    a, b = tmp_path / "exp-a" / "seed-0", tmp_path / "exp-b" / "seed-0"
    for run_dir in (a, b, a):  # the second time in `a`: the stage resumed
        sink = WandbSink(cfg, "seed-0", run_dir, {})
        sink.write("rl2", 1, {"reward_mean": 0.5}, 0.0)
        sink.finish(None, True)

    def ids(run_dir: Path) -> set[str]:
        return {p.name[len("run-") : -len(".wandb")] for p in (run_dir / "wandb").glob("offline-run-*/run-*.wandb")}

    assert len(ids(a)) == 1, f"the resume continues its run: {ids(a)}"
    assert ids(a).isdisjoint(ids(b)), (ids(a), ids(b))


def test_each_seed_of_a_seeds_run_logs_under_the_run_s_group_with_its_own_name(tmp_path):
    from coa_trainer.base.config import validate_config
    from coa_trainer.pipeline.seeds import seed_config

    run_dir = tmp_path / "otc-sweep"
    derived = [
        json.loads(seed_config(validate_config(CONFIG), seed, run_dir).read_text())["logging"]["wandb"]
        for seed in (0, 1)
    ]
    assert [(w["group"], w["name"]) for w in derived] == [
        ("otc-sweep", "otc-sweep-seed-0"),
        ("otc-sweep", "otc-sweep-seed-1"),
    ]
    named = merge(CONFIG, {"logging": {"wandb": {"name": "otc", "group": "sweeps"}}})
    w = json.loads(seed_config(validate_config(named), 3, run_dir).read_text())["logging"]["wandb"]
    assert (w["group"], w["name"]) == ("sweeps", "otc-seed-3")


def test_tensorboard_charts_the_finite_values_of_metrics_and_eval_events_at_their_steps(tmp_path):
    """A NaN or infinity (null in the events file) is a gap in the chart, not a point; eval metrics are charted as
    eval/<split>/<metric>; a stage's writer is closed when it finishes."""
    from coa_trainer.base.events import EventWriter
    from coa_trainer.base.metric_sinks import MetricSinks, TensorBoardSink
    from coa_trainer.contracts.events import EvalEvent, StageFinishedEvent

    sink = TensorBoardSink(tmp_path / "tb")
    with EventWriter(tmp_path / "r", echo=None) as w:
        w.sinks = MetricSinks([sink], lambda m: w.emit(LogEvent(level="warning", message=m)))
        w.emit(MetricsEvent(stage="sft2", step=1, values={"loss": 1.5, "lr": float("nan"), "grad": None}))
        w.emit(MetricsEvent(stage="sft2", step=2, values={"loss": 0.5, "lr": 1e-4, "grad": float("inf")}))
        w.emit(EvalEvent(stage="sft2", step=2, split="dev", metrics={"em": 0.25, "f1": float("-inf")}))
        w.emit(StageFinishedEvent(stage="sft2", step=2, status="ok", checkpoint=None))
        assert sink.writers == {}, "the stage's writer closed when it finished"
    assert tensorboard_series(tmp_path / "tb") == {
        ("sft2", "loss"): {1: 1.5, 2: 0.5},
        ("sft2", "lr"): {2: pytest.approx(1e-4)},
        ("sft2", "eval/dev/em"): {2: 0.25},
    }
    assert not [e for e in read_events(tmp_path / "r") if e["type"] == "log"], "no sink was switched off"
