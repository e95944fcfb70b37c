"""bench/rollout: (1) batched generation tokens/s with vs without the KV cache, (2) one RL step's time split into
generate / tools / train, measured by running the real RL-2 stage (`train --stage rl2`, stages/rl.py) and reading the
`generate_s`, `tools_s`, `train_s`, `step_s` values of its metrics events.

    .venv/bin/python bench/rollout/run.py [--threads 2] [--batch 32] [--new-tokens 256] [--rl-steps 4]
        [--model DIR] [--device cpu|cuda] [--write]

--model: the policy of the RL measurement (default: the newest runs/*/stages/sft3/final made with the default
benchmark, else the embedded default after one pretraining step, whose rollouts run to every limit). Generation (1) always uses the
untrained embedded default with no stop token, so every row generates exactly --new-tokens tokens.
--write replaces the `## bench/rollout` section of bench/RESULTS.md."""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src" / "trainer"))

from coa_trainer.base import quiet  # noqa: E402,F401
import torch  # noqa: E402

from coa_trainer.data.benchmark import benchmark_from_config  # noqa: E402
from coa_trainer.base.config import validate_config  # noqa: E402
from coa_trainer.data.samples import encode_text, prompt_text  # noqa: E402
from coa_trainer.rollout.generate import generate  # noqa: E402
from coa_trainer.model.scoring import autocast  # noqa: E402
from coa_trainer.model.load import count_parameters, load_model, setup_runtime, write_embedded_model  # noqa: E402
from coa_trainer.data.benchmark import vocabulary_texts  # noqa: E402


@torch.no_grad()
def generate_no_cache(model, prompts, new_tokens, pad_id, device, dtype):
    """Greedy decoding that runs the whole sequence through the model for every new token (no KV cache)."""
    B, T = len(prompts), max(len(p) for p in prompts)
    ids = torch.full((B, T), pad_id, dtype=torch.long)
    attn = torch.zeros((B, T), dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, T - len(p) :] = torch.tensor(p)
        attn[i, T - len(p) :] = 1
    ids, attn = ids.to(device), attn.to(device)
    for _ in range(new_tokens):
        pos = (attn.cumsum(-1) - 1).clamp(min=0)
        with autocast(device, dtype):
            logits = model(input_ids=ids, attention_mask=attn, position_ids=pos, use_cache=False).logits[:, -1]
        nxt = logits.float().argmax(-1, keepdim=True)
        ids, attn = torch.cat([ids, nxt], -1), torch.cat([attn, torch.ones_like(nxt)], -1)
    return ids[:, T:].tolist()


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def generation_bench(config: dict, rt, args) -> dict:
    bench = benchmark_from_config(config)
    with tempfile.TemporaryDirectory() as tmp:
        d = write_embedded_model(config, vocabulary_texts(bench, config), Path(tmp) / "init", 0)
        model, tok = load_model(d, rt, None, trainable=False)
    model.eval()
    qs = bench.split("train")[: args.batch]
    prompts = [encode_text(tok, prompt_text(config, q.question))[0] for q in qs]
    generate(model, prompts, 8, set(), tok.pad_token_id, rt.device, rt.autocast_dtype)  # warm-up
    sync(rt.device)
    t0 = time.perf_counter()
    cached, _, _ = generate(model, prompts, args.new_tokens, set(), tok.pad_token_id, rt.device, rt.autocast_dtype)
    sync(rt.device)
    t_cache = time.perf_counter() - t0
    t0 = time.perf_counter()
    plain = generate_no_cache(model, prompts, args.new_tokens, tok.pad_token_id, rt.device, rt.autocast_dtype)
    sync(rt.device)
    t_plain = time.perf_counter() - t0
    n = sum(len(x) for x in cached)
    return {
        "params": count_parameters(model),
        "batch": len(prompts),
        "new_tokens": args.new_tokens,
        "prompt_len": round(sum(map(len, prompts)) / len(prompts), 1),
        "cache_tokens_per_s": round(n / t_cache),
        "no_cache_tokens_per_s": round(n / t_plain),
        "speedup": round(t_plain / t_cache, 2),
        "same_greedy_tokens": cached == plain,
    }


def default_policy() -> Path | None:
    """The newest sft3 result of a run made with the default benchmark (its tokenizer must match)."""
    defaults = validate_config({}).benchmark.model_dump()
    found = []
    for final in ROOT.glob("runs/*/stages/sft3/final"):
        events = final.parents[2] / "events.jsonl"
        try:
            first = json.loads(events.open().readline())
        except (OSError, ValueError):
            continue
        cfg = first.get("config", {})
        if cfg.get("benchmark") == defaults and cfg.get("seed", 0) == 0 and (final / "config.json").is_file():
            found.append((final.stat().st_mtime, final))
    return max(found)[1] if found else None


def rl_bench(args) -> dict:
    model = Path(args.model) if args.model else default_policy()
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        cfg = {
            "threads": args.threads,
            "device": args.device,
            "stages": {
                "rl2": {
                    "steps": args.rl_steps,
                    "heldout_every": 0,
                    "sample_every": 0,
                    "log_every": 1,
                    "init_from": str(model) if model else None,
                }
            },
        }
        if model is None:  # the untrained embedded default: pretrain writes it, one step
            cfg["stages"]["pretrain"] = {"steps": 1}
        (Path(tmp) / "run.json").write_text(json.dumps(cfg))
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src" / "trainer"), "OMP_NUM_THREADS": str(args.threads)}
        base = [
            sys.executable,
            "-m",
            "coa_trainer",
            "train",
            "--config",
            str(Path(tmp) / "run.json"),
            "--run-dir",
            str(run),
        ]
        if model is None:
            subprocess.run(base + ["--stage", "pretrain"], env=env, check=True, capture_output=True)
            cfg["stages"]["rl2"]["init_from"] = str(run / "stages" / "pretrain" / "final")
            (Path(tmp) / "run.json").write_text(json.dumps(cfg))
        r = subprocess.run(base + ["--stage", "rl2"], env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"rl2 stage failed (exit {r.returncode}):\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
        events = [json.loads(line) for line in (run / "events.jsonl").open()]
    steps = [e["values"] for e in events if e["type"] == "metrics" and e.get("stage") == "rl2"]
    measured = steps[1:] or steps  # the first step pays for lazy initialisation
    mean = lambda k: sum(s[k] for s in measured) / len(measured)  # noqa: E731
    keys = (
        "step_s",
        "generate_s",
        "tools_s",
        "train_s",
        "gen_tokens_per_s",
        "train_tokens_per_s",
        "tc",
        "response_len",
    )
    out = {k: round(mean(k), 4) for k in keys}
    out["policy"] = (
        str(model.relative_to(ROOT))
        if model and model.is_relative_to(ROOT)
        else str(model or "embedded default after 1 pretraining step")
    )
    out["steps_measured"] = len(measured)
    (cfg_rl,) = [e["config"]["stages"]["rl2"] for e in events if e["type"] == "run_started" and e["stage"] == "rl2"]
    out["rollouts_per_step"] = cfg_rl["prompts_per_step"] * cfg_rl["group_size"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--new-tokens", type=int, default=256)
    ap.add_argument("--rl-steps", type=int, default=4)
    ap.add_argument("--model", default=None)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    config = validate_config({"threads": args.threads, "device": args.device})
    rt = setup_runtime(config)
    gen = generation_bench(config, rt, args)
    print(json.dumps({"generation": gen}), flush=True)
    rl = rl_bench(args)
    device = torch.cuda.get_device_name(0) if rt.device.type == "cuda" else f"cpu ({platform.machine()})"
    result = {
        "device": device,
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "generation": gen,
        "rl": rl,
    }
    print(json.dumps({"rl": rl}))
    if args.write:
        write_section(result, args)


def write_section(r: dict, args: argparse.Namespace) -> None:
    path = ROOT / "bench" / "RESULTS.md"
    text = path.read_text() if path.is_file() else "# Benchmarks\n"
    g, rl = r["generation"], r["rl"]
    cmd = (
        f".venv/bin/python bench/rollout/run.py --threads {args.threads} --batch {args.batch} --new-tokens "
        f"{args.new_tokens} --rl-steps {args.rl_steps}"
        + (f" --device {args.device}" if args.device != "cpu" else "")
        + (f" --model {args.model}" if args.model else "")
    )
    share = lambda k: f"{rl[k]:.2f} s ({rl[k] / rl['step_s']:.0%})"  # noqa: E731
    section = f"""## bench/rollout

_Last run: {time.strftime("%Y-%m-%d")}_

Command: `{cmd} --write`
Device: {r["device"]}, {r["threads"]} threads, torch {r["torch"]} (machine shared: figures vary run to run).

Generation (untrained embedded default, {g["params"]:,} parameters, batch {g["batch"]}, prompts ~{g["prompt_len"]} tokens,
{g["new_tokens"]} new tokens, greedy, no stop token):

| KV cache | tokens/s |
|---|---|
| with (generate.generate) | {g["cache_tokens_per_s"]:,} |
| without (whole sequence per token) | {g["no_cache_tokens_per_s"]:,} |
| speed-up | {g["speedup"]}× |

Greedy tokens identical with and without the cache: {"yes" if g["same_greedy_tokens"] else "**no**"}.

RL step (the real RL-2 stage, `train --stage rl2`, GRPO, {rl["rollouts_per_step"]} rollouts per step, real search through the
environment server; mean of {rl["steps_measured"]} steps after the first; policy: {rl["policy"]}):

| part | time per step |
|---|---|
| generate (rollouts, KV cache) | {share("generate_s")} |
| tools (env server search + grading) | {share("tools_s")} |
| train (GRPO loss, backward, AdamW) | {share("train_s")} |
| whole step | {rl["step_s"]:.2f} s |

Generation {rl["gen_tokens_per_s"]:,.0f} tokens/s, training {rl["train_tokens_per_s"]:,.0f} tokens/s; {rl["tc"]:.2f} tool calls and
{rl["response_len"]:.0f} generated tokens per rollout.
"""
    pattern = re.compile(r"^## bench/rollout\n.*?(?=^## |\Z)", re.S | re.M)
    text = pattern.sub(section + "\n", text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "2")
    main()
