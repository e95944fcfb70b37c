"""Command line: `train`, `eval`, `boundary`, `export-onnx`, `pipeline`, `data`. Heavy imports (torch) happen inside
the commands so --help is fast."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from .base import options
from .base.options import CommandOptions
from .contracts.schemas import stage_rows
from .contracts.schemas import trainable_stages


def name_arg(value: str) -> str:
    """argparse type for --label: the one name rule of src/core/names.ts (schemas/names.json) — a plain path segment,
    so stages/<label>/ can never leave the run directory."""
    from .base.names import name_error

    err = name_error(value)
    if err:
        raise argparse.ArgumentTypeError(err)
    return value


TOKEN_FLAG_HELP = "refused: set COA_ENV_TOKEN instead (a command line is visible to every local user)"


def token_from_environment(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """The environment server's token comes from COA_ENV_TOKEN, never from the command line: any local user reads
    every process's arguments with `ps`, and the token lets them rewrite a run's OTC state."""
    if not hasattr(args, "env_token"):
        return
    if args.env_token is not None:
        parser.error("--env-token would show the token to every local user (ps); set COA_ENV_TOKEN instead")
    args.env_token = os.environ.get("COA_ENV_TOKEN")


OVERRIDES_HELP = (
    "run config overrides, verl/Hydra-style: stages.rl2.lr=1e-5 eval.splits=[dev,test] ~stages.rl2.lr (remove); "
    "typed and checked by the run config schema"
)
# Commands that read a run config, so take `key=value` overrides of it (base/overrides.py).
OVERRIDE_COMMANDS = ("train", "eval", "pipeline", "collect", "data")


def add_overrides(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("overrides", nargs="*", metavar="key=value", help=OVERRIDES_HELP)


def parse_command_line(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """argparse, with `key=value` overrides wherever they stand among the options (a positional list would take
    only those before the first option)."""
    from .base.overrides import is_override

    args, extra = parser.parse_known_args(argv)
    takes = args.command in OVERRIDE_COMMANDS
    given = [*(getattr(args, "overrides", None) or []), *extra]
    bad = [a for a in given if not (takes and is_override(a))]
    if bad:
        parser.error("unrecognized arguments: " + " ".join(bad) + (" (overrides are key=value)" if takes else ""))
    args.overrides = given if takes else []
    return args


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m coa_trainer",
        description="CoA Studio trainer (AutoCoA recipe): pretraining, SFT and RL stages, the whole pipeline, evaluation, "
        "ONNX export, embedded benchmark.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    train = sub.add_parser("train", help="run one training stage")
    train.add_argument("--stage", required=True, choices=trainable_stages())
    train.add_argument("--config", required=True, help="run config JSON (schemas/run-config.schema.json)")
    train.add_argument("--run-dir", required=True, help="run directory, e.g. runs/<id>")
    train.add_argument("--resume", action="store_true", help="continue from the stage's latest checkpoint")
    train.add_argument("--max-steps", type=int, default=None, help="override the stage's step count")
    train.add_argument(
        "--label",
        default=None,
        type=name_arg,
        help="name of this stage run: stages/<label>/ and the events' stage "
        "(default: the stage name; e.g. --stage rl2 --label rl2-otc)",
    )
    train.add_argument("--env-url", default=None, help="RL stages: use a running env server instead of starting one")
    train.add_argument("--env-token", default=None, help=TOKEN_FLAG_HELP)
    add_overrides(train)

    ev = sub.add_parser("eval", help="greedy evaluation (agent mode uses the environment server)")
    ev.add_argument("--config", required=True)
    ev.add_argument("--run-dir", required=True)
    ev.add_argument("--model", default=None, help="model dir (default: the latest finished stage of the run)")
    ev.add_argument("--split", action="append", choices=("train", "dev", "test"), help="repeatable (default: dev)")
    ev.add_argument(
        "--mode",
        choices=("agent", "no-tool", "plain"),
        default="agent",
        help="agent: tool loop against the env server; no-tool: tags but searches refused; plain: QA prompt",
    )
    ev.add_argument("--limit", type=int, default=None, help="questions per split")
    ev.add_argument("--env-url", default=None, help="use a running env server instead of starting one")
    ev.add_argument("--env-token", default=None, help=TOKEN_FLAG_HELP)
    add_overrides(ev)

    bnd = sub.add_parser(
        "boundary",
        help="search boundary meter: over-/under-search and the fewest tool calls per "
        "question, from the checkpoint's own rollouts with search refused and allowed",
    )
    bnd.add_argument(
        "--config", required=True, help="run config JSON (the stage's, e.g. runs/<id>/pipeline/rl2.run.json)"
    )
    bnd.add_argument("--run-dir", required=True)
    bnd.add_argument(
        "--stage",
        default=None,
        help="a finished stage of the run (its final model), e.g. rl2 or rl2-otc (default: the latest finished stage)",
    )
    bnd.add_argument("--model", default=None, help="a model directory instead of a stage of the run")
    bnd.add_argument("--split", choices=("train", "rl", "dev", "test"), default="test")
    bnd.add_argument(
        "--questions",
        default=None,
        help="a question file to measure instead of the run's split (verl "
        "parquet, FlashRAG/Search-R1 JSONL or *.coa.jsonl with golden answers), searched in the run's corpus",
    )
    bnd.add_argument("--limit", type=int, default=None, help="questions at most (the first N)")
    bnd.add_argument(
        "--samples",
        type=int,
        default=1,
        help="1: greedy (default); k > 1: k samples each way at --temperature, classes by majority",
    )
    bnd.add_argument("--temperature", type=float, default=1.0)
    bnd.add_argument("--seed", type=int, default=None, help="sampling seed (default: the run's seed)")
    bnd.add_argument("--no-truth", action="store_true", help="skip the embedded benchmark's fact-by-fact ground truth")
    bnd.add_argument(
        "-o", "--out", default=None, help="report path (default: <run>/eval/boundary-<stage>-<split>.json)"
    )
    bnd.add_argument("--env-url", default=None, help="use a running env server instead of starting one")
    bnd.add_argument("--env-token", default=None, help=TOKEN_FLAG_HELP)

    onnx = sub.add_parser("export-onnx", help="export an HF model dir to ONNX with KV cache, for the editor's replay")
    onnx.add_argument("--checkpoint", required=True, help="HF model directory, e.g. runs/<id>/stages/<stage>/final")
    onnx.add_argument("-o", "--output", required=True, help="model.onnx path (tokenizer + coa_model.json beside it)")
    onnx.add_argument("--opset", type=int, default=17)
    onnx.add_argument("--dialect", default=None, help="trajectory dialect (default: coa_stage.json's, else coa)")
    onnx.add_argument(
        "--prompt-template",
        default="question : {question}\n",
        help="the run config's prompt_template, stored for the replay engine",
    )

    pipe = sub.add_parser("pipeline", help="pretrain → SFT-1/2/3 → RL-1 → RL-2 (+ RL-2 OTC-GRPO) → results table")
    pipe.add_argument("--config", required=True)
    pipe.add_argument("--run-dir", required=True)
    steps = [s.id for s in stage_rows()] + ["results"]
    pipe.add_argument("--stages", default=None, help=f"comma list of {','.join(steps)} (default: all but collect)")
    pipe.add_argument("--resume", action="store_true", help="skip finished stages, resume the interrupted one")
    pipe.add_argument("--nproc-per-node", type=int, default=1, help="run each stage as N DDP processes (torchrun)")
    pipe.add_argument("--env-url", default=None, help="use a running env server instead of starting one")
    pipe.add_argument("--env-token", default=None, help=TOKEN_FLAG_HELP)
    pipe.add_argument(
        "--split",
        choices=("dev", "test"),
        default="test",
        help="split of the results table: test (default; what is reported) or dev (choose settings)",
    )
    pipe.add_argument(
        "--seeds",
        type=int,
        default=1,
        help="N > 1: the whole pipeline for seeds S … S+N-1 (S: the "
        "config's seed), each in <run-dir>/seed-<s>/, then the table as mean ± sd and per seed",
    )
    add_overrides(pipe)

    col = sub.add_parser("collect", help="SFT data from a teacher (AutoCoA): sample, grade, select, pair")
    col.add_argument(
        "--config", required=True, help="run config; its `collect` section (schemas/run-config.schema.json)"
    )
    col.add_argument("--run-dir", required=True, help="run directory; the collection goes to stages/collect/")
    col.add_argument("--resume", action="store_true", help="continue the collection in this run directory")
    col.add_argument(
        "--teacher", default=None, help="model directory or OpenAI-compatible URL (overrides collect.teacher)"
    )
    col.add_argument("--limit", type=int, default=None, help="questions at most (overrides collect.limit)")
    col.add_argument("--samples", type=int, default=None, help="samples per question and mode (collect.samples)")
    col.add_argument("--env-url", default=None, help="use a running env server instead of starting one")
    col.add_argument("--env-token", default=None, help=TOKEN_FLAG_HELP)
    add_overrides(col)

    conv = sub.add_parser(
        "convert-checkpoint",
        help="rewrite older step-NNNNNN.pt checkpoints (pickles) in the current format, reading them as data only",
    )
    conv.add_argument("paths", nargs="+", help="step-NNNNNN.pt files, or checkpoint directories (each .pt in them)")

    data = sub.add_parser("data", help="write the embedded benchmark (knowledge base, splits, corpus, oracle)")
    data.add_argument("--config", default=None)
    data.add_argument("--out", required=True)
    data.add_argument("--seed", type=int, default=None)
    add_overrides(data)
    return parser


def parse_command(argv: list[str] | None, parser: argparse.ArgumentParser | None = None) -> CommandOptions:
    """The command line as the typed options of its command (base/options.py): what every command below reads."""
    parser = parser or build_parser()
    args = parse_command_line(parser, argv)
    token_from_environment(parser, args)
    return command_options(args)


def command_options(args: argparse.Namespace) -> CommandOptions:
    """argparse's namespace → the command's options; the only place below the parser that reads the namespace."""
    from pathlib import Path

    from .base import options as o

    def path(value: str | None) -> Path | None:
        return Path(value) if value is not None else None

    over = tuple(args.overrides)
    env = o.EnvTarget(args.env_url, args.env_token or "") if getattr(args, "env_url", None) else o.EnvTarget()
    c = args.command
    if c == "train":
        return o.TrainOptions(
            args.stage, Path(args.config), Path(args.run_dir), args.resume, args.max_steps, args.label, env, over
        )
    if c == "eval":
        return o.EvalOptions(
            Path(args.config),
            Path(args.run_dir),
            path(args.model),
            tuple(args.split) if args.split else None,
            args.mode,
            args.limit,
            env,
            over,
        )
    if c == "boundary":
        return o.BoundaryOptions(
            Path(args.config),
            Path(args.run_dir),
            args.stage,
            path(args.model),
            args.split,
            path(args.questions),
            args.limit,
            args.samples,
            args.temperature,
            args.seed,
            args.no_truth,
            path(args.out),
            env,
        )
    if c == "export-onnx":
        return o.ExportOnnxOptions(
            Path(args.checkpoint), Path(args.output), args.opset, args.dialect, args.prompt_template
        )
    if c == "pipeline":
        return o.PipelineOptions(
            Path(args.config),
            Path(args.run_dir),
            args.stages,
            args.resume,
            args.nproc_per_node,
            env,
            args.split,
            args.seeds,
            over,
        )
    if c == "collect":
        return o.CollectOptions(
            Path(args.config), Path(args.run_dir), args.resume, args.teacher, args.limit, args.samples, env, over
        )
    if c == "convert-checkpoint":
        return o.ConvertOptions(tuple(Path(p) for p in args.paths))
    if c == "data":
        return o.DataOptions(Path(args.out), path(args.config), args.seed, over)
    raise AssertionError(f"command {c} has no options class")  # build_parser and this function list the same commands


def main(argv: list[str] | None = None, cancelled: bool = False) -> None:
    """`cancelled`: SIGTERM came while __main__ was importing this module."""
    import signal

    from .base.lifecycle import STOP_SIGNALS, StartupCancelled

    # held while parsing (a stop signal then arrives inside the try below, where the run directory is known)
    signal.pthread_sigmask(signal.SIG_BLOCK, set(STOP_SIGNALS))
    options = parse_command(argv)
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, set(STOP_SIGNALS))
        if cancelled:
            raise StartupCancelled("SIGTERM")
        sys.exit(run_command(options))
    except StartupCancelled:  # SIGTERM before the command took over signals (lifecycle.cancel_during_startup)
        sys.exit(cancelled_at_startup(options))


def cancelled_at_startup(options: CommandOptions) -> int:
    """A stage or pipeline stopped while starting: its `stage_finished` (cancelled) still comes, under the run lock
    the command itself takes (base/runstart.py), exit 130."""
    from .base.lifecycle import startup_step
    from .base.options import PipelineOptions, TrainOptions
    from .base.runstart import cancelled_at_startup as cancelled

    if isinstance(options, TrainOptions):
        step = startup_step(options.run_dir, options.name, options.resume)
        return cancelled(
            options.run_dir,
            options.name,
            step,
            lock_as=f"train --stage {options.stage}",
            primary=int(os.environ.get("RANK", "0")) == 0,
        )  # torchrun's other ranks write nothing
    if isinstance(options, PipelineOptions):
        return cancelled(options.run_dir, "pipeline", 0, lock_as="pipeline")
    return 130


# Each command's module is imported only when it runs: `--help` and a typo answer without loading torch.
COMMAND_HANDLERS: dict[type, tuple[str, str]] = {
    options.TrainOptions: ("stages.train", "train_command"),
    options.EvalOptions: ("evaluation.agent", "eval_command"),
    options.BoundaryOptions: ("evaluation.boundary_command", "boundary_command"),
    options.ExportOnnxOptions: ("model.export_onnx", "export_command"),
    options.PipelineOptions: ("pipeline.command", "pipeline_command"),
    options.CollectOptions: ("stages.collect", "collect_command"),
    options.DataOptions: ("data.benchmark", "data_command"),
    options.ConvertOptions: ("model.legacy", "convert_command"),
}


def run_command(opts: CommandOptions) -> int:
    """The command's handler, run in this process; its exit status."""
    module, handler = COMMAND_HANDLERS[type(opts)]
    return int(getattr(importlib.import_module(f"{__package__}.{module}"), handler)(opts) or 0)
