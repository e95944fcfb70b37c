"""`python -m coa_trainer boundary`: the search boundary meter (evaluation/boundary.py) on a checkpoint of a run and a
question set — the run's own split, or a user's file (a verl parquet, FlashRAG/Search-R1 JSONL, *.coa.jsonl; read by
the core's importers like the run config's data section). Writes `<run>/eval/boundary-<stage>-<split>.json` (the
editor's Search Boundary panel reads it) and prints the summary. On the embedded benchmark the ground truth
(evaluation/boundary_truth.py) is computed too unless --no-truth."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from ..base.options import BoundaryOptions
from ..contracts.run_config import RunConfig


def _questions(config: RunConfig, run_dir: Path, opts: BoundaryOptions) -> tuple[Any, list[Any], bool]:
    """(the question source, the questions to measure, whether they are the embedded benchmark's)."""
    from ..base.config import config_dict, validate_config
    from ..base.runlayout import data_dir
    from ..data.benchmark import ensure_benchmark_files
    from ..data.userdata import DataError, UserData

    if opts.questions:
        if opts.split == "rl":
            raise DataError("--questions is measured as its own split: use --split train, dev or test with it")
        # the run's config with its data section's questions replaced (corpus and the rest kept; defaults from the core)
        raw = config_dict(config)
        raw["data"] = {**(raw.get("data") or {}), "questions": {opts.split: str(opts.questions.resolve())}}
        source = UserData(validate_config(raw, "--questions"), data_dir(config, run_dir) / "prepared")
        embedded = False
    elif config.data is not None:
        source, embedded = UserData(config, data_dir(config, run_dir) / "prepared"), False
    else:
        source, embedded = ensure_benchmark_files(config, data_dir(config, run_dir)), True
    qs = source.split(opts.split)
    if not qs:
        raise DataError(f"no {opts.split} questions to measure" + ("" if opts.questions else " in this run's data"))
    return source, qs[: opts.limit] if opts.limit else qs, embedded


def _checkpoint(run_dir: Path, opts: BoundaryOptions) -> tuple[Path, str, int]:
    from ..base.runlayout import final_dir
    from ..model.load import ModelDirError
    from .agent import latest_stage_dir

    if opts.model:
        model_dir, stage = opts.model, "model"
    elif opts.stage:
        model_dir, stage = final_dir(run_dir, opts.stage), opts.stage
        if not (model_dir / "config.json").is_file():
            raise ModelDirError(f"stage {opts.stage} of {run_dir} has no final model ({model_dir})")
    else:
        found = latest_stage_dir(run_dir)
        if found is None:
            raise ModelDirError(f"no finished stage in {run_dir} (train one, or pass --model)")
        stage, model_dir = found
    step = 0
    info = model_dir / "coa_stage.json"
    if info.is_file():
        meta = json.loads(info.read_text())
        stage, step = opts.stage or meta.get("stage", stage), int(meta.get("step", 0))
    return model_dir, stage, step


def boundary_command(opts: BoundaryOptions) -> int:
    from ..base.runstart import RunStart, run_in_directory
    from ..env.client import EnvClient
    from ..env.session import open_env
    from ..model.load import load_for_config, setup_runtime
    from .boundary import Meter, stderr_log
    from ..contracts.boundary_report import BoundaryReport
    from .boundary_report import REPORT_VERSION, format_summary, rows, summarise, write_report
    from .boundary_truth import agreement, truth_rows

    env: EnvClient | None = None

    def body(start: RunStart) -> int:
        nonlocal env
        run_dir, writer, config = start.run_dir, start.writer, start.config
        if opts.samples < 1:
            raise ValueError("--samples must be at least 1")
        model_dir, stage, step = _checkpoint(run_dir, opts)
        rt = setup_runtime(config)
        source, questions, embedded = _questions(config, run_dir, opts)
        env = open_env(opts.env, config, run_dir)
        model, tok = load_for_config(model_dir, rt, config, trainable=False, lora=False)
        model.eval()
        stderr_log(
            f"{stage} ({model_dir}) on {len(questions)} {opts.split} questions, {opts.samples} sample(s) each way"
        )
        t0 = time.time()
        meter = Meter(model, tok, config, rt, env, log=stderr_log)
        outcomes = meter.measure(
            questions, opts.samples, opts.temperature, opts.seed if opts.seed is not None else config.seed
        )
        truth = truth_summary = None
        if embedded and not opts.no_truth:
            t1 = time.time()
            truth = truth_rows(meter, source, questions, outcomes)
            truth_summary = agreement(outcomes, truth)
            stderr_log(
                f"benchmark truth: {sum(len(q.hops) for q in questions)} facts asked closed-book "
                f"({time.time() - t1:.1f} s)"
            )
        report = BoundaryReport(
            version=REPORT_VERSION,
            run=writer.run,
            stage=stage,
            step=step,
            split=opts.split,
            checkpoint=str(model_dir),
            samples=opts.samples,
            temperature=opts.temperature if opts.samples > 1 else 0.0,
            seconds=round(time.time() - t0, 3),
            summary=summarise(outcomes),
            truth=truth_summary,
            rows=rows(questions, outcomes, truth),
        )
        out = opts.out if opts.out else run_dir / "eval" / f"boundary-{stage}-{opts.split}.json"
        write_report(out, report)
        print(format_summary(report))
        stderr_log(f"wrote {out}")
        return 0

    def close() -> None:
        if env is not None:
            env.stop()

    # reads a run's models and writes its report beside its trainers (eval/): no run lock, any run directory's name,
    # and no metric sinks (a report, not a training run)
    return run_in_directory(
        opts.run_dir, "boundary", opts.config, (), body, check_name=False, log_metrics=False, cleanup=close
    )
