"""The multi-turn RL step of bench/gpu: trajectories that call the search tool twice, on a model of the benchmark's
shape (Qwen2.5's 151,936-entry vocabulary, random init).

- Tokenizer: the embedded default's word-level tokenizer (data/tokenizer.py: every dialect tag one token) over the
  embedded benchmark's words, filled up with letter-only filler words to the model's vocabulary size, so prompts and
  observations tokenise as the trainer's own and every id the model can write decodes.
- Observations: the embedded corpus's search results as the environment server wrote them for the benchmark's oracle
  queries (`observations.json` of a data directory, made by `coa_trainer data --out DIR` where the server runs —
  the device machine has no node — and carried there); each tool call returns the one its query hashes to.
- Turns: a random-init model never writes a closing tag on its own, so the action's closing tag gets a logit bias
  (the engine's `logit_bias`, as in OpenAI's API) that ends a turn after ~`turn_tokens` sampled tokens on average;
  with `max_turns` 2 a trajectory calls the tool twice and its third turn ends at its next closing tag. The step
  reports what happened (calls per trajectory, turn lengths), not what was aimed at."""

from __future__ import annotations

import math
import tempfile
import zlib
from pathlib import Path
from typing import Any

import torch


def bench_tokenizer(vocab: int, texts: list[str]) -> Any:
    """A transformers tokenizer of exactly `vocab` ids: the embedded tokenizer's words plus filler words."""
    from transformers import AutoTokenizer

    from coa_trainer.data.tokenizer import build_tokenizer, save_hf_tokenizer

    n = build_tokenizer(texts).get_vocab_size()

    def filler(i: int) -> str:
        s = ""
        for _ in range(4):
            s, i = chr(ord("a") + i % 26) + s, i // 26
        return "qz" + s  # letter-only (the pre-tokenizer splits digits) and no benchmark word starts with "qz"

    raw = build_tokenizer(texts + [" ".join(filler(i) for i in range(vocab - n))])
    with tempfile.TemporaryDirectory() as d:
        save_hf_tokenizer(raw, Path(d))
        tok = AutoTokenizer.from_pretrained(d)
    if len(tok) != vocab:
        raise RuntimeError(f"bench tokenizer has {len(tok)} ids, the model {vocab}")
    return tok


def load_benchmark(data_dir: Path) -> tuple[Any, Any]:
    """(config, benchmark with its oracle observations) from `data_dir` (cached observations.json; the environment
    server is started only when the cache is missing)."""
    from coa_trainer.base.config import validate_config
    from coa_trainer.data.benchmark import ensure_benchmark_files

    config = validate_config({})
    return config, ensure_benchmark_files(config, data_dir)


def bias_for(turn_tokens: int, vocab: int) -> float:
    """The logit bias that makes one token about 1/turn_tokens likely under a near-uniform distribution."""
    return math.log(vocab / max(1, turn_tokens - 1))


def tool_from(observations: list[str]):
    def tool(queries: list[str]) -> list[str]:
        return [observations[zlib.crc32(q.encode()) % len(observations)] for q in queries]

    return tool


def multi_turn(
    lm: Any,
    tok: Any,
    prompts: list[list[int]],
    observations: list[str],
    dev: torch.device,
    *,
    turn_tokens: int,
    max_new_tokens: int,
    max_obs_tokens: int,
    seed: int = 3,
) -> tuple[list, dict, Any]:
    """(trajectories, timings, engine) of one sampled multi-turn rollout on the engine (T = 1)."""
    from coa_trainer.data.dialects import tags
    from coa_trainer.rollout.agentio import AgentIO
    from coa_trainer.rollout.continuous import Continuous, Job, Limits
    from coa_trainer.rollout.generate import engine_for, seed_base
    from coa_trainer.rollout.sampling import trajectory_seed
    from coa_trainer.rollout.trajectory import RlTrajectory

    t = tags("coa")
    io = AgentIO.make(tok, t)
    eng = engine_for(lm, dev, None)
    stops = eng.stop_table(tok, [io.turn_stops(), io.obs_stops()])
    base = seed_base(torch.Generator().manual_seed(seed), 1.0)
    jobs = [Job(i, RlTrajectory(list(p)), seed=trajectory_seed(base, i)) for i, p in enumerate(prompts)]
    limits = Limits(
        max_turns=2, max_new_tokens=max_new_tokens, max_obs_tokens=max_obs_tokens, max_len=1 << 30, simulate=False
    )
    timings: dict[str, float] = {}
    bias = {io.id_of(t.action_close): bias_for(turn_tokens, len(tok))}
    with torch.no_grad():
        Continuous(
            eng,
            io,
            jobs,
            limits,
            tool_from(observations),
            1.0,
            1.0,
            tok.pad_token_id,
            stops,
            timings=timings,
            logit_bias=bias,
        ).run()
    return [j.tr for j in jobs], timings, eng
