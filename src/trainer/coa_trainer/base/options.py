"""What each command of `python -m coa_trainer` was asked to do, typed: the command line is parsed into one of these
at the top floor (cli.py) and the commands below it read these, never argparse's namespace. One frozen class per
command; fields are named as the command line's options are (`--run-dir` → `run_dir`)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Union

EvalMode = Literal["agent", "no-tool", "plain"]


@dataclass(frozen=True)
class EnvTarget:
    """Which environment server a command uses: a running one (`url`, with the token from COA_ENV_TOKEN — never from
    a command line, which every local user reads with `ps`), or none given (`url` None: the command starts its own)."""

    url: str | None = None
    token: str = ""

    @staticmethod
    def given(url: str | None) -> EnvTarget:
        """`--env-url` as given, with the token the environment holds."""
        return EnvTarget(url or None, os.environ.get("COA_ENV_TOKEN", "") if url else "")


@dataclass(frozen=True)
class TrainOptions:
    stage: str
    config: Path
    run_dir: Path
    resume: bool = False
    max_steps: int | None = None
    label: str | None = None
    env: EnvTarget = EnvTarget()
    overrides: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The name this stage run's events and directory carry (rl2 --label rl2-otc: rl2-otc)."""
        return self.label or self.stage


@dataclass(frozen=True)
class EvalOptions:
    config: Path
    run_dir: Path
    model: Path | None = None
    split: tuple[str, ...] | None = None
    mode: EvalMode = "agent"
    limit: int | None = None
    env: EnvTarget = EnvTarget()
    overrides: tuple[str, ...] = ()


@dataclass(frozen=True)
class BoundaryOptions:
    config: Path
    run_dir: Path
    stage: str | None = None
    model: Path | None = None
    split: str = "test"
    questions: Path | None = None
    limit: int | None = None
    samples: int = 1
    temperature: float = 1.0
    seed: int | None = None
    no_truth: bool = False
    out: Path | None = None
    env: EnvTarget = EnvTarget()


@dataclass(frozen=True)
class ExportOnnxOptions:
    checkpoint: Path
    output: Path
    opset: int = 17
    dialect: str | None = None
    prompt_template: str = "question : {question}\n"


@dataclass(frozen=True)
class PipelineOptions:
    config: Path
    run_dir: Path
    stages: str | None = None
    resume: bool = False
    nproc_per_node: int = 1
    env: EnvTarget = EnvTarget()
    split: str = "test"
    seeds: int = 1
    overrides: tuple[str, ...] = ()


@dataclass(frozen=True)
class CollectOptions:
    config: Path
    run_dir: Path
    resume: bool = False
    teacher: str | None = None
    limit: int | None = None
    samples: int | None = None
    env: EnvTarget = EnvTarget()
    overrides: tuple[str, ...] = ()


@dataclass(frozen=True)
class ConvertOptions:
    paths: tuple[Path, ...]


@dataclass(frozen=True)
class DataOptions:
    out: Path
    config: Path | None = None
    seed: int | None = None
    overrides: tuple[str, ...] = ()


CommandOptions = Union[
    TrainOptions,
    EvalOptions,
    BoundaryOptions,
    ExportOnnxOptions,
    PipelineOptions,
    CollectOptions,
    ConvertOptions,
    DataOptions,
]
