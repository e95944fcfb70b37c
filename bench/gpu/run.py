"""bench/gpu: the trainer at model size, beside what a user would run instead — Qwen2.5-0.5B- and 1.5B-shaped models
(random init from the published config shapes, the real 151,936-entry vocabulary, never downloaded), or a tiny shape
with the same vocabulary for CPU. Ours runs through the trainer's own code (TokenScorer with the fused head and packed
attention, packed micro-batches, fp32 master weights, the rollout engine, policy_updates()); the anchors
(anchors.py: HF generate with a dynamic / static+compiled cache, a plain HF + Liger SFT step and GRPO update) run
in the same process on the same shapes, and every table prints ours ÷ anchor:

1. matmul TFLOP/s in the run's dtype (the MFU denominator, measured here) and copy bandwidth (the decode floor's);
2. decode: greedy, prompt + new tokens per row, prefill included, at two batch sizes: ours (the engine), the
   reference loop ours replaced, HF generate (dynamic cache; static cache + torch.compile on CUDA); tokens/s against
   the bandwidth floor (each step reads every weight once plus the batch's KV cache);
3. host time per decode step outside the model forward, before (reference loop) and after (engine), on CPU where
   the host and the forward share the clock (on CUDA the engine replays CUDA graphs: no per-step host work);
4. the RL step, single turn (batch × max-new tokens sampled, GRPO update with a KL reference), twice on one
   optimiser, split into generate / train in steady state (the second step; the first captures graphs, compiles
   kernels and allocates the optimiser's state), the update's tokens/s and MFU beside a plain HF + Liger GRPO update
   of the same shape (anchors.py); and multi-turn (agent.py: two search calls per trajectory, the observations
   appended to each slot's cache), with the prefill tokens the engine encoded beside those a loop re-encoding every
   turn would;
5. SFT: ours (sequences packed into token-budget micro-batches of close to the budget each, activation checkpointing
   off unless it runs out of memory without — the measured peak decides and is reported), ours with the unfused loss
   and a dense attention mask, and the HF + Liger anchor: tokens/s, MFU = model FLOPs/s ÷ matmul FLOP/s, peak memory,
   and what each part of ours ran (model/fastpath.py); and packed attention alone (attention.py: transformers' dense
   mask vs unpacked is_causal vs varlen flash).

    .venv/bin/python bench/gpu/run.py --device cpu --shape tiny [--threads 2] [--write]
    .venv/bin/python bench/gpu/run.py --device cuda --shape 0.5b|1.5b [--write] [--out result.json]

--write replaces the `## bench/gpu (<device type>, <shape>)` (decode) and `## bench/gpu training (<device type>,
<shape>)` sections of bench/RESULTS.md, each where the run measured its parts."""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src" / "trainer"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch
from coa_trainer.base import quiet  # noqa: F401
from coa_trainer.data.samples import Encoded
from coa_trainer.base.distributed import DistInfo
from coa_trainer.rollout import generate as generation
from coa_trainer.rollout.engine import Engine
from coa_trainer.rollout.generate import generate, reference_generate, release_engines, restore_engine_memory
from coa_trainer.rollout.kernels import decode_kernels
from coa_trainer.model.packing import micro_batches
from coa_trainer.algos.grpo import Sample, group_advantages
from coa_trainer.model.packing import layout
from coa_trainer.model.scoring import TokenScorer, fused_token_loss, token_logprobs
from coa_trainer.algos.losses import lm_count, lm_loss_parts
from coa_trainer.algos.microbatch import accumulate, clip_grad_norm
from coa_trainer.model.optim import make_optimizer
from coa_trainer.stages.rl import policy_updates, release_cached_memory

import agent
import anchors
import attention
from anchors import sync
from results import write_section

VOCAB = 151_936  # Qwen2.5's
# Qwen2.5-0.5B / -1.5B config.json shapes (huggingface.co/Qwen/Qwen2.5-0.5B, /Qwen2.5-1.5B); tiny keeps the vocabulary
SHAPES = {
    "tiny": dict(
        hidden_size=64, intermediate_size=192, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2
    ),
    "0.5b": dict(
        hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2
    ),
    "1.5b": dict(
        hidden_size=1536, intermediate_size=8960, num_hidden_layers=28, num_attention_heads=12, num_key_value_heads=2
    ),
}
# per device type: SFT rows × length (ours: varied lengths; anchor: dense rows), decode prompt / new tokens and
# batches, RL prompts × group × new tokens, multi-turn turn length / tokens per turn / observation cap
SIZES = {
    "cpu": dict(
        sft_fill=2,
        sft_len=256,
        sft_steps=3,
        anchor_rows=2,
        anchor_len=256,
        prompt=64,
        new=32,
        batches=(16, 64),
        rl_prompts=4,
        rl_group=4,
        rl_new=32,
        rl_anchor_rows=10,
        turn_tokens=12,
        turn_new=24,
        obs=48,
        budget=1024,
    ),
    "cuda": dict(
        sft_fill=2,
        sft_len=2048,
        sft_steps=5,
        anchor_rows=8,
        anchor_len=2048,
        prompt=256,
        new=128,
        batches=(64, 256),
        rl_prompts=16,
        rl_group=8,
        rl_new=512,
        rl_anchor_rows=21,
        turn_tokens=128,
        turn_new=256,
        obs=256,
        budget=16384,
    ),
}
# sft_fill: ours' SFT batch is sequences of ¼…1 × sft_len tokens drawn until the next would pass sft_fill × budget, so
# it runs as sft_fill micro-batches of close to the budget each (the 1.5B target's 16k-token micro-batch);
# rl_anchor_rows: the anchor's trajectories per micro-batch, the budget's worth of prompt + rl_new rows


BEST_OF = {"cpu": 3, "cuda": 1}  # decode calls timed per run: the fastest counts
COMPILED = True  # ours: the engine's compiled steps on every device (--eager: its eager ones on CPU)


def ours(lm, dev: torch.device, compiled: bool | None = None):
    """`lm`'s rollout engine, compiled (as on CUDA by default) unless --eager: registered where generate() finds it."""
    eng = Engine(lm, dev, None, compiled=COMPILED if compiled is None else compiled)
    generation._ENGINES[lm] = {(str(torch.device(dev)), None): eng}
    return eng


def ops_row(eng, batch: int, L: int) -> dict:
    """Kernels per decode step of `eng`'s session of `batch` slots (rollout/kernels.py: the profiler's kernel events
    on CUDA, inductor's kernels + extern calls on CPU), every slot decoding."""
    s = next(x for x in reversed(eng.sessions.values()) if x.slots >= batch)
    s.active.fill_(True)
    s.budget.fill_(1 << 30)
    return decode_kernels(eng, s, eng.attention_length(L))


def steady_allocator() -> bool:
    """CPU: glibc malloc's mmap and trim thresholds fixed at 1 GiB (mallopt) for the whole run. By default glibc
    adapts them as blocks come and go, and whether a step's [batch × 152k] temporaries are served from the heap or
    page-faulted in afresh every step then depends on the order of earlier allocations: at batch 16 that alone moved
    the engine's call between 1.7 and 0.9 s, the reference loop's between 1.0 and 0.8 s. False where it is not
    glibc."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.mallopt(-3, 1 << 30)) and bool(libc.mallopt(-1, 1 << 30))  # M_MMAP_THRESHOLD, M_TRIM_THRESHOLD
    except (OSError, AttributeError):
        return False


def build(
    shape: str, dev: torch.device, dtype: torch.dtype, seed: int = 0, ckpt: bool = False, layers: int | None = None
):
    """A random model of `shape` (`layers`: that many of its decoder layers instead of all)."""
    from transformers import AutoModelForCausalLM, Qwen2Config

    torch.manual_seed(seed)
    spec = {**SHAPES[shape], **({"num_hidden_layers": layers} if layers else {})}
    cfg = Qwen2Config(
        vocab_size=VOCAB,
        max_position_embeddings=32768,
        tie_word_embeddings=True,
        rope_theta=1e6,
        attn_implementation="sdpa",
        **spec,
    )
    with torch.device(dev):  # initialised where it runs: a 1.5B model's random init on the host took tens of seconds
        m = AutoModelForCausalLM.from_config(cfg, dtype=dtype)
    if ckpt:
        m.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    return m


def matmul_tflops(dev: torch.device, dtype: torch.dtype, seconds: float = 2.0) -> float:
    n = 8192 if dev.type == "cuda" else 1024
    a, b = torch.randn(n, n, device=dev, dtype=dtype), torch.randn(n, n, device=dev, dtype=dtype)
    for _ in range(3):
        a @ b
    sync(dev)
    reps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        a @ b
        reps += 1
    sync(dev)
    return 2 * n**3 * reps / (time.perf_counter() - t0) / 1e12


def copy_bandwidth(dev: torch.device, seconds: float = 1.0) -> float:
    """Bytes moved per second (read + write) by a large tensor copy."""
    n = (1 << 30 if dev.type == "cuda" else 1 << 27) // 4
    a, b = torch.empty(n, device=dev), torch.empty(n, device=dev)
    a.fill_(1.0)
    b.copy_(a)
    sync(dev)
    reps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        b.copy_(a)
        reps += 1
    sync(dev)
    return 2 * 4 * n * reps / (time.perf_counter() - t0)


def peak_memory(dev: torch.device) -> float:
    """GiB: CUDA max allocated since the last reset; CPU peak RSS of the process."""
    if dev.type == "cuda":
        return torch.cuda.max_memory_allocated(dev) / 2**30
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def reset_peak(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)


def device_memory(dev: torch.device) -> float:
    """GiB the device has: the GPU's memory, or the machine's RAM."""
    if dev.type == "cuda":
        return torch.cuda.get_device_properties(dev).total_memory / 2**30
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30


def flops_per_token(lm, lens: list[int]) -> float:
    """6 × (non-embedding + LM-head parameters) + attention as PaLM counts it (Chowdhery et al. 2022, appendix B:
    12 · layers · hidden · sequence, causal half not subtracted); packed sequences attend within themselves:
    sequence = Σ n² / Σ n. Recomputation is not counted (MFU, not HFU)."""
    emb = lm.get_input_embeddings().weight.numel()
    body = sum(p.numel() for p in lm.parameters()) - emb  # tied head counted once by parameters()
    head = lm.get_output_embeddings().weight.numel()
    ctx = sum(n * n for n in lens) / sum(lens)
    cfg = lm.config
    return 6 * (body + head) + 12 * cfg.num_hidden_layers * cfg.hidden_size * ctx


# ------------------------------------------------------------------ SFT


def step_time(dev: torch.device, step, steps: int) -> tuple[float, float]:
    """(median seconds of `steps` timed steps after one warm-up, the last loss): the median, because on a shared
    machine one step now and then waits for the others' processes."""
    step()
    times = []
    for _ in range(steps):
        sync(dev)
        t0 = time.perf_counter()
        loss = step()
        sync(dev)
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2], loss


def sft_ours(shape: str, dev: torch.device, dtype: torch.dtype, sz: dict, ckpt: bool, before: bool = False) -> dict:
    """`before`: the baseline the fused head is measured against — the unfused loss (log-probs from checkpointed
    head chunks, then summed) and transformers' sdpa with its dense block-diagonal mask for the packed rows."""
    lm = build(shape, dev, dtype, ckpt=ckpt)
    lm.train()
    model = TokenScorer(lm)
    if before:
        lm.set_attn_implementation("sdpa")
        model.packed_attention = False
    params = [p for p in model.parameters() if p.requires_grad]
    opt = make_optimizer(params, 1e-5, 0.0)
    g = torch.Generator().manual_seed(1)
    lens = sft_lengths(sz, g)
    batch = [
        Encoded(
            torch.randint(0, VOCAB, (8,), generator=g).tolist(),
            torch.randint(0, VOCAB, (n - 8,), generator=g).tolist(),
            [],
            [1] * (n - 8),
            [],
            "",
        )
        for n in lens
    ]
    di = DistInfo()

    def loss_fn(m, part):
        if before:
            lay = layout([e.input_ids for e in part], 0, True, dev)
            tmask = lay.place([e.target_mask[1 : len(e.input_ids)] for e in part])
            return -(token_logprobs(m, lay.ids, None, None, lay.pos, tmask > 0) * tmask).sum(), 0.0, {}
        return lm_loss_parts(m, part, 0, dev, None, True)  # the weights are in `dtype` already: no autocast

    def step() -> float:
        opt.zero_grad(set_to_none=True)
        acc = accumulate(
            model, batch, [[len(e.input_ids)] for e in batch], lm_count(batch), loss_fn, sz["budget"], True, di
        )
        clip_grad_norm(params, 1.0)
        opt.step()
        return acc.loss_sum

    reset_peak(dev)
    dt, loss = step_time(dev, step, sz["sft_steps"])
    tok_s = sum(lens) / dt
    groups = micro_batches([[n] for n in lens], sz["budget"], True)
    out = {
        "tokens_per_step": sum(lens),
        "step_s": round(dt, 3),
        "tokens_per_s": round(tok_s, 1),
        "model_tflops": round(tok_s * flops_per_token(lm, lens) / 1e12, 4),
        "peak_gib": round(peak_memory(dev), 2),
        "loss_finite": bool(torch.isfinite(torch.tensor(loss))),
        "params": sum(p.numel() for p in lm.parameters()),
        "micro_batch_tokens": [sum(lens[x]) for x in groups],
        "activation_checkpointing": ckpt,
        "packed_attention": model.packed_attention,
        "liger": model.liger,
        "fast_path": {**model.fast_path(None, True, "lm"), "AdamW": str(opt.coa_adamw)},
    }
    release_cached_memory(dev)
    return out


def sft_lengths(sz: dict, g: torch.Generator) -> list[int]:
    """Sequence lengths of ¼ … 1 × sft_len drawn until the next would pass sft_fill × budget tokens."""
    lens: list[int] = []
    while True:
        n = int(sz["sft_len"] * (0.25 + 0.75 * float(torch.rand(1, generator=g))))
        if sum(lens) + n > sz["sft_fill"] * sz["budget"]:
            return lens
        lens.append(n)


def sft_decided(shape: str, dev: torch.device, dtype: torch.dtype, sz: dict, forced: bool) -> dict:
    """Ours without activation checkpointing where memory allows, decided as a stage decides it
    (model/activations.decide): without it first, its measured peak (the whole step's, AdamW's state included)
    against the device's memory; again with it when that passes the headroom or runs out of memory on CUDA. The result
    says which and why."""
    from coa_trainer.model.activations import Peak, capacity, decide

    cap = capacity(dev)
    if forced:
        return {**sft_ours(shape, dev, dtype, sz, True), "checkpointing_decided": decide(dev.type, True, None)[1]}
    try:
        out = sft_ours(shape, dev, dtype, sz, False)
        peak = Peak(int(out["peak_gib"] * 2**30), 0, cap)
    except torch.OutOfMemoryError as e:
        out, peak = None, Peak(None, 0, cap, str(e).splitlines()[0][:160])
    on, why = decide(dev.type, False, peak)
    if out is not None and not on:
        return {**out, "checkpointing_decided": why}
    gc.collect()
    release_cached_memory(dev)
    return {**sft_ours(shape, dev, dtype, sz, True), "checkpointing_decided": why}


def sft_anchor(shape: str, dev: torch.device, dtype: torch.dtype, sz: dict) -> dict:
    lm = build(shape, dev, dtype, seed=5)
    step, tokens, liger = anchors.hf_sft_step_setup(lm, dev, sz["anchor_rows"], sz["anchor_len"], VOCAB)
    reset_peak(dev)
    dt, loss = step_time(dev, step, sz["sft_steps"])
    tok_s = tokens / dt
    out = {
        "tokens_per_step": tokens,
        "step_s": round(dt, 3),
        "tokens_per_s": round(tok_s, 1),
        "model_tflops": round(tok_s * flops_per_token(lm, [sz["anchor_len"]] * sz["anchor_rows"]) / 1e12, 4),
        "peak_gib": round(peak_memory(dev), 2),
        "loss_finite": bool(torch.isfinite(torch.tensor(loss))),
        "liger": liger,
    }
    release_cached_memory(dev)
    return out


# ------------------------------------------------------------------ decode


def floor_tokens_per_s(lm, batch: int, prompt: int, new: int, bandwidth: float) -> float:
    cfg = lm.config
    esize = next(lm.parameters()).element_size()
    weight_bytes = sum(p.numel() for p in lm.parameters()) * esize
    head_dim = cfg.hidden_size // cfg.num_attention_heads
    kv_per_token = 2 * cfg.num_hidden_layers * cfg.num_key_value_heads * head_dim * esize
    return batch / ((weight_bytes + batch * (prompt + new / 2) * kv_per_token) / bandwidth)


def _timed(dev: torch.device, fn, *args, **kwargs):
    """(fn(*args, **kwargs), seconds), the device synchronised on both ends."""
    sync(dev)
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    sync(dev)
    return out, time.perf_counter() - t0


def _best(dev: torch.device, fn, *args, **kwargs):
    """`_timed`, best of BEST_OF calls (on a shared CPU the others' load only ever adds time)."""
    runs = [_timed(dev, fn, *args, **kwargs) for _ in range(BEST_OF[dev.type])]
    return runs[0][0], min(t for _, t in runs)


def decode_rows(shape: str, dev: torch.device, dtype: torch.dtype, sz: dict, bandwidth: float) -> list[dict]:
    """Every batch: ours and the reference loop ours replaced; at the largest batch HF generate with its dynamic
    cache too (from its own model instance, in sdpa: ours switches its instance to packed attention when scoring)."""
    lm = build(shape, dev, dtype).eval()
    rows = []
    for batch in sz["batches"]:
        plist, new = decode_prompts(batch, sz), sz["new"]
        runs: dict[str, tuple[float, float]] = {}
        eng = ours(lm, dev)
        # warm-up: the engine compiles its steps (once per process) and captures its graphs for these shapes
        _, first_s = _timed(dev, generate, lm, plist, new, set(), 0, dev)
        reset_peak(dev)
        (out, _, _), t = _best(dev, generate, lm, plist, new, set(), 0, dev)
        runs["ours (engine)"] = (batch * new / t, peak_memory(dev))
        ops = ops_row(eng, batch, sz["prompt"] + new)
        release_engines(lm)
        release_cached_memory(dev)
        reset_peak(dev)
        (ref, _, _), t = _best(dev, reference_generate, lm, plist, new, set(), 0, dev)
        runs["reference loop (before)"] = (batch * new / t, peak_memory(dev))
        # greedy agreement with the reference: every token on CPU (fp32); in bf16 a random model's near-ties part
        # the two forwards' rounding sooner or later, so the share of tokens before each row's first difference
        agree = sum(next((i for i, (a, b) in enumerate(zip(x, y)) if a != b), len(x)) for x, y in zip(out, ref))
        agree /= max(1, sum(len(x) for x in out))
        if batch == sz["batches"][-1]:
            runs.update(hf_decode(shape, dev, dtype, sz, batch, static=False))
        release_cached_memory(dev)
        floor = floor_tokens_per_s(lm, batch, sz["prompt"], new, bandwidth)
        rows += [
            decode_row(batch, name, tps, peak, floor, agree if name.startswith("ours") else None)
            for name, (tps, peak) in runs.items()
        ]
        rows[-len(runs)].update(
            decode_ops_per_layer=ops["per_layer"],
            kernels_per_step=ops["kernels_per_step"],
            compiled=ops["compiled"],
            graphs=ops["graphs"],
            first_call_s=round(first_s, 2),
            kernels_top=ops["top"],
        )
    release_cached_memory(dev)
    return rows


def decode_ops(shape: str, dev: torch.device, sz: dict, layers: int | None) -> dict:
    """Kernels per decode step of ours at a model size's layer shape (the full vocabulary, fp32 on CPU), 4 slots: the
    compiled step's count is a property of the step, not of the batch. `layers`: that many decoder layers (None:
    all) — the step's embedding, head and sampling kernels are then spread over fewer layers, so the per-layer figure
    is higher than the whole model's."""
    lm = build(shape, dev, torch.float32 if dev.type == "cpu" else torch.bfloat16, layers=layers).eval()
    eng = ours(lm, dev)
    if dev.type == "cpu":  # the count is the decode step's: the prefill runs eagerly (one compilation, not two)
        eng._prefill_fn = eng._prefill_forward
    plist = decode_prompts(4, sz)
    _, first_s = _timed(dev, generate, lm, plist, 8, set(), 0, dev)
    k = ops_row(eng, 4, sz["prompt"] + 16)
    release_engines(lm)
    return {
        "shape": shape,
        "first_call_s": round(first_s, 1),
        "compile_error": eng.stats.compile_error,
        "of_layers": SHAPES[shape]["num_hidden_layers"],
        **k,
    }


def decode_prompts(batch: int, sz: dict) -> list[list[int]]:
    return torch.randint(0, VOCAB, (batch, sz["prompt"]), generator=torch.Generator().manual_seed(batch)).tolist()


def decode_row(batch: int, who: str, tps: float, peak: float, floor: float, agree: float | None) -> dict:
    return {
        "batch": batch,
        "who": who,
        "tokens_per_s": round(tps, 1),
        "floor_tokens_per_s": round(floor, 1),
        "of_floor": round(tps / floor, 4),
        "peak_gib": round(peak, 2),
        "agrees_with_reference": None if agree is None else round(agree, 4),
    }


def hf_decode(
    shape: str, dev: torch.device, dtype: torch.dtype, sz: dict, batch: int, static: bool
) -> dict[str, tuple[float, float]]:
    hf = build(shape, dev, dtype).eval()
    pt = torch.tensor(decode_prompts(batch, sz), device=dev)
    new = sz["new"]
    # warm-up at the measured shape: the static cache compiles (CUDA graphs) for exactly this batch
    anchors.hf_generate(hf, pt if static else pt[:2], new if static else 4, static=static)
    reset_peak(dev)
    _, t = anchors.hf_generate(hf, pt, new, static=static)
    name = "HF generate, static cache + compile" if static else "HF generate, dynamic cache"
    return {name: (batch * new / t, peak_memory(dev))}


def decode_anchor(shape: str, dev: torch.device, dtype: torch.dtype, sz: dict, bandwidth: float) -> list[dict]:
    """HF generate with a static cache, compiled (CUDA graphs), at the largest batch; its own process in
    device-check.sh (compilation is the slowest thing the bench does)."""
    batch = sz["batches"][-1]
    lm = build(shape, dev, dtype)
    floor = floor_tokens_per_s(lm, batch, sz["prompt"], sz["new"], bandwidth)
    return [
        decode_row(batch, name, tps, peak, floor, None)
        for name, (tps, peak) in hf_decode(shape, dev, dtype, sz, batch, static=True).items()
    ]


def ops_per_step(new: int, fn, *args) -> float:
    """PyTorch operator calls (aten::, nested ones included) per decode step of one call — each one a kernel launch
    and its host work on CUDA, unless captured in a graph."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn(*args)
    return sum(e.count for e in prof.key_averages() if e.key.startswith("aten::")) / new


def host_time(shape: str, dev: torch.device, dtype: torch.dtype, sz: dict) -> dict:
    """Seconds per decode step spent outside the model's forward (CPU: one clock for both) and operator calls per
    step, reference loop vs engine, at the larger batch."""
    lm = build(shape, dev, dtype).eval()
    batch, new = sz["batches"][-1], sz["new"]
    plist = torch.randint(0, VOCAB, (batch, sz["prompt"]), generator=torch.Generator().manual_seed(9)).tolist()
    inner = lm.forward
    spent = [0.0]

    def timed_forward(*a, **k):
        t0 = time.perf_counter()
        try:
            return inner(*a, **k)
        finally:
            spent[0] += time.perf_counter() - t0

    reference_generate(lm, plist[:2], 2, set(), 0, dev)
    lm.forward = timed_forward
    runs = []
    for _ in range(BEST_OF[dev.type]):  # the fastest call, with its own forward time
        spent[0] = 0.0
        _, wall = _timed(dev, reference_generate, lm, plist, new, set(), 0, dev)
        runs.append({"wall_s": wall, "forward_s": spent[0]})
    del lm.forward
    before = {
        **min(runs, key=lambda x: x["wall_s"]),
        "ops_per_step": ops_per_step(new, reference_generate, lm, plist, new, set(), 0, dev),
    }
    eng = ours(lm, dev, compiled=False)  # eager: the forward's own time is measured per step
    generate(lm, plist, new, set(), 0, dev)  # warm-up
    runs = []
    for _ in range(BEST_OF[dev.type]):
        s0 = (eng.stats.forward_s, eng.stats.prefill_s, eng.stats.decode_steps)
        _, wall = _timed(dev, generate, lm, plist, new, set(), 0, dev)
        runs.append(
            {
                "wall_s": wall,
                "forward_s": eng.stats.forward_s - s0[0] + eng.stats.prefill_s - s0[1],
                "device_steps": eng.stats.decode_steps - s0[2],
            }
        )
    after = {
        **min(runs, key=lambda x: x["wall_s"]),
        "ops_per_step": ops_per_step(new, generate, lm, plist, new, set(), 0, dev),
    }
    out = {"batch": batch, "new_tokens": new, "prompt": sz["prompt"]}
    for name, r in (("before", before), ("after", after)):
        out[name] = {k: round(v, 4) if isinstance(v, float) else v for k, v in r.items()}
        out[name]["host_ms_per_step"] = round((r["wall_s"] - r["forward_s"]) / new * 1e3, 3)
        out[name]["forward_ms_per_step"] = round(r["forward_s"] / new * 1e3, 3)
    return out


# ------------------------------------------------------------------ RL


def rl_config(sz: dict):
    from coa_trainer.base.config import validate_config

    return validate_config(
        {
            "stages": {
                "rl2": {
                    "mini_batches": 1,
                    "ppo_epochs": 1,
                    "clip_eps": 0.2,
                    "kl_coef": 0.001,
                    "temperature": 1.0,
                    "grad_clip": 1.0,
                    "micro_batch_tokens": sz["budget"],
                    "packing": True,
                }
            }
        }
    ).stages.rl2


def _train_step(lm, ref, samples: list[Sample], G: int, dev: torch.device, sz: dict) -> tuple[float, float, bool]:
    model = TokenScorer(lm)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = make_optimizer(params, 1e-6, 0.0)
    lm.train()
    reset_peak(dev)
    (totals, _), t = _timed(
        dev, policy_updates, model, ref, opt, params, samples, G, rl_config(sz), 0, dev, None, DistInfo()
    )
    lm.eval()
    return t, peak_memory(dev), bool(torch.isfinite(torch.tensor(totals["loss_sum"])))


def update_flops_per_token(lm, lens: list[int]) -> float:
    """The policy's forward + backward (6N + attention) and the reference's forward (a third of that) per token."""
    return flops_per_token(lm, lens) * 4 / 3


def rl_prompts(sz: dict) -> list[list[int]]:
    P, G = sz["rl_prompts"], sz["rl_group"]
    return [
        torch.randint(0, VOCAB, (sz["prompt"],), generator=torch.Generator().manual_seed(i)).tolist()
        for i in range(P)
        for _ in range(G)
    ]


def rl_single(shape: str, dev: torch.device, dtype: torch.dtype, sz: dict) -> dict:
    """Two RL steps as the stage runs them — generate, the cached memory released, the GRPO update on the same
    optimiser — and the second one's split: the first also captures the engine's graphs, compiles kernels and
    allocates the optimiser's state, which a run pays once."""
    lm = build(shape, dev, dtype).eval()
    ref = build(shape, dev, dtype, seed=0)
    ref.requires_grad_(False)
    G = sz["rl_group"]
    prompts = rl_prompts(sz)
    model = TokenScorer(lm)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = make_optimizer(params, 1e-6, 0.0)
    eng = ours(lm, dev)
    steps = []
    for i in range(2):
        gen = torch.Generator().manual_seed(2 + i)
        reset_peak(dev)
        c0 = eng.stats.graphs_captured
        (new, lps, _), gen_s = _timed(
            dev, generate, lm, prompts, sz["rl_new"], set(), 0, dev, temperature=1.0, generator=gen
        )
        captures = eng.stats.graphs_captured - c0
        gen_peak = peak_memory(dev)
        if i == 1:  # the same rollout again, graphs warm (the stage frees them before each update)
            c1 = eng.stats.graphs_captured
            _, warm_s = _timed(
                dev,
                generate,
                lm,
                prompts,
                sz["rl_new"],
                set(),
                0,
                dev,
                temperature=1.0,
                generator=torch.Generator().manual_seed(2 + i),
            )
            warm = {"generate_warm_s": round(warm_s, 3), "captures_warm": eng.stats.graphs_captured - c1}
        release_cached_memory(dev, lm)  # as the RL stage does between its rollout and its update
        rewards = torch.rand(len(prompts), generator=torch.Generator().manual_seed(3 + i)).tolist()
        samples = [
            Sample(p, n, [1] * len(n), lp, a)
            for p, n, lp, a in zip(prompts, new, lps, group_advantages(rewards, G, True))
        ]
        lm.train()
        reset_peak(dev)
        (totals, _), train_s = _timed(
            dev, policy_updates, model, ref, opt, params, samples, G, rl_config(sz), 0, dev, None, DistInfo()
        )
        restore_engine_memory(lm)
        lm.eval()
        lens = [len(s.prompt_ids) + len(s.ids) for s in samples]
        steps.append(
            {
                "generate_s": round(gen_s, 3),
                "train_s": round(train_s, 3),
                "captures": captures,
                "generate_fraction": round(gen_s / (gen_s + train_s), 3),
                "generated_tokens": sum(len(n) for n in new),
                "update_tokens": sum(lens),
                "update_tokens_per_s": round(sum(lens) / train_s, 1),
                "update_model_tflops": round(sum(lens) * update_flops_per_token(lm, lens) / train_s / 1e12, 4),
                "generate_peak_gib": round(gen_peak, 2),
                "train_peak_gib": round(peak_memory(dev), 2),
                "loss_finite": bool(torch.isfinite(torch.tensor(totals["loss_sum"]))),
            }
        )
    release_cached_memory(dev, lm)
    steady = {**steps[1], **warm}
    steady["generate_fraction_warm"] = round(warm["generate_warm_s"] / (warm["generate_warm_s"] + steady["train_s"]), 3)
    out = {
        "trajectories": len(prompts),
        **steady,
        "first_step": steps[0],
        "fast_path": {**model.fast_path(None, True, "grpo"), "AdamW": str(opt.coa_adamw)},
    }
    if not fused_token_loss(model):  # CPU: the fused GRPO head CUDA runs, forced, on the same trajectories
        from coa_trainer.model import scoring

        was, scoring.FUSED_TOKEN_LOSS = scoring.FUSED_TOKEN_LOSS, "always"
        try:
            lm.train()
            _, fused_s = _timed(
                dev, policy_updates, model, ref, opt, params, samples, G, rl_config(sz), 0, dev, None, DistInfo()
            )
            lm.eval()
        finally:
            scoring.FUSED_TOKEN_LOSS = was
        out["fused_head"] = {
            "train_s": round(fused_s, 3),
            "update_tokens_per_s": round(sum(lens) / fused_s, 1),
            "update_model_tflops": round(sum(lens) * update_flops_per_token(lm, lens) / fused_s / 1e12, 4),
        }
    return out


def rl_anchor(shape: str, dev: torch.device, dtype: torch.dtype, sz: dict) -> dict:
    """The plain HF + Liger GRPO update (anchors.py) on trajectories of ours' shape (prompt + rl_new tokens each):
    the second of two updates, as ours."""
    lm = build(shape, dev, dtype, seed=5)
    ref = build(shape, dev, dtype, seed=0)
    prompts = rl_prompts(sz)
    g = torch.Generator().manual_seed(2)
    completions = [torch.randint(0, VOCAB, (sz["rl_new"],), generator=g).tolist() for _ in prompts]
    rewards = torch.rand(len(prompts), generator=torch.Generator().manual_seed(3)).tolist()
    step, tokens, liger = anchors.hf_grpo_update_setup(
        lm, ref, prompts, completions, group_advantages(rewards, sz["rl_group"], True), dev, sz["rl_anchor_rows"]
    )
    step()
    reset_peak(dev)
    loss, train_s = _timed(dev, step)
    lens = [len(p) + len(c) for p, c in zip(prompts, completions)]
    out = {
        "trajectories": len(prompts),
        "rows_per_micro_batch": sz["rl_anchor_rows"],
        "train_s": round(train_s, 3),
        "update_tokens": tokens,
        "update_tokens_per_s": round(tokens / train_s, 1),
        "update_model_tflops": round(tokens * update_flops_per_token(lm, lens) / train_s / 1e12, 4),
        "train_peak_gib": round(peak_memory(dev), 2),
        "loss_finite": bool(torch.isfinite(torch.tensor(loss))),
        "liger": liger,
    }
    release_cached_memory(dev)
    return out


def rl_multi(shape: str, dev: torch.device, dtype: torch.dtype, sz: dict, data_dir: Path) -> dict:
    from coa_trainer.data.samples import prompt_text

    config, bench = agent.load_benchmark(data_dir)
    observations = sorted(set(bench.observations.values()))
    texts = (
        [p.contents for p in bench.corpus]
        + [q.question for q in bench.questions]
        + observations
        + [config.prompt_template]
    )
    tok = agent.bench_tokenizer(VOCAB, texts)
    P, G = sz["rl_prompts"], sz["rl_group"]
    qs = bench.split("train")[:P]
    prompts = [
        tok(prompt_text(config, q.question), add_special_tokens=False)["input_ids"] for q in qs for _ in range(G)
    ]
    lm = build(shape, dev, dtype).eval()
    ref = build(shape, dev, dtype, seed=0)
    ref.requires_grad_(False)
    kw = dict(turn_tokens=sz["turn_tokens"], max_new_tokens=sz["turn_new"], max_obs_tokens=sz["obs"])
    eng = ours(lm, dev)
    agent.multi_turn(lm, tok, prompts, observations, dev, **kw)  # warm-up at the timed slot count
    reset_peak(dev)
    p0 = eng.stats.prefill_tokens
    (trajs, timings, _), gen_s = _timed(dev, agent.multi_turn, lm, tok, prompts, observations, dev, **kw)
    gen_peak = peak_memory(dev)
    prefill = eng.stats.prefill_tokens - p0
    release_engines(lm)
    release_cached_memory(dev)
    calls = [len(tr.queries) for tr in trajs]
    sampled = [sum(tr.loss_mask) for tr in trajs]
    obs_tokens = sum(len(tr.ids) - s for tr, s in zip(trajs, sampled))
    reprefill = sum(n for tr in trajs for n, _ in tr.contexts)  # a loop that re-encodes each turn's whole context
    rewards = torch.rand(len(trajs), generator=torch.Generator().manual_seed(4)).tolist()
    adv = group_advantages(rewards, G, True)
    samples = [Sample(tr.prompt_ids, tr.ids, tr.loss_mask, tr.logprobs, a) for tr, a in zip(trajs, adv)]
    train_s, train_peak, finite = _train_step(lm, ref, samples, G, dev, sz)
    release_cached_memory(dev)
    turns = sum(len(tr.contexts) for tr in trajs)
    return {
        "trajectories": len(trajs),
        "tool_calls_per_trajectory": round(sum(calls) / len(calls), 2),
        "trajectories_with_2_calls": sum(c == 2 for c in calls),
        "mean_turn_tokens": round(sum(sampled) / turns, 1),
        "sampled_tokens": sum(sampled),
        "observation_tokens": obs_tokens,
        "prompt_tokens": sum(map(len, prompts)),
        "prefill_tokens": prefill,
        "prefill_expected": sum(map(len, prompts)) + obs_tokens + sum(calls),
        "reprefill_tokens": reprefill,
        "generate_s": round(gen_s, 2),
        "tools_s": round(timings.get("tools", 0.0), 3),
        "train_s": round(train_s, 2),
        "generate_fraction": round(gen_s / (gen_s + train_s), 3),
        "generate_peak_gib": round(gen_peak, 2),
        "train_peak_gib": round(train_peak, 2),
        "loss_finite": finite,
    }


def device_name(dev: torch.device) -> str:
    if dev.type == "cuda":
        return torch.cuda.get_device_name(dev)
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return "CPU: " + line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "CPU: " + (platform.processor() or platform.machine())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--shape", choices=sorted(SHAPES), default="tiny")
    ap.add_argument(
        "--dtype",
        choices=["float32", "bfloat16"],
        default=None,
        help="weights and compute (default: bfloat16 on cuda, float32 on cpu)",
    )
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument(
        "--activation-checkpointing",
        action="store_true",
        help="ours in SFT, whatever the memory (default: off unless it runs out of memory without)",
    )
    ap.add_argument(
        "--data",
        default=str(ROOT / ".cache" / "bench-gpu" / "data"),
        help="embedded benchmark directory with observations.json (made here when missing: needs node)",
    )
    ap.add_argument(
        "--only",
        default="decode,ops,host,rl,multi,sft,sft-before,attention,anchor-decode,anchor-sft,anchor-rl",
        help="sections to run, in this order (device-check.sh runs the anchors in a second process)",
    )
    ap.add_argument(
        "--eager",
        action="store_true",
        help="ours' engine eager, without torch.compile (default: compiled on every device)",
    )
    ap.add_argument(
        "--ops-layers",
        type=int,
        default=None,
        help="decoder layers of the 0.5B-shaped model the kernels per decode step are counted on "
        "(default: all on CUDA, 2 on CPU, where inductor's C++ compile of 24 layers takes long)",
    )
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--out", default=None, help="also write the result JSON here")
    args = ap.parse_args()
    global COMPILED
    COMPILED = not args.eager
    torch.set_num_threads(args.threads)
    dev = torch.device(args.device)
    steady = steady_allocator() if dev.type == "cpu" else None
    if dev.type == "cuda" and not torch.cuda.is_available():
        sys.exit("--device cuda but torch.cuda.is_available() is False")
    dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}[
        args.dtype or ("bfloat16" if dev.type == "cuda" else "float32")
    ]
    sz = SIZES[dev.type]
    ckpt = args.activation_checkpointing
    r: dict = {
        "device": device_name(dev),
        "device_type": dev.type,
        "shape": args.shape,
        "dtype": str(dtype),
        "command": " ".join(["bench/gpu/run.py", *sys.argv[1:]]),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "sizes": sz,
        "date": time.strftime("%Y-%m-%d"),
        "load_avg": round(os.getloadavg()[0], 1),
        "steady_allocator": steady,
    }
    import transformers

    r["transformers"] = transformers.__version__
    # matmul before and after the work; the MFU denominator is the better of the two (on a shared machine the load
    # moves between them, and the device's capability is the higher figure)
    before = matmul_tflops(dev, dtype)
    r["bandwidth_gb_s"] = round(copy_bandwidth(dev) / 1e9, 1)

    def emit(key: str, value) -> None:
        gc.collect()  # the section's models are unreferenced now: hand their memory back before the next one
        release_cached_memory(dev)
        r[key] = value
        print(json.dumps({key: value}), flush=True)
        if args.out:  # after every section: a run stopped by its time limit keeps what it measured
            Path(args.out).write_text(json.dumps(r, indent=1) + "\n")

    bw = r["bandwidth_gb_s"] * 1e9
    sections = {  # run in the order --only names them
        "decode": lambda: emit("decode", decode_rows(args.shape, dev, dtype, sz, bw)),
        "host": lambda: dev.type == "cpu" and emit("host", host_time(args.shape, dev, dtype, sz)),
        # kernels per decode step at Qwen2.5-0.5B's shape (the decode rows count them at the run's own shape)
        "ops": lambda: emit(
            "decode_ops", decode_ops("0.5b", dev, sz, args.ops_layers or (2 if dev.type == "cpu" else None))
        ),
        "rl": lambda: emit("rl", rl_single(args.shape, dev, dtype, sz)),
        "multi": lambda: emit("multi", rl_multi(args.shape, dev, dtype, sz, Path(args.data))),
        "sft": lambda: emit("sft", sft_decided(args.shape, dev, dtype, sz, ckpt)),
        "sft-before": lambda: emit("sft_before", sft_ours(args.shape, dev, dtype, sz, ckpt, before=True)),
        "attention": lambda: emit(
            "attention",
            attention.measure(
                dev,
                dtype,
                SHAPES[args.shape]["num_attention_heads"],
                SHAPES[args.shape]["num_key_value_heads"],
                SHAPES[args.shape]["hidden_size"] // SHAPES[args.shape]["num_attention_heads"],
                sz["budget"],
                3 if dev.type == "cpu" else 10,
            ),
        ),
        # torch.compile's CUDA graphs: CUDA only
        "anchor-decode": lambda: (
            dev.type == "cuda" and emit("decode_anchor", decode_anchor(args.shape, dev, dtype, sz, bw))
        ),
        # Liger patches transformers' Qwen2 classes for the whole process: after ours
        "anchor-sft": lambda: emit("sft_anchor", sft_anchor(args.shape, dev, dtype, sz)),
        "anchor-rl": lambda: emit("rl_anchor", rl_anchor(args.shape, dev, dtype, sz)),
    }
    for name in args.only.split(","):
        if name not in sections:
            sys.exit(f"--only: unknown section {name!r} (known: {', '.join(sections)})")
        sections[name]()
    after = matmul_tflops(dev, dtype)
    r["load_avg_end"] = round(os.getloadavg()[0], 1)
    r["matmul_tflops_before_after"] = [round(before, 4), round(after, 4)]
    r["matmul_tflops"] = round(max(before, after), 4)
    print(json.dumps(r))
    if args.out:
        Path(args.out).write_text(json.dumps(r, indent=1) + "\n")
    if args.write:
        write_section([r], SHAPES, VOCAB)


if __name__ == "__main__":
    main()
