"""Checkpoints carry no code and a resume survives bad ones: a pickle planted as the newest checkpoint is refused
without being read (and `convert-checkpoint` refuses it as data); damaged or tampered checkpoints in the current
format are skipped, each with a warning, for the newest good one, and a resume one checkpoint earlier ends in exactly
the same model; an older checkpoint is converted once, on request; a finished stage resumed (alone or by the
pipeline) changes nothing."""

from __future__ import annotations

import json
import os
import pickle
import random
import shutil
import signal
import subprocess

import numpy as np
import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save_file

from coa_trainer.model.checkpoint import (
    CheckpointError,
    Unusable,
    load_checkpoint,
    read_checkpoint,
    resume,
    save_checkpoint,
)
from coa_trainer.model.legacy import convert
from coa_trainer.model.statefile import META_KEY, StateFileError, read_state_file, write_state_file
from conftest import PY, REPO, TINY, merge, read_events, run_trainer

ENV = {**os.environ, "PYTHONPATH": str(REPO / "src" / "trainer"), "OMP_NUM_THREADS": "1"}
STEPS = 8


class RunsACommand:
    """What an attacker plants: unpickling it runs `touch <marker>`."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def ckpt_dir(run):
    return run / "stages" / "pretrain" / "checkpoints"


def ckpt(run, step):
    return ckpt_dir(run) / f"step-{step:06d}.safetensors"


@pytest.fixture(scope="module")
def stopped(tmp_path_factory):
    """A pretrain stage stopped by SIGTERM after a few steps, a checkpoint after every step (the newest two kept)."""
    d = tmp_path_factory.mktemp("stopped")
    cfg = d / "run.json"
    cfg.write_text(
        json.dumps(
            merge(TINY, {"stages": {"pretrain": {"steps": STEPS, "checkpoint_every": 1, "checkpoint_minutes": 0}}})
        )
    )
    run = d / "run"
    proc = subprocess.Popen(
        [PY, "-m", "coa_trainer", "train", "--stage", "pretrain", "--config", str(cfg), "--run-dir", str(run)],
        cwd=REPO,
        env=ENV,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        seen = 0
        for line in proc.stdout:
            seen += '"progress"' in line
            if seen == 3:
                proc.send_signal(signal.SIGTERM)
                break
        proc.stdout.read()
        assert proc.wait(timeout=120) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
    k = [e for e in read_events(run) if e["type"] == "stage_finished"][-1]["step"]
    assert 2 <= k < STEPS and sorted(p.name for p in ckpt_dir(run).iterdir()) == [
        ckpt(run, k - 1).name,
        ckpt(run, k).name,
    ]
    return cfg, run, k


def resume_copy(stopped, tmp_path, name):
    cfg, run, k = stopped
    copy = tmp_path / name
    shutil.copytree(run, copy)
    return cfg, copy, k


def train_resume(cfg, run):
    return run_trainer("train", "--stage", "pretrain", "--config", str(cfg), "--run-dir", str(run), "--resume")


def final_weights(run) -> bytes:
    return (run / "stages" / "pretrain" / "final" / "model.safetensors").read_bytes()


def test_a_pickle_planted_as_the_newest_checkpoint_is_refused_unread(stopped, tmp_path):
    cfg, run, k = resume_copy(stopped, tmp_path, "run")
    marker = tmp_path / "code-ran"
    planted = ckpt_dir(run) / f"step-{k + 1:06d}.pt"  # the older format's name, one step above the newest
    planted.write_bytes(pickle.dumps(RunsACommand(marker)))
    zipped = tmp_path / f"step-{k + 2:06d}.pt"  # the same payload in torch.save's own container
    torch.save({"step": k + 2, "model": RunsACommand(marker)}, zipped)

    r = train_resume(cfg, run)
    assert r.returncode == 2, r.stdout[-2000:]
    assert not marker.exists(), "unpickling the planted checkpoint ran its command"
    (err,) = [e for e in read_events(run) if e["type"] == "error"]
    assert err["code"] == "bad_checkpoint" and str(planted) in err["message"]
    assert "convert-checkpoint" in err["message"] and "Traceback" not in r.stderr
    assert [e["resumed_from"] for e in read_events(run) if e["type"] == "run_started"] == [None], "nothing trained"

    for payload in (planted, zipped):  # conversion reads data only: the payload is refused, never called
        r = run_trainer("convert-checkpoint", str(payload))
        assert r.returncode == 2 and not marker.exists()
        assert "not a checkpoint this trainer wrote" in r.stderr and str(payload) in r.stderr, r.stderr
        assert payload.is_file()


def _tamper_header(src, dst, edit):
    """A well-formed safetensors file whose checkpoint header says what `edit` makes it say."""
    with safe_open(str(src), framework="pt") as f:
        header = json.loads(f.metadata()[META_KEY])
        tensors = {n: f.get_tensor(n) for n in f.keys()}
    save_file(tensors, str(dst), metadata={META_KEY: json.dumps(edit(header))})


@pytest.fixture(scope="module")
def fell_back(stopped, tmp_path_factory):
    """The stopped stage with three files newer than its newest checkpoint k — a pickle named like a checkpoint, a
    header that asks for something other than data, a truncated copy — resumed (to the end: a finished stage)."""
    d = tmp_path_factory.mktemp("fell-back")
    cfg, run, k = resume_copy(stopped, d, "run")
    marker = d / "code-ran"
    ckpt(run, k + 1).write_bytes(pickle.dumps(RunsACommand(marker)))
    _tamper_header(
        ckpt(run, k),
        ckpt(run, k + 2),
        lambda h: {**h, "step": k + 2, "tree": {**h["tree"], "extra": {"$call": ["os.system", "touch x"]}}},
    )
    ckpt(run, k + 3).write_bytes(ckpt(run, k).read_bytes()[:-1000])
    return run, k, marker, train_resume(cfg, run)


def test_damaged_or_tampered_newest_checkpoints_are_skipped_with_a_warning_each(fell_back):
    run, k, marker, r = fell_back
    assert r.returncode == 0, r.stdout[-2000:]
    assert not marker.exists()
    warnings = [e["message"] for e in read_events(run) if e["type"] == "log" and e["level"] == "warning"]
    for step, why in ((k + 3, ""), (k + 2, "unknown entry $call"), (k + 1, "")):
        assert any(str(ckpt(run, step)) in w and "cannot be used" in w and why in w for w in warnings), (step, warnings)
        assert ckpt(run, step).with_name(ckpt(run, step).name + ".corrupt").is_file(), "moved aside (then saved anew)"
    assert [e["resumed_from"] for e in read_events(run) if e["type"] == "run_started"] == [None, k]


def test_a_flipped_bit_in_the_newest_checkpoint_resumes_exactly_from_the_one_before(stopped, fell_back, tmp_path):
    """Only the tensor checksums can tell; the resume from k-1 ends in exactly the weights of the resume from k."""
    cfg, run, k = resume_copy(stopped, tmp_path, "run")
    data = bytearray(ckpt(run, k).read_bytes())
    data[-5] ^= 0x01  # one bit of the last tensor's data
    ckpt(run, k).write_bytes(bytes(data))
    r = train_resume(cfg, run)
    assert r.returncode == 0, r.stdout[-2000:]
    warnings = [e["message"] for e in read_events(run) if e["type"] == "log" and e["level"] == "warning"]
    assert any(str(ckpt(run, k)) in w and "checksum" in w for w in warnings), warnings
    assert [e["resumed_from"] for e in read_events(run) if e["type"] == "run_started"] == [None, k - 1]
    assert fell_back[3].returncode == 0 and final_weights(run) == final_weights(fell_back[0])
    steps = [e["step"] for e in read_events(run) if e["type"] == "metrics"]
    assert steps == list(range(1, STEPS + 1)), "each step's events once across the fallback"


def test_when_no_checkpoint_is_usable_the_resume_says_so(stopped, tmp_path):
    cfg, run, k = resume_copy(stopped, tmp_path, "run")
    for step in (k - 1, k):
        ckpt(run, step).write_bytes(b"\0" * 64)
    r = train_resume(cfg, run)
    assert r.returncode == 2
    (err,) = [e for e in read_events(run) if e["type"] == "error"]
    assert err["code"] == "bad_checkpoint" and "no checkpoint in" in err["message"]
    assert ckpt(run, k).name in err["message"] and ckpt(run, k - 1).name in err["message"]
    assert "without --resume" in err["message"]


def test_resume_of_a_finished_stage_changes_nothing(fell_back, tmp_path, write_config):
    """`train --resume` and `pipeline --resume` on a finished stage: exit 0, "already finished", final/ byte for byte
    as it was, no step redone, no second stage_finished."""
    run = tmp_path / "run"
    assert fell_back[3].returncode == 0
    shutil.copytree(fell_back[0], run)
    final = run / "stages" / "pretrain" / "final"
    before = {p.name: p.read_bytes() for p in final.iterdir()}
    checkpoints = sorted(p.name for p in ckpt_dir(run).iterdir())
    events_before = read_events(run)
    cfg = write_config(merge(TINY, {"stages": {"pretrain": {"steps": STEPS, "checkpoint_every": 1}}}))

    r = train_resume(cfg, run)
    assert r.returncode == 0, r.stdout[-2000:]
    assert "already finished at step 8" in r.stdout
    r = run_trainer("pipeline", "--stages", "pretrain", "--config", str(cfg), "--run-dir", str(run), "--resume")
    assert r.returncode == 0, r.stdout[-2000:]
    assert "pipeline: pretrain already finished, skipped" in r.stdout

    assert {p.name: p.read_bytes() for p in final.iterdir()} == before
    assert sorted(p.name for p in ckpt_dir(run).iterdir()) == checkpoints
    new = read_events(run)[len(events_before) :]
    assert [e for e in new if e.get("stage") == "pretrain" and e["type"] != "log"] == []
    assert read_events(run)[: len(events_before)] == events_before


# ---------------------------------------------------------------------------------------------- in process


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from coa_trainer.base.config import validate_config
    from coa_trainer.data.benchmark import ensure_benchmark_files, vocabulary_texts
    from coa_trainer.model.load import Runtime, load_for_config, write_embedded_model
    from coa_trainer.model.optim import lr_lambda, make_optimizer

    d = tmp_path_factory.mktemp("model")
    config = validate_config(TINY)
    write_embedded_model(config, vocabulary_texts(ensure_benchmark_files(config, d / "data"), config), d / "m", 0)

    def make():
        model, _ = load_for_config(d / "m", Runtime(torch.device("cpu"), None), config)
        opt = make_optimizer([p for p in model.parameters() if p.requires_grad], 1e-3, 0.01)
        return model, opt, torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda(2, 10))

    return make


def _train(model, opt, sched, steps=2):
    x = torch.arange(24).reshape(2, 12) % 40
    for _ in range(steps):
        model(input_ids=x, labels=x).loss.backward()
        opt.step()
        sched.step()
        opt.zero_grad()


def test_an_older_checkpoint_is_converted_once_on_request(tiny_model, tmp_path):
    """A checkpoint as the trainer used to write it (torch.save of weights, AdamW state, schedule and the numpy RNG's
    array) is refused by the resume, converted by `convert-checkpoint`, and then resumes to the same state."""
    model, opt, sched = tiny_model()
    _train(model, opt, sched)
    from coa_trainer.model.load import trainable_state

    old = tmp_path / "step-000002.pt"
    torch.save(
        {
            "version": 1,
            "stage": "pretrain",
            "step": 2,
            "cursor": 8,
            "model": trainable_state(model),
            "optimizer": opt.state_dict(),
            "scheduler": sched.state_dict(),
            "rng": {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()},
            "extra": {"events_offset": 10},
            "master": None,
        },
        old,
    )
    draws = (random.random(), float(np.random.rand()), float(torch.rand(1)))

    with pytest.raises(CheckpointError, match="convert-checkpoint"):
        resume(tmp_path, lambda p: pytest.fail(f"read {p}"), lambda ok: ok, lambda m: None)
    new = convert(old)
    assert new.name == "step-000002.safetensors" and not old.exists()

    fresh, fopt, fsched = tiny_model()
    state, skipped = resume(tmp_path, lambda p: load_checkpoint(p, fresh, fopt, fsched), lambda ok: ok, print)
    assert state is not None and not skipped
    assert (state.step, state.cursor, state.extra) == (2, 8, {"events_offset": 10})
    assert (random.random(), float(np.random.rand()), float(torch.rand(1))) == draws
    for (n, a), b in zip(model.state_dict().items(), fresh.state_dict().values()):
        assert torch.equal(a, b), n
    assert fsched.state_dict() == sched.state_dict()
    _train(model, opt, sched)
    _train(fresh, fopt, fsched)
    for (n, a), b in zip(model.state_dict().items(), fresh.state_dict().values()):
        assert torch.equal(a, b), n


def test_a_checkpoint_that_does_not_fit_the_model_is_unusable_before_anything_loads(tiny_model, tmp_path):
    model, opt, sched = tiny_model()
    _train(model, opt, sched)
    path = save_checkpoint(tmp_path, 2, 8, model, opt, sched, "pretrain")
    info, tree = read_state_file(path)
    name = next(iter(tree["model"]))
    tree["model"][name] = tree["model"][name][:1]
    write_state_file(path, tree, info)
    fresh, fopt, fsched = tiny_model()
    weights = {n: p.clone() for n, p in fresh.state_dict().items()}
    with pytest.raises(Unusable, match=f"weight {name}"):
        load_checkpoint(path, fresh, fopt, fsched)
    assert all(torch.equal(weights[n], p) for n, p in fresh.state_dict().items())
    assert not fopt.state


@pytest.mark.parametrize(
    "bad",
    [
        ("not safetensors", lambda p: p.write_bytes(b"\x80\x04K\x01.")),
        ("empty", lambda p: p.write_bytes(b"")),
        ("no checkpoint header", lambda p: save_file({"x": torch.zeros(2)}, str(p))),
        (
            "a tensor the header does not list",
            lambda p: save_file(
                {"x": torch.zeros(2)}, str(p), metadata={META_KEY: json.dumps({"crc32": {}, "tree": {}})}
            ),
        ),
        (
            "a reference to no tensor",
            lambda p: save_file(
                {}, str(p), metadata={META_KEY: json.dumps({"crc32": {}, "tree": {"model": {"$tensor": "gone"}}})}
            ),
        ),
        (
            "nesting 100,000 deep",
            lambda p: save_file(
                {}, str(p), metadata={META_KEY: '{"crc32": {}, "tree": ' + "[" * 100_000 + "]" * 100_000 + "}"}
            ),
        ),
    ],
)
def test_a_state_file_yields_data_or_a_clear_error(tmp_path, bad):
    _, write = bad
    path = tmp_path / "step-000001.safetensors"
    write(path)
    with pytest.raises(StateFileError):
        read_state_file(path)
    with pytest.raises(Unusable):
        read_checkpoint(path)
