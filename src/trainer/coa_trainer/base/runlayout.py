"""The run directory's layout — shared by every stage, the evaluation and the pipeline (where a stage starts from is
stages/setup.py's `resolve_init`).

  events.jsonl                       the event stream (all stages append)
  data/                              the embedded benchmark (unless benchmark.data_dir is set)
  data/prepared/                     the user's data as the core's importers normalised it (run config `data`)
  model-init/                        the embedded default before training (an ordinary HF model directory)
  stages/<stage>/checkpoints/*.pt    resumable state: weights, optimiser, scheduler, RNG, data cursor
  stages/<stage>/final/              the stage's result (HF directory; the next stage starts from it)
  stages/<label>/rollouts.coa.jsonl  RL stages: the rollouts of every sample step (label = --label or stage)
"""

from __future__ import annotations

from pathlib import Path

from ..contracts.schemas import trainable_stages
from ..contracts.run_config import RunConfig

STAGE_ORDER = trainable_stages()  # src/core/stages.ts


def stage_dir(run_dir: Path, stage: str) -> Path:
    return run_dir / "stages" / stage


def final_dir(run_dir: Path, stage: str) -> Path:
    return stage_dir(run_dir, stage) / "final"


def data_dir(config: RunConfig, run_dir: Path) -> Path:
    return Path(config.benchmark.data_dir) if config.benchmark.data_dir else run_dir / "data"


def corpus_path(config: RunConfig, run_dir: Path) -> str:
    """The corpus the environment server searches: data.corpus, else env.corpus, else the benchmark's."""
    if config.data and config.data.corpus:
        return config.data.corpus
    return config.env.corpus or str(data_dir(config, run_dir) / "corpus.jsonl")
