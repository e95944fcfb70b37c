"""The run directory's layout and where a stage starts from — shared by every stage, the evaluation and the
pipeline, with no imports of the stage modules (so train, rl, evaluate and stages import this, never each other).

  events.jsonl                       the event stream (all stages append)
  data/                              the embedded benchmark (unless benchmark.data_dir is set)
  data/prepared/                     the user's data as the core's importers normalised it (run config `data`)
  model-init/                        the embedded default before training (an ordinary HF model directory)
  stages/<stage>/checkpoints/*.pt    resumable state: weights, optimiser, scheduler, RNG, data cursor
  stages/<stage>/final/              the stage's result (HF directory; the next stage starts from it)
  stages/<label>/rollouts.coa.jsonl  RL stages: the rollouts of every sample step (label = --label or stage)
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from .schemas import trainable_stages

STAGE_ORDER = trainable_stages()  # src/core/stages.ts


class StageError(RuntimeError):
    def __init__(self, message: str, code: str):
        super().__init__(message)
        self.code = code


def stage_dir(run_dir: Path, stage: str) -> Path:
    return run_dir / "stages" / stage


def final_dir(run_dir: Path, stage: str) -> Path:
    return stage_dir(run_dir, stage) / "final"


def data_dir(config: dict, run_dir: Path) -> Path:
    return Path(config["benchmark"]["data_dir"]) if config["benchmark"]["data_dir"] else run_dir / "data"


def corpus_path(config: dict, run_dir: Path) -> str:
    """The corpus the environment server searches: data.corpus, else env.corpus, else the benchmark's."""
    if config.get("data") and config["data"].get("corpus"):
        return config["data"]["corpus"]
    return config["env"]["corpus"] or str(data_dir(config, run_dir) / "corpus.jsonl")


def vocabulary_texts(bench: Any, config: dict) -> list[str]:
    from .benchmark import join_segments
    from .dialects import tags

    t = tags("coa")
    texts = bench.pretrain_lines() + [d["contents"] for d in bench.corpus]
    texts += [q.question for q in bench.questions] + [join_segments(bench.oracle(q, t)) for q in bench.questions]
    return texts + [config["prompt_template"], "answer :"]


def resolve_init(config: dict, run_dir: Path, stage: str, bench: Any, is_main: bool) -> Path:
    """Where a stage starts: init_from, else the latest earlier stage of this run, else model.path / the embedded
    default (pretrain, or any stage when model.path is a real model)."""
    from .model import ModelDirError, check_model_dir, write_embedded_model

    init_from = config["stages"][stage]["init_from"]
    if init_from:
        return check_model_dir(init_from)
    for prev in reversed(STAGE_ORDER[: STAGE_ORDER.index(stage)]):
        if (final_dir(run_dir, prev) / "config.json").is_file():
            return final_dir(run_dir, prev)
    if config["model"]["path"]:
        return check_model_dir(config["model"]["path"])
    if stage != "pretrain":
        raise ModelDirError(f"stage {stage} needs a model: run the earlier stages into {run_dir}, or set "
                            f"model.path or stages.{stage}.init_from")
    if bench is None:
        raise ModelDirError("pretrain builds the embedded default from the embedded benchmark; with your own data "
                            "set model.path and start at sft1")
    target = run_dir / "model-init"
    if is_main:
        write_embedded_model(config, vocabulary_texts(bench, config), target, config["seed"])
    return target


def lr_lambda(warmup: int, total: int):
    def f(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        progress = (step - warmup) / max(1, total - warmup)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))
    return f
