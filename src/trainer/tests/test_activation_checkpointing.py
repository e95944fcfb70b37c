"""Activation checkpointing decided by the measured peak of the stage's first update (model/activations.py): the
probe is the stage's own forward/backward, measured by the process's real peak, leaves the model, the optimiser and
the random state as they were, and the decision with its figure is the stage's first event's."""

from __future__ import annotations

import signal

import pytest
import torch

from conftest import merge, read_events


@pytest.fixture
def pretrain(tmp_path, tiny_config):
    """A tiny pretrain stage set up in this process (its stop-signal handlers put back after)."""
    from coa_trainer.base.config import validate_config
    from coa_trainer.base.distributed import DistInfo
    from coa_trainer.base.events import EventWriter
    from coa_trainer.base.lifecycle import STOP_SIGNALS
    from coa_trainer.base.options import TrainOptions
    from coa_trainer.stages.setup import setup_stage
    from coa_trainer.stages.sft import SupervisedSteps

    handlers = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    config = validate_config(merge(tiny_config, {"stages": {"pretrain": {"steps": 2}}}))
    run_dir = tmp_path / "run"
    try:
        with EventWriter(run_dir, echo=None) as writer:
            run = setup_stage(
                config, TrainOptions("pretrain", tmp_path / "run.json", run_dir), run_dir, writer, DistInfo()
            )
            yield run, SupervisedSteps(run)
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)


def test_the_probe_measures_the_first_update_and_leaves_everything_as_it_was(pretrain):
    from coa_trainer.model import activations

    run, impl = pretrain
    before = [p.detach().clone() for p in run.model.trained.parameters()]
    rng = torch.get_rng_state()
    peak = activations.measure(run.rt.device, impl.probe_update, run.schedule.opt)
    assert peak is not None and peak.oom is None
    params = [p for g in run.schedule.opt.param_groups for p in g["params"]]
    assert peak.state == sum(2 * p.numel() * p.element_size() for p in params)  # AdamW's two moments, still to come
    assert 0 < peak.used < peak.capacity and peak.capacity == activations.capacity(run.rt.device)
    assert torch.equal(torch.get_rng_state(), rng)
    assert all(torch.equal(a, b.detach()) for a, b in zip(before, run.model.trained.parameters()))
    assert all(p.grad is None for p in run.model.trained.parameters()) and not run.schedule.opt.state
    assert not activations.is_enabled(run.model.policy)


def test_the_decision_on_a_real_measurement(pretrain):
    """The rules on the probe's own figures: forced on; on a CPU off with the figure; on CUDA on past the headroom of
    the device's memory or when the probe ran out of memory, off below it."""
    from coa_trainer.model.activations import HEADROOM, Peak, decide, measure

    run, impl = pretrain
    peak = measure(run.rt.device, impl.probe_update, run.schedule.opt)
    assert peak is not None
    on, text = decide("cpu", False, peak)
    gib = f"{peak.need / 2**30:.2f} GiB of {peak.capacity / 2**30:.2f} GiB"
    assert not on and text.startswith(f"off (CPU: peak resident memory {gib} without it (the first update's")
    assert decide("cpu", True, peak) == (True, "on (model.gradient_checkpointing)")
    roomy = Peak(peak.used, peak.state, int(peak.need / HEADROOM) + 1)
    tight = Peak(peak.used, peak.state, int(peak.need / HEADROOM) - 1)
    assert decide("cuda", False, roomy)[0] is False and decide("cuda", False, roomy)[1].startswith("off (peak memory")
    on, text = decide("cuda", False, tight)
    assert on and text.endswith(f": above {HEADROOM:.0%})")
    assert decide("cuda", False, Peak(None, peak.state, peak.capacity, "CUDA out of memory. Tried to allocate")) == (
        True,
        f"on (out of memory without it: CUDA out of memory. Tried to allocate; {peak.capacity / 2**30:.2f} GiB)",
    )


def test_switched_on_the_checkpointed_update_has_the_same_gradients(pretrain):
    from coa_trainer.algos.microbatch import accumulate
    from coa_trainer.model import activations

    run, impl = pretrain
    grads = []
    for on in (False, True):
        if on:
            activations.enable(run.model.policy)
        assert activations.is_enabled(run.model.policy) == on
        run.model.trained.train()
        batch = impl.impl.stream.take(0, impl.local)
        accumulate(
            run.model.trained,
            batch,
            impl.impl.lengths(batch),
            impl.impl.count(batch),
            impl.impl.loss_parts,
            None,
            True,
            run.di,
        )
        grads.append([p.grad.clone() for p in run.model.trained.parameters() if p.grad is not None])
        activations.drop_gradients(run.model.trained, run.schedule.opt)
    assert grads[0] and all(torch.allclose(a, b, atol=1e-6) for a, b in zip(*grads))


def test_the_stage_says_its_decision_and_figure_in_its_first_event(pretrain):
    from coa_trainer.stages.loop import run_loop

    run, impl = pretrain
    assert run_loop(run, impl) == 0
    (started,) = [e for e in read_events(run.io.run_dir) if e["type"] == "run_started"]
    assert started["fast_path"]["activation checkpointing"].startswith("off (CPU: peak resident memory ")
    assert list(started["fast_path"])[-1] == "activation checkpointing"
