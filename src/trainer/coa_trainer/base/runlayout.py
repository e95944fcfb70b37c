"""The run directory's layout — shared by every stage, the evaluation and the pipeline (where a stage starts from is
stages/setup.py's `resolve_init`).

  events.jsonl                       the event stream (all stages append)
  data/                              the embedded benchmark (unless benchmark.data_dir is set)
  data/prepared/                     the user's data as the core's importers normalised it (run config `data`)
  model-init/                        the embedded default before training (an ordinary HF model directory)
  stages/<stage>/checkpoints/        resumable state: step-NNNNNN.safetensors (weights, optimiser, scheduler, RNG, data
                                     cursor; no pickle: model/checkpoint.py), step-NNNNNN.sharded/ under FSDP2
  stages/<stage>/final/              the stage's result (HF directory; the next stage starts from it)
  stages/<label>/rollouts.coa.jsonl  RL stages: the rollouts of every sample step (label = --label or stage)
  stages/<label>/flagged.coa.jsonl   RL stages: what the reward-hacking scanners flagged, every step
  stages/<label>/*.index.jsonl       each of those two files' line index: step → lines and bytes (base/line_index.py)
"""

from __future__ import annotations

from pathlib import Path

from ..contracts.schemas import trainable_stages
from .events import event_head
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


def finished_step(run_dir: Path, label: str) -> int | None:
    """The step at which `label` finished, when that is how its latest attempt ended (its last `run_started` was
    followed by `stage_finished` ok) and its final/ is still there; else None. events.jsonl is the record: a stage
    killed during its final evaluation has final/ but never finished, and one trained again from the start has a
    newer run_started."""
    events = run_dir / "events.jsonl"
    if not (final_dir(run_dir, label) / "coa_stage.json").is_file() or not events.is_file():
        return None
    step = None
    with open(events, "rb") as f:
        for line in f:
            if b'"run_started"' not in line and b'"stage_finished"' not in line:  # most lines: no JSON parse
                continue
            head = event_head(line)
            if head is None or head.stage != label:
                continue
            if head.type == "run_started":
                step = None
            elif head.type == "stage_finished" and head.status == "ok" and head.step is not None:
                step = head.step
    return step
