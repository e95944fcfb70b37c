"""Command line: `train`, `eval`, `data`. Heavy imports (torch) happen inside the commands so --help is fast."""

from __future__ import annotations

import argparse
import sys

STAGES = ("pretrain", "sft1", "sft2", "sft3", "rl1", "rl2")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m coa_trainer",
        description="CoA Studio trainer (AutoCoA recipe): pretraining and SFT stages, evaluation, embedded benchmark.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    train = sub.add_parser("train", help="run one training stage")
    train.add_argument("--stage", required=True, choices=STAGES)
    train.add_argument("--config", required=True, help="run config JSON (schemas/run-config.schema.json)")
    train.add_argument("--run-dir", required=True, help="run directory, e.g. runs/<id>")
    train.add_argument("--resume", action="store_true", help="continue from the stage's latest checkpoint")
    train.add_argument("--max-steps", type=int, default=None, help="override the stage's step count")
    train.add_argument("--label", default=None, help="name of this stage run: stages/<label>/ and the events' stage "
                       "(default: the stage name; e.g. --stage rl2 --label rl2-otc)")
    train.add_argument("--env-url", default=None, help="RL stages: use a running env server instead of starting one")
    train.add_argument("--env-token", default=None)

    ev = sub.add_parser("eval", help="greedy evaluation (agent mode uses the environment server)")
    ev.add_argument("--config", required=True)
    ev.add_argument("--run-dir", required=True)
    ev.add_argument("--model", default=None, help="model dir (default: the latest finished stage of the run)")
    ev.add_argument("--split", action="append", choices=("train", "dev", "test"), help="repeatable (default: dev)")
    ev.add_argument("--mode", choices=("agent", "no-tool", "plain"), default="agent",
                    help="agent: tool loop against the env server; no-tool: tags but searches refused; plain: QA prompt")
    ev.add_argument("--limit", type=int, default=None, help="questions per split")
    ev.add_argument("--env-url", default=None, help="use a running env server instead of starting one")
    ev.add_argument("--env-token", default=None)

    onnx = sub.add_parser("export-onnx", help="export an HF model dir to ONNX with KV cache, for the editor's replay")
    onnx.add_argument("--checkpoint", required=True, help="HF model directory, e.g. runs/<id>/stages/<stage>/final")
    onnx.add_argument("-o", "--output", required=True, help="model.onnx path (tokenizer + coa_model.json beside it)")
    onnx.add_argument("--opset", type=int, default=17)
    onnx.add_argument("--dialect", default=None, help="trajectory dialect (default: coa_stage.json's, else coa)")
    onnx.add_argument("--prompt-template", default="question : {question}\n",
                      help="the run config's prompt_template, stored for the replay engine")

    pipe = sub.add_parser("pipeline", help="pretrain → SFT-1/2/3 → RL-1 → RL-2 (+ RL-2 OTC-GRPO) → results table")
    pipe.add_argument("--config", required=True)
    pipe.add_argument("--run-dir", required=True)
    pipe.add_argument("--stages", default=None, help="comma list of pretrain,sft1,sft2,sft3,rl1,rl2,rl2-otc,results "
                      "(default: all)")
    pipe.add_argument("--resume", action="store_true", help="skip finished stages, resume the interrupted one")
    pipe.add_argument("--nproc-per-node", type=int, default=1, help="run each stage as N DDP processes (torchrun)")
    pipe.add_argument("--env-url", default=None, help="use a running env server instead of starting one")
    pipe.add_argument("--env-token", default=None)
    pipe.add_argument("--split", choices=("dev", "test"), default="test",
                      help="split of the results table: test (default; what is reported) or dev (choose settings)")
    pipe.add_argument("--seeds", type=int, default=1, help="N > 1: the whole pipeline for seeds S … S+N-1 (S: the "
                      "config's seed), each in <run-dir>/seed-<s>/, then the table as mean ± sd and per seed")

    data = sub.add_parser("data", help="write the embedded benchmark (knowledge base, splits, corpus, oracle)")
    data.add_argument("--config", default=None)
    data.add_argument("--out", required=True)
    data.add_argument("--seed", type=int, default=None)
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    if args.command == "train":
        from .train import train_command

        sys.exit(train_command(args))
    if args.command == "eval":
        from .evaluate import eval_command

        sys.exit(eval_command(args))
    if args.command == "export-onnx":
        from .export_onnx import export_command

        sys.exit(export_command(args))
    if args.command == "pipeline":
        from .pipeline import pipeline_command

        sys.exit(pipeline_command(args))
    if args.command == "data":
        from .benchmark import data_command

        sys.exit(data_command(args))
