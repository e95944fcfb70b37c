"""What must not turn a stage's outcome into a lie: a stdout or stderr that cannot be written (a full disk) does not
lose the stage — events.jsonl is the record — and a training run that goes non-finite fails at the step where it
did, instead of training an all-NaN model to `ok` or ending in an overflow traceback."""

import os
import signal
import subprocess

import pytest
from safetensors.torch import load_file, save_file

from conftest import PY, REPO, merge, read_events, run_trainer


def test_a_full_disk_on_stdout_and_stderr_does_not_lose_the_stage(tmp_path, tiny_config, write_config):
    """`train … > /dev/full 2>&1`: every write to stdout and stderr fails with ENOSPC (it was an internal error and
    exit 1 within 0.1 s). The stage trains, saves and finishes `ok`, and its events are all in the run directory."""
    cfg = write_config(merge(tiny_config, {"stages": {"pretrain": {"steps": 2}}}))
    run = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src" / "trainer"), "OMP_NUM_THREADS": "1"}
    with open("/dev/full", "w") as full:
        code = subprocess.run(
            [PY, "-m", "coa_trainer", "train", "--stage", "pretrain", "--config", str(cfg), "--run-dir", str(run)],
            cwd=REPO,
            env=env,
            stdout=full,
            stderr=full,
            timeout=240,
        ).returncode
    events = read_events(run)
    assert code == 0, [e for e in events if e["type"] == "error"]
    assert [e["type"] for e in events if e["type"] in ("error", "stage_finished")] == ["stage_finished"]
    assert events[-1]["status"] == "ok" and [e["step"] for e in events if e["type"] == "metrics"] == [1, 2]
    assert (run / "stages" / "pretrain" / "final" / "config.json").is_file()


def test_a_stage_that_goes_non_finite_fails_at_that_step_and_saves_nothing_of_it(tmp_path, tiny_config, write_config):
    """A starting model with one infinite weight (an fp16 export that overflowed): the first step's loss and
    gradient are NaN. The stage used to train on — NaN weights, `nan_loss` alerts, status `ok`, exit 0 — and leave an
    all-NaN final/. Now: `diverged` at step 1, exit 1, no checkpoint of it, no final/."""
    from coa_trainer.base.config import validate_config
    from coa_trainer.data.benchmark import ensure_benchmark_files, vocabulary_texts
    from coa_trainer.model.load import write_embedded_model

    config = validate_config(tiny_config)
    bench = ensure_benchmark_files(config, tmp_path / "data")
    model = tmp_path / "model"
    write_embedded_model(config, vocabulary_texts(bench, config), model, 0)
    weights = load_file(model / "model.safetensors")
    name = next(n for n in weights if n.endswith("mlp.down_proj.weight"))
    weights[name][0, 0] = float("inf")
    save_file(weights, model / "model.safetensors", metadata={"format": "pt"})
    cfg = write_config(
        merge(
            tiny_config,
            {
                "benchmark": {"data_dir": str(tmp_path / "data")},
                "stages": {
                    "pretrain": {"steps": 3, "init_from": str(model), "checkpoint_every": 1, "checkpoint_minutes": 0}
                },
            },
        )
    )
    run = tmp_path / "run"
    r = run_trainer("train", "--stage", "pretrain", "--config", str(cfg), "--run-dir", str(run))
    events = read_events(run)
    (err,) = [e for e in events if e["type"] == "error"]
    assert r.returncode == 1 and err["code"] == "diverged" and "detail" not in err, err
    assert err["message"].startswith("pretrain: training diverged at step 1: loss is NaN"), err["message"]
    assert "stages.pretrain.lr" in err["message"] and str(model) in err["message"]
    assert not [e for e in events if e["type"] in ("stage_finished", "checkpoint")], "nothing NaN is saved"
    assert not (run / "stages" / "pretrain" / "final").exists()


@pytest.fixture
def stage_in_process():
    """A real stage set up in this process; the stop-signal handlers it installs are put back afterwards."""
    from coa_trainer.base.lifecycle import STOP_SIGNALS

    handlers = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    yield
    for s, h in handlers.items():
        signal.signal(s, h)


def test_an_update_that_overflows_is_the_same_clear_error(tmp_path, tiny_config, stage_in_process):
    """A learning rate float32 cannot hold (1e300: the run config now refuses it, so it is set on the optimiser here)
    made AdamW raise "value cannot be converted to type float without overflow", reported as an internal error with
    a traceback; it is the stage's divergence at that step."""
    from coa_trainer.base.config import validate_config
    from coa_trainer.base.distributed import DistInfo
    from coa_trainer.base.events import EventWriter
    from coa_trainer.base.options import TrainOptions
    from coa_trainer.stages.loop import DivergedError, run_loop
    from coa_trainer.stages.setup import setup_stage
    from coa_trainer.stages.sft import SupervisedSteps

    config = validate_config(merge(tiny_config, {"stages": {"pretrain": {"steps": 2}}}))
    with EventWriter(tmp_path / "run", echo=None) as writer:
        run = setup_stage(
            config,
            TrainOptions("pretrain", tmp_path / "run.json", tmp_path / "run"),
            tmp_path / "run",
            writer,
            DistInfo(),
        )
        for group in run.schedule.opt.param_groups:
            group["lr"] = 1e300
        with pytest.raises(
            DivergedError,
            match=r"^pretrain: training diverged at step 1: the optimiser update "
            r"overflowed .*\(learning rate 1e\+300\)",
        ):
            run_loop(run, SupervisedSteps(run))
