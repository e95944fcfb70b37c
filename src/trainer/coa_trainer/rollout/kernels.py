"""Kernels launched per decode step of the rollout engine, counted from a profile of one block (never one opaque
call counted as one):

- CUDA: the profiler's device kernel events (memory copies and sets included) of one block — a replayed graph
  launches every kernel it captured;
- CPU, compiled: inductor's generated C++ kernels (recorded in the profiler: engine.compile_fn turns that on) —
  fused ones (`cpp_fused_…`) and templates (`graph_<n>_kernel`: flex attention) — plus the extern calls its wrapper
  makes (matrix products, fallback ops) — the direct children of the compiled graph's call;
- CPU, eager: the top-level operators dispatched (each launches one or more kernels on a device).

Allocation, view and metadata operators launch no kernel and are not counted."""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING, Callable

import torch
from torch.autograd.profiler_util import FunctionEvent

if TYPE_CHECKING:
    from .engine import Engine, Session

# operators that launch no kernel: allocations, views and metadata
NO_KERNEL = {
    f"aten::{n}"
    for n in (
        "empty",
        "empty_strided",
        "empty_like",
        "as_strided",
        "view",
        "reshape",
        "_reshape_alias",
        "alias",
        "resize_",
        "detach",
        "detach_",
        "lift_fresh",
        "t",
        "transpose",
        "expand",
        "expand_as",
        "unsqueeze",
        "squeeze",
        "slice",
        "select",
        "permute",
        "_unsafe_view",
        "split",
        "split_with_sizes",
        "chunk",
        "unbind",
        "narrow",
        "view_as",
        "resolve_conj",
        "resolve_neg",
        "to",
        "contiguous",
        "type_as",
        "lift_fresh_copy",
        "scalar_tensor",
        "item",
        "_local_scalar_dense",
        "set_",
        "is_nonzero",
    )
}
# of those, the ones that copy when they must: counted when a kernel ran below them
MAY_COPY = {"aten::to", "aten::reshape", "aten::contiguous", "aten::type_as", "aten::expand_as"}
COMPILED_CALL = "## Call CompiledFxGraph"


def _kernel_below(e: FunctionEvent) -> bool:
    return any(c.name not in NO_KERNEL or _kernel_below(c) for c in e.cpu_children)


def _is_kernel(e: FunctionEvent) -> bool:
    if "cpp_fused" in e.name or re.fullmatch(r"graph_\d+_kernel\d*", e.name):  # inductor's, fused or a template
        return True
    if not e.name.startswith("aten::"):
        return False
    return e.name not in NO_KERNEL or (e.name in MAY_COPY and _kernel_below(e))


def count_kernels(fn: Callable[[], object], device: torch.device) -> tuple[int, Counter]:
    """(kernels, per name) launched by `fn()` (see the module doc)."""
    from torch.profiler import ProfilerActivity, profile

    cuda = device.type == "cuda"
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=acts) as prof:
        fn()
        if cuda:
            torch.cuda.synchronize(device)
    names: Counter = Counter()
    events = prof.events() or []
    if cuda:
        for e in events:
            if e.device_type.name == "CUDA":
                names[e.name[:80]] += 1
        return sum(names.values()), names
    compiled = [e for e in events if e.name.startswith(COMPILED_CALL)]
    if compiled:
        for call in compiled:
            # The call's own thread only: its wrapper launches its kernels in turn there, and the profiler nests
            # events by time, so another thread's event inside the call's span is not one of them
            for e in call.cpu_children:
                # any other event of the wrapper's that is not an operator is taken for a kernel too: a template
                # named otherwise (another torch) is then counted, not hidden
                if e.thread == call.thread and (_is_kernel(e) or not e.name.startswith(("aten::", "##"))):
                    names[e.name.split("cpp_fused_")[-1][:80] if "cpp_fused" in e.name else e.name] += 1
        return sum(names.values()), names
    for e in events:  # eager: top-level operators
        if e.cpu_parent is None and _is_kernel(e):
            names[e.name] += 1
    return sum(names.values()), names


def decode_kernels(engine: Engine, s: Session, L: int) -> dict:
    """Kernels per decode step of `engine`'s block over session `s` at attention length `L` (its graph or
    compilation made first, outside the profile), and per layer: {"kernels_per_step", "per_layer", "layers",
    "compiled", "graphs", "top"}."""
    engine.decode(s, L)  # capture / compile outside the count
    if engine.device.type == "cuda":
        torch.cuda.synchronize(engine.device)
    n, names = count_kernels(lambda: engine.decode(s, L), engine.device)
    steps, layers = engine.block, len(engine.kv.layers)
    per_step = n / steps
    return {
        "kernels_per_step": round(per_step, 2),
        "per_layer": round(per_step / layers, 2),
        "layers": layers,
        "compiled": engine.compiled,
        "graphs": engine.graphs_on,
        "top": [[k, round(v / steps, 2)] for k, v in names.most_common(12)],
    }
