"""Evaluation.
- plain: the pretraining QA form (`question : … \\n answer :`), greedy, no tags — the base model's closed-book EM,
  computed here (SQuAD normalisation) because it is the pretraining stage's own check.
- agent: greedy tool loop against the real environment server; every trajectory is graded by the server's
  /v1/grade so reward and format rules live only in TypeScript. Metrics per split: EM, F1, TC (tool calls per
  question), TP (correct answers per tool call), format-error rate; an `eval` event per split and a table.
- no-tool: the agent prompt with tools refused (an action ends the trajectory), graded by the server likewise."""

from __future__ import annotations

import json
import re
import string
import time
from pathlib import Path
from dataclasses import asdict, dataclass
from functools import partial
from typing import Callable

import torch

from ..base import quiet  # noqa: F401
from ..data.samples import encode_text, prompt_text
from ..rollout.generate import generate
from ..data.prompts import prompt_ids
from ..rollout.loop import rollout
from ..rollout.metrics import graded_sums, graded_values
from ..data.userdata import QuestionSplits, golden, question_meta, source_of
from ..contracts.run_config import RunConfig
from ..contracts.record import RewardBreakdown
from ..data.records import JsonRecord, RecordTokens, trajectory_record
from ..base.options import EvalOptions
from ..data.tokenizer import TextTokenizer
from ..model.load import Runtime
from ..env.client import EnvClient
from ..rollout.agentio import AgentIO
from ..contracts.events import EvalEvent


def normalize_answer(s: str) -> str:
    """SQuAD/Search-R1 normalisation, as src/core/answer.ts (kept in step by test/conformance/answers.json).
    Closed-book evaluation runs inside training, where no environment server is up to grade."""
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


@torch.no_grad()
def plain_eval(
    model: torch.nn.Module,
    tok: TextTokenizer,
    bench: QuestionSplits,
    config: RunConfig,
    split: str,
    rt: Runtime,
    batch_size: int = 64,
) -> tuple[dict, list[dict]]:
    """Closed-book EM in the pretraining QA form, overall and by known/unknown and hops."""
    rows = closed_book(model, tok, bench, config, split, rt, batch_size)
    metrics = {
        "em": mean_em(rows),
        "em_known": mean_em([r for r in rows if r.known]),
        "em_unknown": mean_em([r for r in rows if not r.known]),
        "em_known_1hop": mean_em([r for r in rows if r.known and r.hops == 1]),
        "em_unknown_1hop": mean_em([r for r in rows if not r.known and r.hops == 1]),
        "em_known_2hop": mean_em([r for r in rows if r.known and r.hops == 2]),
        "questions": float(len(rows)),
    }
    return metrics, [asdict(r) for r in rows]


def mean_em(rows: list[ClosedBookRow]) -> float | None:
    return sum(r.em for r in rows) / len(rows) if rows else None


@torch.no_grad()
def closed_book(
    model: torch.nn.Module,
    tok: TextTokenizer,
    bench: QuestionSplits,
    config: RunConfig,
    split: str,
    rt: Runtime,
    batch_size: int = 64,
) -> list[ClosedBookRow]:
    """Each question of the split answered greedily in the pretraining QA form (`question : … answer :`)."""
    questions = bench.split(split)
    rows: list[ClosedBookRow] = []
    for i in range(0, len(questions), batch_size):
        qs = questions[i : i + batch_size]
        prompts = [encode_text(tok, prompt_text(config, q.question) + "answer :")[0] for q in qs]
        outs, _, _ = generate(model, prompts, 6, {tok.eos_token_id}, tok.pad_token_id, rt.device, rt.autocast_dtype)
        for q, ids in zip(qs, outs):
            pred = tok.decode([t for t in ids if t != tok.eos_token_id], skip_special_tokens=True).strip()
            rows.append(
                ClosedBookRow(
                    q.id,
                    pred,
                    q.answer,
                    q.known,
                    len(q.hops),
                    float(normalize_answer(pred) == normalize_answer(q.answer)),
                )
            )
    return rows


@dataclass(frozen=True)
class ClosedBookRow:
    """One question answered closed-book (a line of the eval command's rows file)."""

    id: str
    pred: str
    answer: str
    known: bool | None
    hops: int
    em: float


@dataclass(frozen=True)
class GradedQuestion:
    """One question's agent rollout as graded: what the metrics are averaged from."""

    em: float
    f1: float
    format_ok: bool
    tc: int
    optimal: int | None
    known: bool | None
    hops: int
    truncated: bool
    failures: int


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _rate(rows: list[GradedQuestion], pred: Callable[[int, int], bool]) -> float | None:
    """Mean of pred(tool calls, optimum) over the rows whose question knows its optimum (the embedded benchmark's;
    users' do not)."""
    sel = [(r.tc, r.optimal) for r in rows if r.optimal is not None]
    return _mean([1.0 if pred(tc, opt) else 0.0 for tc, opt in sel]) if sel else None


def eval_rollout(
    model: torch.nn.Module,
    tok: TextTokenizer,
    config: RunConfig,
    prompts: list[list[int]],
    tool: Callable[[list[str]], list[str | None]] | None,
    rt: Runtime,
    io: AgentIO | None = None,
) -> list:
    """Greedy rollouts with eval's limits — the RL stages' loop (rollout.rollout), so eval and RL sample alike."""
    from ..data.dialects import tags

    from ..data.lengths import resolve_max_len
    from ..model.load import model_context

    ecfg = config.eval
    max_len = resolve_max_len(ecfg.max_len, None, model_context(model))
    return rollout(
        model,
        tok,
        prompts,
        tags(config.dialect),
        tool,
        max_turns=ecfg.max_turns,
        max_new_tokens=ecfg.max_new_tokens,
        max_obs_tokens=ecfg.max_obs_tokens,
        max_len=max_len,
        device=rt.device,
        dtype=rt.autocast_dtype,
        temperature=0.0,
        simulate=False,
        io=io,
    )


@torch.no_grad()
def agent_eval(
    model: torch.nn.Module,
    tok: TextTokenizer,
    bench: QuestionSplits,
    config: RunConfig,
    split: str,
    rt: Runtime,
    env: EnvClient,
    tools: bool = True,
    run: str | None = None,
    stage: str = "eval",
    io: AgentIO | None = None,
) -> tuple[dict, list[dict]]:
    """Greedy rollouts with the search tool served by `env`, graded by the server (scheme em). `bench`: the
    embedded benchmark or the user's data (anything with split())."""
    ecfg = config.eval
    questions = bench.split(split)
    if ecfg.limit:
        questions = questions[: ecfg.limit]
    failures = 0

    def tool(queries: list[str]) -> list[str | None]:
        nonlocal failures
        out = env.observations(queries, ecfg.top_k, config.dialect)
        failures += sum(o is None for o in out)
        return out

    # each record's parts, built once to be graded and once more with its grade (the one builder's key order)
    pending: list[partial[JsonRecord]] = []
    trajs_all = []
    for i in range(0, len(questions), ecfg.batch_size):
        qs = questions[i : i + ecfg.batch_size]
        prompts = [prompt_ids(tok, config, q.question) for q in qs]
        trajs = eval_rollout(model, tok, config, prompts, tool if tools else None, rt, io)
        for j, (q, tr) in enumerate(zip(qs, trajs)):
            pending.append(
                partial(
                    trajectory_record,
                    q.id,
                    q.question,
                    tok.decode(tr.ids, skip_special_tokens=False),
                    golden_answers=golden(q),
                    dialect=config.dialect,
                    tokens=RecordTokens(tr.ids, tr.loss_mask),
                    meta={
                        "stage": stage,
                        "sample": i + j,
                        "group": q.kind,
                        **({"run": run} if run else {}),
                        **source_of(q),
                        **question_meta(q),
                    },
                )
            )
            trajs_all.append((q, tr))
    ungraded = [make() for make in pending]
    breakdowns: list[RewardBreakdown] = []
    for i in range(0, len(ungraded), 256):
        breakdowns += env.grade(ungraded[i : i + 256], scheme="em")
    records = [make(reward=b) for make, b in zip(pending, breakdowns)]
    rows: list[GradedQuestion] = []
    for b, (q, tr) in zip(breakdowns, trajs_all):
        rows.append(
            GradedQuestion(
                float(b.em),
                float(b.f1),
                bool(b.format_ok),
                int(b.tool_calls),
                q.optimal_tool_calls,
                q.known,
                len(q.hops),
                tr.truncated,
                tr.tool_failures,
            )
        )
    graded = graded_values(graded_sums(breakdowns))
    metrics = {
        **{k: graded[k] for k in ("em", "f1", "tc", "tp", "format_error_rate")},
        "em_known": _mean([r.em for r in rows if r.known is True]),
        "em_unknown": _mean([r.em for r in rows if r.known is False]),
        "em_2hop": _mean([r.em for r in rows if r.hops == 2]),
        "tc_optimal": _mean([float(r.optimal) for r in rows if r.optimal is not None]),
        "tc_exact_rate": _rate(rows, lambda tc, opt: tc == opt),
        "overcall_rate": _rate(rows, lambda tc, opt: tc > opt),
        "undercall_rate": _rate(rows, lambda tc, opt: tc < opt),
        "truncated_rate": _mean([1.0 if r.truncated else 0.0 for r in rows]),
        "tool_failure_rate": failures / max(1, sum(len(tr.queries) for _, tr in trajs_all)),
        "questions": float(len(rows)),
    }
    return metrics, records


TABLE_COLUMNS = ("em", "f1", "tc", "tp", "format_error_rate", "em_known", "em_unknown", "tc_optimal")


def format_table(rows: list[tuple[str, dict]]) -> str:
    head = "| split | " + " | ".join(TABLE_COLUMNS) + " |"
    sep = "|" + "---|" * (len(TABLE_COLUMNS) + 1)
    body = []
    for name, m in rows:
        cells = ["—" if m.get(c) is None else f"{m[c]:.3f}" for c in TABLE_COLUMNS]
        body.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join([head, sep, *body])


def latest_stage_dir(run_dir: Path) -> tuple[str, Path] | None:
    from ..base.runlayout import STAGE_ORDER, final_dir

    for stage in reversed(STAGE_ORDER):
        if (final_dir(run_dir, stage) / "config.json").is_file():
            return stage, final_dir(run_dir, stage)
    return None


def eval_command(opts: EvalOptions) -> int:
    import sys

    from ..data.benchmark import ensure_benchmark_files
    from ..env.session import open_env
    from ..model.load import ModelDirError, load_for_config, setup_runtime
    from ..base.runlayout import data_dir
    from ..base.runstart import RunStart, run_in_directory
    from ..data.userdata import DataError, UserData

    env: EnvClient | None = None

    def body(start: RunStart) -> int:
        nonlocal env
        run_dir, writer, config = start.run_dir, start.writer, start.config
        if opts.limit:
            config.eval.limit = opts.limit
        splits = opts.split or config.eval.splits
        if opts.model:
            model_dir, stage = opts.model, "eval"
        else:
            found = latest_stage_dir(run_dir)
            if found is None:
                raise ModelDirError(f"no finished stage in {run_dir} (train one, or pass --model)")
            stage, model_dir = found
        step = 0
        info = model_dir / "coa_stage.json"
        if info.is_file():
            meta = json.loads(info.read_text())
            stage, step = meta.get("stage", stage), int(meta.get("step", 0))
        rt = setup_runtime(config)
        if config.data is not None:
            bench = UserData(config, data_dir(config, run_dir) / "prepared")
            if opts.mode == "plain":
                raise DataError("--mode plain is the embedded benchmark's closed-book form; use agent or no-tool")
            for split in splits:
                bench.split(split)  # bad data fails here, before any model is loaded
            if not opts.env.url:
                bench.check_corpus()
        else:
            bench = ensure_benchmark_files(config, data_dir(config, run_dir))
        model, tok = load_for_config(model_dir, rt, config, trainable=False, lora=False)
        model.eval()
        if opts.mode != "plain":
            env = open_env(opts.env, config, run_dir)
        results = []
        out_dir = run_dir / "eval"
        out_dir.mkdir(parents=True, exist_ok=True)
        for split in splits:
            t0 = time.time()
            if opts.mode == "plain":
                metrics, rows = plain_eval(model, tok, bench, config, split, rt)
            else:
                assert env is not None  # opened above for every mode but plain
                metrics, rows = agent_eval(
                    model, tok, bench, config, split, rt, env, tools=opts.mode == "agent", run=writer.run, stage=stage
                )
            metrics = {**metrics, "seconds": time.time() - t0}
            writer.emit(
                EvalEvent(
                    stage=stage, step=step, split=split, metrics={"mode_agent": float(opts.mode == "agent"), **metrics}
                )
            )
            with open(out_dir / f"{stage}-{opts.mode}-{split}.jsonl", "w", encoding="utf-8") as f:
                for r in rows:
                    f.write(json.dumps(r) + "\n")
            results.append((split, metrics))
        table = format_table(results)
        (out_dir / f"{stage}-{opts.mode}.md").write_text(f"{stage} ({opts.mode})\n\n{table}\n", encoding="utf-8")
        print(table, file=sys.stderr)
        return 0

    def close() -> None:
        if env is not None:
            env.stop()

    # reads a run's models and writes beside its trainers (eval/): no run lock, and any run directory's name
    return run_in_directory(opts.run_dir, "eval", opts.config, opts.overrides, body, check_name=False, cleanup=close)
