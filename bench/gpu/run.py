"""bench/gpu: the trainer at model size — Qwen2.5-0.5B- and 1.5B-shaped models (random init from the published
config shapes, the real 151,936-entry vocabulary, never downloaded), or a tiny shape with the same vocabulary for
CPU. Everything runs through the trainer's own code (TokenScorer, packed micro-batches, fp32 master weights,
generate(), policy_updates()), in one process:

1. matmul TFLOP/s of the device in the run's dtype (the MFU denominator, measured here, not a datasheet figure),
   and the device's copy bandwidth (a large tensor copy: bytes read + written per second — the decode floor's
   denominator; on CPU it is the memcpy bandwidth of this machine);
2. SFT: packed micro-batches, forward + backward + AdamW step, tokens/s and MFU = model FLOPs/s ÷ matmul FLOP/s,
   model FLOPs/token = 6 × (non-embedding parameters + LM head) + 12 × layers × hidden × sequence (recomputation
   by activation checkpointing and the chunked LM head is not counted: MFU, not HFU);
3. decode: greedy generation at batch 64 and 256 (growing and pre-sized KV cache), tokens/s against the bandwidth
   floor: each step must read every weight once plus the batch's KV cache, so floor tokens/s = batch ÷ ((weight
   bytes + mean KV bytes) ÷ bandwidth);
4. one RL step split into generate (batch × max-new tokens, sampled) / tools (one batched search of the env server
   on the embedded corpus, when node and dist/cli.js are there) / train (GRPO policy update with a KL reference,
   packed token-budget micro-batches); the KV caches are released between generate and train;
5. peak memory: CUDA max allocated per phase; CPU peak RSS of the process.

    .venv/bin/python bench/gpu/run.py --device cpu --shape tiny [--threads 2] [--write]
    .venv/bin/python bench/gpu/run.py --device cuda --shape 0.5b|1.5b [--write]

--write replaces the `## bench/gpu (<device type>, <shape>)` section of bench/RESULTS.md."""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src" / "trainer"))

import torch
from coa_trainer.base import quiet  # noqa: F401
from coa_trainer.data.samples import Encoded
from coa_trainer.base.distributed import DistInfo
from coa_trainer.rollout.generate import generate
from coa_trainer.algos.grpo import Sample
from coa_trainer.model.scoring import TokenScorer
from coa_trainer.algos.losses import lm_count, lm_loss_parts
from coa_trainer.algos.microbatch import accumulate, clip_grad_norm
from coa_trainer.model.optim import make_optimizer
from coa_trainer.stages.rl import policy_updates, release_cached_memory

VOCAB = 151_936  # Qwen2.5's
# Qwen2.5-0.5B / -1.5B config.json shapes (huggingface.co/Qwen/Qwen2.5-0.5B, /Qwen2.5-1.5B); tiny keeps the vocabulary
SHAPES = {
    "tiny": dict(hidden_size=64, intermediate_size=192, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2),
    "0.5b": dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                 num_key_value_heads=2),
    "1.5b": dict(hidden_size=1536, intermediate_size=8960, num_hidden_layers=28, num_attention_heads=12,
                 num_key_value_heads=2),
}
# per device type: SFT rows × length, decode prompt / new tokens, RL prompts × group × new tokens
SIZES = {
    "cpu": dict(sft_rows=4, sft_len=256, sft_steps=3, prompt=64, new=32, rl_prompts=4, rl_group=4, rl_new=32,
                budget=1024),
    "cuda": dict(sft_rows=16, sft_len=2048, sft_steps=10, prompt=256, new=128, rl_prompts=16, rl_group=8,
                 rl_new=512, budget=16384),
}


def sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize()


def build(shape: str, dev: torch.device, dtype: torch.dtype, seed: int = 0, ckpt: bool = False):
    from transformers import AutoModelForCausalLM, Qwen2Config

    torch.manual_seed(seed)
    cfg = Qwen2Config(vocab_size=VOCAB, max_position_embeddings=32768, tie_word_embeddings=True, rope_theta=1e6,
                      attn_implementation="sdpa", **SHAPES[shape])
    m = AutoModelForCausalLM.from_config(cfg).to(device=dev, dtype=dtype)
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


def matmul_params(m) -> tuple[int, int]:
    """(non-embedding parameters, LM-head parameters): the matmul weights of one token's forward."""
    emb = m.get_input_embeddings().weight.numel()
    total = sum(p.numel() for p in m.parameters())  # tied head counted once by parameters()
    return total - emb, m.get_output_embeddings().weight.numel()


def sft_bench(shape: str, dev: torch.device, dtype: torch.dtype, sz: dict, ckpt: bool, tflops: float) -> dict:
    lm = build(shape, dev, dtype, ckpt=ckpt)
    lm.train()
    model = TokenScorer(lm)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = make_optimizer(params, 1e-5, 0.0)
    g = torch.Generator().manual_seed(1)
    # varied lengths (¼ … 1 × sft_len), packed into token-budget micro-batches, as the trainer does with packing on
    lens = [int(sz["sft_len"] * (0.25 + 0.75 * float(torch.rand(1, generator=g)))) for _ in range(sz["sft_rows"])]
    batch = [Encoded(torch.randint(0, VOCAB, (8,), generator=g).tolist(),
                     torch.randint(0, VOCAB, (n - 8,), generator=g).tolist(), [], [1] * (n - 8), [], "")
             for n in lens]
    di = DistInfo()

    def loss_fn(m, part):
        return lm_loss_parts(m, part, 0, dev, None, True)  # the weights are in `dtype` already: no autocast

    def step() -> float:
        opt.zero_grad(set_to_none=True)
        acc = accumulate(model, batch, [[len(e.input_ids)] for e in batch], lm_count(batch), loss_fn,
                         sz["budget"], True, di)
        clip_grad_norm(params, 1.0)
        opt.step()
        return acc.loss_sum

    reset_peak(dev)
    step()  # warm-up
    sync(dev)
    t0 = time.perf_counter()
    for _ in range(sz["sft_steps"]):
        loss = step()
    sync(dev)
    dt = (time.perf_counter() - t0) / sz["sft_steps"]
    tokens = sum(lens)
    body, head = matmul_params(lm)
    cfg = lm.config
    # attention as PaLM counts it (Chowdhery et al. 2022, appendix B: 12 · layers · hidden · sequence per token,
    # the causal half not subtracted); packed sequences attend within themselves: sequence = Σ n² / Σ n
    ctx = sum(n * n for n in lens) / tokens
    flops_tok = 6 * (body + head) + 12 * cfg.num_hidden_layers * cfg.hidden_size * ctx
    tok_s = tokens / dt
    out = {"tokens_per_step": tokens, "step_s": round(dt, 3), "tokens_per_s": round(tok_s, 1),
           "model_tflops": round(tok_s * flops_tok / 1e12, 4), "mfu": round(tok_s * flops_tok / 1e12 / tflops, 4),
           "loss_finite": bool(torch.isfinite(torch.tensor(loss))), "peak_gib": round(peak_memory(dev), 2),
           "params": sum(p.numel() for p in lm.parameters()), "activation_checkpointing": ckpt}
    release_cached_memory(dev)
    return out


def decode_bench(lm, dev: torch.device, batch: int, prompt: int, new: int, bandwidth: float, static: bool) -> dict:
    g = torch.Generator().manual_seed(batch)
    prompts = torch.randint(0, VOCAB, (batch, prompt), generator=g).tolist()
    generate(lm, prompts[:2], 2, set(), 0, dev, static_cache=static)  # warm-up
    # the prefill (prompt forward + first token) timed apart, so tokens/s is the decode steps' own
    sync(dev)
    t0 = time.perf_counter()
    generate(lm, prompts, 1, set(), 0, dev, static_cache=static)
    sync(dev)
    prefill = time.perf_counter() - t0
    reset_peak(dev)
    t0 = time.perf_counter()
    out, _, _ = generate(lm, prompts, new, set(), 0, dev, static_cache=static)
    sync(dev)
    dt = max(time.perf_counter() - t0 - prefill, 1e-9)
    produced = sum(len(o) for o in out) - batch
    cfg = lm.config
    esize = next(lm.parameters()).element_size()
    weight_bytes = sum(p.numel() for p in lm.parameters()) * esize
    head_dim = cfg.hidden_size // cfg.num_attention_heads
    kv_per_token = 2 * cfg.num_hidden_layers * cfg.num_key_value_heads * head_dim * esize
    mean_ctx = prompt + new / 2
    step_bytes = weight_bytes + batch * mean_ctx * kv_per_token
    floor = batch / (step_bytes / bandwidth)
    return {"batch": batch, "new_tokens": new, "prompt": prompt, "static_cache": static, "prefill_s": round(prefill, 3),
            "tokens_per_s": round(produced / dt, 1), "floor_tokens_per_s": round(floor, 1),
            "of_floor": round(produced / dt / floor, 4), "peak_gib": round(peak_memory(dev), 2)}


def rl_bench(shape: str, dev: torch.device, dtype: torch.dtype, sz: dict, ckpt: bool) -> dict:
    lm = build(shape, dev, dtype, ckpt=ckpt)
    ref = build(shape, dev, dtype, seed=0)
    ref.requires_grad_(False)
    model = TokenScorer(lm)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = make_optimizer(params, 1e-6, 0.0)
    P, G = sz["rl_prompts"], sz["rl_group"]
    g = torch.Generator(device=dev).manual_seed(2)
    prompts = [torch.randint(0, VOCAB, (sz["prompt"],), generator=torch.Generator().manual_seed(i)).tolist()
               for i in range(P) for _ in range(G)]
    reset_peak(dev)
    lm.eval()
    sync(dev)
    t0 = time.perf_counter()
    new, lps, _ = generate(lm, prompts, sz["rl_new"], set(), 0, dev, temperature=1.0, generator=g)
    sync(dev)
    gen_s = time.perf_counter() - t0
    gen_peak = peak_memory(dev)
    tools_s, tools_note = tool_call(len(prompts))
    release_cached_memory(dev)
    reset_peak(dev)
    lm.train()
    rewards = torch.rand(len(prompts), generator=torch.Generator().manual_seed(3)).tolist()
    from coa_trainer.algos.grpo import group_advantages

    adv = group_advantages(rewards, G, True)
    samples = [Sample(p, n, [1] * len(n), lp, a) for p, n, lp, a in zip(prompts, new, lps, adv)]
    scfg = {"mini_batches": 1, "ppo_epochs": 1, "clip_eps": 0.2, "kl_coef": 0.001, "temperature": 1.0,
            "grad_clip": 1.0, "micro_batch_tokens": sz["budget"], "packing": True}
    sync(dev)
    t0 = time.perf_counter()
    totals, _ = policy_updates(model, ref, opt, params, samples, G, scfg, 0, dev, None, DistInfo())
    sync(dev)
    train_s = time.perf_counter() - t0
    out = {"trajectories": len(prompts), "generated_tokens": sum(len(n) for n in new), "generate_s": round(gen_s, 2),
           "tools_s": None if tools_s is None else round(tools_s, 3), "tools_note": tools_note,
           "train_s": round(train_s, 2), "generate_peak_gib": round(gen_peak, 2),
           "train_peak_gib": round(peak_memory(dev), 2), "loss_finite": bool(torch.isfinite(
               torch.tensor(totals["loss_sum"])))}
    release_cached_memory(dev)
    return out


def tool_call(n: int) -> tuple[float | None, str]:
    """One batched search of n queries (benchmark questions) against the env server on the embedded corpus."""
    import tempfile

    from coa_trainer.env.client import EnvClient, EnvError

    try:
        from coa_trainer.data.benchmark import ensure_benchmark_files
        from coa_trainer.base.config import validate_config

        with tempfile.TemporaryDirectory() as tmp:
            config = validate_config({})
            bench = ensure_benchmark_files(config, Path(tmp) / "data")
            env = EnvClient.start(Path(tmp) / "data" / "corpus.jsonl", "coa")
            try:
                qs = [q.question for q in bench.split("train")][:n]
                qs = (qs * (n // max(1, len(qs)) + 1))[:n]
                env.search(qs[:2], top_k=2)  # warm-up
                t0 = time.perf_counter()
                env.search(qs, top_k=2)
                return time.perf_counter() - t0, f"one search of {n} queries, top-2, embedded corpus"
            finally:
                env.stop()
    except (EnvError, OSError) as e:
        return None, f"not measured: {e}"


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
    ap.add_argument("--dtype", choices=["float32", "bfloat16"], default=None,
                    help="weights and compute (default: bfloat16 on cuda, float32 on cpu)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--activation-checkpointing", action="store_true")
    ap.add_argument("--decode-batches", default="64,256")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    dev = torch.device(args.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        sys.exit("--device cuda but torch.cuda.is_available() is False")
    dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}[
        args.dtype or ("bfloat16" if dev.type == "cuda" else "float32")]
    sz = SIZES[dev.type]
    ckpt = args.activation_checkpointing

    load_avg = round(os.getloadavg()[0], 1)
    # matmul measured before and after the SFT steps; the MFU denominator is the better of the two (on a shared
    # machine the load moves between them, and the device's capability is the higher figure)
    tflops_before = matmul_tflops(dev, dtype)
    bandwidth = copy_bandwidth(dev)
    sft = sft_bench(args.shape, dev, dtype, sz, ckpt, tflops_before)
    tflops_after = matmul_tflops(dev, dtype)
    tflops = max(tflops_before, tflops_after)
    sft["mfu"] = round(sft["model_tflops"] / tflops, 4)
    lm = build(args.shape, dev, dtype).eval()
    decode = [decode_bench(lm, dev, int(b), sz["prompt"], sz["new"], bandwidth, static)
              for b in args.decode_batches.split(",") for static in (False, True)]
    del lm
    release_cached_memory(dev)
    rl = rl_bench(args.shape, dev, dtype, sz, ckpt)
    result = {"device": device_name(dev), "device_type": dev.type, "shape": args.shape, "dtype": str(dtype),
              "threads": torch.get_num_threads(), "torch": torch.__version__, "matmul_tflops": round(tflops, 4),
              "matmul_tflops_before_after": [round(tflops_before, 4), round(tflops_after, 4)],
              "bandwidth_gb_s": round(bandwidth / 1e9, 1), "sft": sft, "decode": decode, "rl": rl,
              "sizes": sz, "date": time.strftime("%Y-%m-%d"), "load_avg": load_avg}
    print(json.dumps(result))
    if args.write:
        write_section(result, args)


def write_section(r: dict, args: argparse.Namespace) -> None:
    path = ROOT / "bench" / "RESULTS.md"
    text = path.read_text() if path.is_file() else "# Benchmarks\n"
    title = f"## bench/gpu ({r['device_type']}, {r['shape']})"
    cmd = f".venv/bin/python bench/gpu/run.py --device {args.device} --shape {args.shape} --threads {args.threads}"
    if args.dtype:
        cmd += f" --dtype {args.dtype}"
    if args.activation_checkpointing:
        cmd += " --activation-checkpointing"
    s, sz, rl = r["sft"], r["sizes"], r["rl"]
    shp = SHAPES[r["shape"]]
    shape_note = (f"Qwen2.5-{r['shape'].upper()}-shaped" if r["shape"] != "tiny" else "a tiny Qwen2 shape") + \
        f" ({shp['num_hidden_layers']} layers × {shp['hidden_size']} hidden, {shp['num_attention_heads']} heads / " \
        f"{shp['num_key_value_heads']} KV heads)"
    floor_note = ("HBM floor: (weight bytes + mean KV bytes) ÷ copy bandwidth measured here" if r["device_type"] == "cuda"
                  else "on CPU there is no HBM: the floor uses this machine's measured memcpy bandwidth")
    rows = "\n".join(
        f"| {d['batch']} | {'pre-sized' if d['static_cache'] else 'growing'} | {d['tokens_per_s']:,} | "
        f"{d['floor_tokens_per_s']:,} | {d['of_floor']:.1%} | {d['peak_gib']} |" for d in r["decode"])
    tools = f"{rl['tools_s']} s ({rl['tools_note']})" if rl["tools_s"] is not None else rl["tools_note"]
    section = f"""{title}

_Last run: {r['date']}_ — device: **{r['device']}**, {r['threads']} threads, {r['dtype']}, torch {r['torch']}
(machine shared: figures vary run to run).

Command: `{cmd} --write`

Model: {shape_note}, Qwen2.5's {VOCAB:,}-entry vocabulary, random init, {s['params']:,} parameters
(never downloaded). 1-minute load average at the start: {r['load_avg']}. Measured in the same process: matmul
{r['matmul_tflops']} TFLOP/s ({r['dtype']}; before / after the SFT steps {r['matmul_tflops_before_after'][0]} /
{r['matmul_tflops_before_after'][1]}, the higher one is the MFU denominator), copy bandwidth {r['bandwidth_gb_s']} GB/s.

| SFT (packed, {sz['sft_rows']} sequences of ≤ {sz['sft_len']} tokens, budget {sz['budget']}) | |
|---|---|
| tokens/s | {s['tokens_per_s']:,} |
| model TFLOP/s | {s['model_tflops']} |
| MFU (vs the matmul above) | {s['mfu']:.1%} |
| activation checkpointing | {'on' if s['activation_checkpointing'] else 'off'} |
| peak memory (GiB) | {s['peak_gib']} |
| loss finite | {'yes' if s['loss_finite'] else '**no**'} |

Decode (greedy, prompt {sz['prompt']} tokens, {sz['new']} new; the prefill is timed apart and left out; {floor_note}):

| batch | KV cache | tokens/s | floor tokens/s | of floor | peak memory (GiB) |
|---|---|---|---|---|---|
{rows}

One RL step ({rl['trajectories']} trajectories = {sz['rl_prompts']} prompts × G {sz['rl_group']}, ≤ {sz['rl_new']} new
tokens sampled, {rl['generated_tokens']:,} generated; GRPO update with a KL reference, packed micro-batches):
generate {rl['generate_s']} s, tools {tools}, train {rl['train_s']} s; peak memory generate {rl['generate_peak_gib']} GiB,
train {rl['train_peak_gib']} GiB (caches released in between); loss finite: {'yes' if rl['loss_finite'] else '**no**'}.
{"Peak memory on CPU is the process's peak RSS (it never goes down), not per phase." if r['device_type'] == 'cpu' else ''}
"""
    pattern = re.compile(r"^" + re.escape(title) + r"\n.*?(?=^## |\Z)", re.DOTALL | re.MULTILINE)
    text = pattern.sub(section + "\n", text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


if __name__ == "__main__":
    main()
