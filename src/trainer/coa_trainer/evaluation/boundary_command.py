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

from ..base.errors import report_failure
from ..base.options import BoundaryOptions


def _questions(config: Any, run_dir: Path, args: Any) -> tuple[Any, list[Any], bool]:
    """(the question source, the questions to measure, whether they are the embedded benchmark's)."""
    from ..base.config import config_dict, validate_config
    from ..base.runlayout import data_dir
    from ..data.benchmark import ensure_benchmark_files
    from ..data.userdata import DataError, UserData

    if args.questions:
        if args.split == "rl":
            raise DataError("--questions is measured as its own split: use --split train, dev or test with it")
        # the run's config with its data section's questions replaced (corpus and the rest kept; defaults from the core)
        raw = config_dict(config)
        raw["data"] = {**(raw.get("data") or {}), "questions": {args.split: str(Path(args.questions).resolve())}}
        source = UserData(validate_config(raw, "--questions"), data_dir(config, run_dir) / "prepared")
        embedded = False
    elif config.data is not None:
        source, embedded = UserData(config, data_dir(config, run_dir) / "prepared"), False
    else:
        source, embedded = ensure_benchmark_files(config, data_dir(config, run_dir)), True
    qs = source.split(args.split)
    if not qs:
        raise DataError(f"no {args.split} questions to measure" + ("" if args.questions else " in this run's data"))
    return source, qs[: args.limit] if args.limit else qs, embedded


def _checkpoint(run_dir: Path, args: Any) -> tuple[Path, str, int]:
    from ..base.runlayout import final_dir
    from ..model.load import ModelDirError
    from .agent import latest_stage_dir

    if args.model:
        model_dir, stage = Path(args.model), "model"
    elif args.stage:
        model_dir, stage = final_dir(run_dir, args.stage), args.stage
        if not (model_dir / "config.json").is_file():
            raise ModelDirError(f"stage {args.stage} of {run_dir} has no final model ({model_dir})")
    else:
        found = latest_stage_dir(run_dir)
        if found is None:
            raise ModelDirError(f"no finished stage in {run_dir} (train one, or pass --model)")
        stage, model_dir = found
    step = 0
    info = model_dir / "coa_stage.json"
    if info.is_file():
        meta = json.loads(info.read_text())
        stage, step = args.stage or meta.get("stage", stage), int(meta.get("step", 0))
    return model_dir, stage, step


def boundary_command(args: BoundaryOptions) -> int:
    from ..base.config import load_config
    from ..base.events import EventWriter
    from ..env.session import open_env
    from ..model.load import load_for_config, setup_runtime
    from .boundary import Meter, stderr_log
    from .boundary_report import REPORT_VERSION, format_summary, rows, summarise, write_report
    from .boundary_truth import agreement, truth_rows

    run_dir = Path(args.run_dir)
    writer = EventWriter(run_dir)
    env = None
    try:
        if args.samples < 1:
            raise ValueError("--samples must be at least 1")
        config = load_config(args.config)
        model_dir, stage, step = _checkpoint(run_dir, args)
        rt = setup_runtime(config)
        source, questions, embedded = _questions(config, run_dir, args)
        env = open_env(args.env, config, run_dir)
        model, tok = load_for_config(model_dir, rt, config, trainable=False, lora=False)
        model.eval()
        stderr_log(f"{stage} ({model_dir}) on {len(questions)} {args.split} questions, {args.samples} sample(s) each way")
        t0 = time.time()
        meter = Meter(model, tok, config, rt, env, log=stderr_log)
        outcomes = meter.measure(questions, args.samples, args.temperature,
                                 args.seed if args.seed is not None else config.seed)
        truth = truth_summary = None
        if embedded and not args.no_truth:
            t1 = time.time()
            truth = truth_rows(meter, source, questions, outcomes)
            truth_summary = agreement(outcomes, truth)
            stderr_log(f"benchmark truth: {sum(len(q.hops) for q in questions)} facts asked closed-book "
                       f"({time.time() - t1:.1f} s)")
        report = {
            "version": REPORT_VERSION, "run": writer.run, "stage": stage, "step": step, "split": args.split,
            "checkpoint": str(model_dir), "samples": args.samples,
            "temperature": args.temperature if args.samples > 1 else 0.0, "seconds": round(time.time() - t0, 3),
            "summary": summarise(outcomes), "truth": truth_summary, "rows": rows(questions, outcomes, truth),
        }
        out = Path(args.out) if args.out else run_dir / "eval" / f"boundary-{stage}-{args.split}.json"
        write_report(out, report)
        print(format_summary(report))
        stderr_log(f"wrote {out}")
        return 0
    except Exception as e:  # noqa: BLE001 — one error event and the code's exit status
        return report_failure(writer, "boundary", e)
    finally:
        if env is not None:
            env.stop()
        writer.close()
