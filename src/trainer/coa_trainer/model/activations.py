"""Activation checkpointing, decided by the measured peak of the stage's first update rather than by a flag alone.

Recomputing every decoder layer in backward costs about a third more compute; it is worth it only when the update
would not fit without it. So before its first event a stage runs one forward/backward as large as its first update
without checkpointing (stages/loop.py: SupervisedSteps its first batch, GrpoSteps a rollout batch at full length),
the gradients dropped and the random state kept, and measures what it reached:

- CUDA: `torch.cuda.max_memory_allocated` over the probe, plus the AdamW state the first optimiser step still has to
  allocate (two moments per parameter, in the parameter's dtype), against the device's memory. Checkpointing is
  switched on when that passes `HEADROOM` of it, or when the probe runs out of memory; off otherwise.
- CPU: the process's peak resident memory over the probe (VmHWM, reset before it), against the machine's memory.
  Off whatever it says — the machine's memory is shared with everything else on it, and CPU runs stay as they
  were — unless `model.gradient_checkpointing` asks for it; the figure is reported all the same.

`model.gradient_checkpointing: true` turns it on without a probe. The decision, with the figure it was made on, is
the `activation checkpointing` entry of the stage's run_started `fast_path`."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
import torch

HEADROOM = 0.85  # the share of the device's memory an update may reach without checkpointing (the rest: fragmentation,
# micro-batches longer than the probe's, the rollout engine's cache between updates)


def enable(model: torch.nn.Module) -> None:
    """Checkpoint every decoder layer of a transformers model (non-reentrant: works with frozen inputs — LoRA —,
    under FSDP2 and with keyword arguments; the same gradients, less memory)."""
    # transformers ≥ 5.2x: activation_checkpointing_enable (the old name, gradient_checkpointing_enable, warns there)
    what = "activation" if hasattr(model, "activation_checkpointing_enable") else "gradient"
    switch: Callable[..., None] = getattr(model, f"{what}_checkpointing_enable")
    switch(**{f"{what}_checkpointing_kwargs": {"use_reentrant": False}})


def is_enabled(model: torch.nn.Module) -> bool:
    return any(getattr(m, "gradient_checkpointing", False) for m in model.modules())


def drop_gradients(model: torch.nn.Module, opt: torch.optim.Optimizer) -> None:
    """Forget what a probe's backward left: the model's gradients and the optimiser's (fp32 masters)."""
    opt.zero_grad(set_to_none=True)
    for p in model.parameters():
        p.grad = None


@dataclass(frozen=True)
class Peak:
    """What the probe reached: `used` bytes (None: it ran out of memory, `oom` says how), the optimiser state still to
    come, and the device's memory."""

    used: int | None
    state: int
    capacity: int
    oom: str | None = None

    @property
    def need(self) -> int:
        return (self.used or 0) + self.state


def _gib(n: int) -> str:
    return f"{n / 2**30:.2f} GiB"


def capacity(device: torch.device) -> int:
    """Bytes of memory the device has: the GPU's, or the machine's RAM."""
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).total_memory
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def _cpu_peak_reset() -> bool:
    """Reset the process's peak resident size (Linux: writing 5 to /proc/self/clear_refs); False where it cannot."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _cpu_peak() -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def optimizer_state_to_come(opt: torch.optim.Optimizer) -> int:
    """Bytes AdamW's first step allocates: exp_avg and exp_avg_sq for each parameter that has no state yet (a resumed
    optimiser has them already)."""
    return sum(
        2 * p.numel() * p.element_size()
        for group in opt.param_groups
        for p in group.get("params", ())
        if p.requires_grad and not opt.state.get(p)
    )


def measure(device: torch.device, probe: Callable[[], None], opt: torch.optim.Optimizer) -> Peak | None:
    """Run `probe` (one forward/backward, no optimiser step) and measure its peak; None where this platform cannot
    measure it. The random state is kept: the stage's first step draws what it would have drawn without the probe."""
    state = optimizer_state_to_come(opt)
    cap = capacity(device)
    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
    elif not _cpu_peak_reset():
        return None
    devices = [device] if cuda else []
    try:
        with torch.random.fork_rng(devices=devices):
            probe()
    except torch.OutOfMemoryError as e:
        text = str(e).strip().splitlines()
        return Peak(None, state, cap, (text[0] if text else "CUDA out of memory")[:160])
    finally:
        if cuda:
            torch.cuda.empty_cache()
    if cuda:
        return Peak(torch.cuda.max_memory_allocated(device), state, cap)
    used = _cpu_peak()
    return None if used is None else Peak(used, state, cap)


def decide(device_type: str, forced: bool, peak: Peak | None) -> tuple[bool, str]:
    """(on, what the first event says) from the config's switch and the probe's measurement."""
    if forced:
        return True, "on (model.gradient_checkpointing)"
    if peak is None:
        return False, "off (the first update's peak could not be measured on this platform)"
    if peak.oom is not None:
        return True, f"on (out of memory without it: {peak.oom}; {_gib(peak.capacity)})"
    what = "peak memory" if device_type == "cuda" else "peak resident memory"
    parts = (
        f" (the first update's forward/backward {_gib(peak.used or 0)} + AdamW state {_gib(peak.state)})"
        if peak.state
        else ""
    )  # none to come: a measured optimiser step holds it already
    figure = f"{what} {_gib(peak.need)} of {_gib(peak.capacity)} without it{parts}"
    if device_type != "cuda":
        return False, f"off ({device_type.upper()}: {figure}; on a CPU only model.gradient_checkpointing turns it on)"
    if peak.need > HEADROOM * peak.capacity:
        return True, f"on ({figure}: above {HEADROOM:.0%})"
    return False, f"off ({figure})"
