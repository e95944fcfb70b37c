"""bench/checkpoint: saving and resuming a stage checkpoint, the pickle format the trainer used to write (torch.save,
read back with torch.load(weights_only=False)) against the current one (model/checkpoint.py: safetensors + JSON, a
CRC-32 per tensor checked on every read, the shapes checked against the model before loading).

    .venv/bin/python bench/checkpoint/run.py [--repeats 5] [--threads 2] [--write]

Two models: an RL-2 checkpoint of the embedded default (the run config's defaults: its weights, AdamW state after an
update, the schedule, the RNGs, the OTC-GRPO minimum of every RL question), and a Qwen2-shaped model of ~12M
parameters (hidden 256, 4 layers, vocabulary 32,000). Each figure is the median of --repeats saves (fsynced) and
loads (into a fresh model and optimiser), from the page cache. --write replaces the `## bench/checkpoint` section of
bench/RESULTS.md."""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src" / "trainer"))

from coa_trainer.base import quiet  # noqa: E402,F401
import numpy as np  # noqa: E402
import torch  # noqa: E402

from coa_trainer.model.checkpoint import load_checkpoint, save_checkpoint  # noqa: E402
from coa_trainer.model.statefile import crc  # noqa: E402
from safetensors import safe_open  # noqa: E402
from coa_trainer.model.load import trainable_state, unwrap  # noqa: E402
from coa_trainer.model.optim import lr_lambda, make_optimizer  # noqa: E402


def embedded(work: Path):
    from coa_trainer.base.config import validate_config
    from coa_trainer.data.benchmark import ensure_benchmark_files, vocabulary_texts
    from coa_trainer.model.load import Runtime, load_for_config, write_embedded_model

    config = validate_config({})
    bench = ensure_benchmark_files(config, work / "data")  # its observations come from the environment server
    write_embedded_model(config, vocabulary_texts(bench, config), work / "embedded", config.seed)
    otc = {"version": 1, "min_tool_calls": {q.question: random.randint(0, 3) for q in bench.split("rl")}}
    extra = {"otc_state": otc, "alerts": {}, "rollouts_offset": 1 << 20, "events_offset": 1 << 16}
    return (
        "embedded default, RL-2",
        lambda: load_for_config(work / "embedded", Runtime(torch.device("cpu"), None), config)[0],
        extra,
    )


def qwen2(_work: Path):
    from transformers import AutoModelForCausalLM, Qwen2Config

    cfg = Qwen2Config(
        vocab_size=32000,
        hidden_size=256,
        intermediate_size=1024,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=2,
        tie_word_embeddings=True,
        max_position_embeddings=1024,
    )

    def make():
        torch.manual_seed(0)
        return AutoModelForCausalLM.from_config(cfg)

    return "Qwen2-shaped, 4 layers × 256", make, {"events_offset": 1 << 16}


def trained(make):
    model = make()
    opt = make_optimizer([p for p in model.parameters() if p.requires_grad], 1e-4, 0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda(2, 100))
    x = torch.randint(0, unwrap(model).config.vocab_size, (2, 16))
    model(input_ids=x, labels=x).loss.backward()
    opt.step()
    sched.step()
    opt.zero_grad()
    return model, opt, sched


def old_save(directory: Path, step: int, model, opt, sched, extra: dict) -> Path:
    """What the trainer wrote before: one torch.save pickle, fsynced and renamed."""
    path, tmp = directory / f"step-{step:06d}.pt", directory / f".step-{step:06d}.pt.tmp"
    state = {
        "version": 1,
        "stage": "rl2",
        "step": step,
        "cursor": step,
        "model": trainable_state(model),
        "optimizer": opt.state_dict(),
        "scheduler": sched.state_dict(),
        "rng": {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()},
        "extra": extra,
        "master": None,
    }
    with open(tmp, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return path


def old_load(path: Path, model, opt, sched) -> None:
    state = torch.load(path, map_location="cpu", weights_only=False)
    unwrap(model).load_state_dict(state["model"], strict=False)
    opt.load_state_dict(state["optimizer"])
    sched.load_state_dict(state["scheduler"])


def timed(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def measure(name: str, make, extra: dict, work: Path, repeats: int) -> dict:
    model, opt, sched = trained(make)
    fresh = trained(make)
    d = work / re.sub(r"\W+", "-", name)
    d.mkdir()
    n = sum(p.numel() for p in model.parameters())
    old = timed(lambda: old_save(d, 1, model, opt, sched, extra), repeats)
    new = timed(lambda: save_checkpoint(d, 1, 1, model, opt, sched, "rl2", extra), repeats)
    old_path, new_path = d / "step-000001.pt", d / "step-000001.safetensors"
    with safe_open(str(new_path), framework="pt") as f:
        tensors = [f.get_tensor(k) for k in f.keys()]
    return {
        "crc": timed(lambda: [crc(t) for t in tensors], repeats),
        "name": name,
        "params": n,
        "old_mb": old_path.stat().st_size / 1e6,
        "new_mb": new_path.stat().st_size / 1e6,
        "old_save": old,
        "new_save": new,
        "old_load": timed(lambda: old_load(old_path, *fresh), repeats),
        "new_load": timed(lambda: load_checkpoint(new_path, *fresh), repeats),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for build in (embedded, qwen2):
            name, make, extra = build(work)
            rows.append(measure(name, make, extra, work, args.repeats))
            print(rows[-1], flush=True)
    if args.write:
        write_section(rows, args)


def write_section(rows: list[dict], args: argparse.Namespace) -> None:
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    table = "\n".join(
        f"| {r['name']} | {r['params']:,} | {r['old_mb']:.2f} → {r['new_mb']:.2f} | "
        f"{r['old_save'] * 1e3:.1f} → {r['new_save'] * 1e3:.1f} | {r['old_load'] * 1e3:.1f} → {r['new_load'] * 1e3:.1f} | "
        f"{r['crc'] * 1e3:.1f} |"
        for r in rows
    )
    section = f"""## bench/checkpoint

_Last run: {time.strftime("%Y-%m-%d")}_

Command: `.venv/bin/python bench/checkpoint/run.py --repeats {args.repeats} --threads {args.threads} --write`
Machine: {os.cpu_count()} cores (shared), torch {torch.__version__}; load average at the end {load}.

A stage checkpoint saved (fsynced) and resumed (read, checked, loaded into a fresh model and AdamW), median of
{args.repeats}: before = `torch.save` / `torch.load(weights_only=False)` (a pickle: reading one could run code);
after = safetensors + JSON (`model/checkpoint.py`: no pickle, a CRC-32 of every tensor checked on each read, the
shapes checked against the model before anything is loaded).

| checkpoint | parameters | file MB before → after | save ms before → after | resume ms before → after | CRC-32 of every tensor, ms |
|---|---|---|---|---|---|
{table}

The checksums are computed once when saving and once when resuming (the last column, measured alone: most of what a
resume of the larger model costs over the pickle). Wall-clock figures on a shared machine also count time other
processes held the cores. GPU: unmeasured.
"""
    path = ROOT / "bench" / "RESULTS.md"
    text = path.read_text()
    pattern = re.compile(r"^## bench/checkpoint\n.*?(?=^## |\Z)", re.S | re.M)
    text = pattern.sub(section + "\n", text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "2")
    main()
