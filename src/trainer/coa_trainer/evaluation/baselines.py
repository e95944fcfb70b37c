"""The results table's two baselines that are not "the agent in its own tool loop".

- no-tool: the pretrained model, closed-book, in the pretraining QA form (`question : … \\n answer :`); it makes no
  tool calls, so TC = 0 and TP is undefined (null); that form has no tags, so there is no format to violate (null).
- workflow: the "agentic workflow" baseline of the papers — a fixed retrieve-then-answer pipeline. The question
  itself is searched once by the pipeline (not by the model), the action and its observation are put into the
  response as context the model did not write (mask 0), and the model continues from there with tools refused
  (an action it writes ends the trajectory). Graded by the environment server like every agent row, so the
  pipeline's one search counts as a tool call (TC = 1 unless the model also tries to act)."""

from __future__ import annotations

from typing import Any

import torch

from ..rollout.agentio import AgentIO
from ..data.benchmark import Benchmark
from ..data.samples import encode_text
from ..data.dialects import tags
from ..evaluation.agent import eval_rollout, plain_eval
from ..data.prompts import prompt_ids
from ..data.userdata import golden
from ..contracts.run_config import RunConfig


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def summarise(breakdowns: list[dict]) -> dict:
    """EM, F1, TC, TP (correct answers per tool call, OTC-PO's tool productivity) and format-error rate."""
    em = [float(b["em"]) for b in breakdowns]
    tc = [float(b["tool_calls"]) for b in breakdowns]
    return {
        "em": _mean(em), "f1": _mean([float(b["f1"]) for b in breakdowns]), "tc": _mean(tc),
        "tp": sum(em) / sum(tc) if sum(tc) else None,
        "format_error_rate": _mean([0.0 if b["format_ok"] else 1.0 for b in breakdowns]),
        "questions": float(len(breakdowns)),
    }


def _questions(bench: Benchmark, config: RunConfig, split: str) -> list:
    qs = bench.split(split)
    return qs[: config.eval.limit] if config.eval.limit else qs


@torch.no_grad()
def no_tool_eval(model: Any, tok: Any, bench: Benchmark, config: RunConfig, split: str, rt: Any) -> dict:
    metrics, rows = plain_eval(model, tok, _QuestionsView(bench, _questions(bench, config, split), split), config,
                               split, rt)
    return {"em": metrics["em"], "f1": None, "tc": 0.0, "tp": None, "format_error_rate": None,
            "questions": float(len(rows))}


class _QuestionsView:
    """plain_eval reads bench.split(); this narrows it to the evaluated questions (eval.limit) without copying."""

    def __init__(self, bench: Benchmark, questions: list, split: str):
        self._bench, self._questions, self._split = bench, questions, split

    def split(self, name: str) -> list:
        return self._questions if name == self._split else self._bench.split(name)


@torch.no_grad()
def workflow_eval(model: Any, tok: Any, bench: Benchmark, config: RunConfig, split: str, rt: Any, env: Any,
                  run: str | None = None, stage: str = "workflow") -> tuple[dict, list[dict]]:
    ecfg = config.eval
    t = tags(config.dialect)
    questions = _questions(bench, config, split)
    io = AgentIO.make(tok, t)
    records: list[dict] = []
    for i in range(0, len(questions), ecfg.batch_size):
        qs = questions[i:i + ecfg.batch_size]
        observations = env.search([q.question for q in qs], top_k=ecfg.top_k, dialect=config.dialect)
        prompts, prefixes = [], []
        for q, obs in zip(qs, observations["observations"]):
            # same token layout as the agent loop: the action as the model would write it, the observation
            # tokenised once and appended (rollout.rollout does exactly this after a real action)
            prefix = encode_text(tok, f"{t.action_open} {q.question} {t.action_close}")[0]
            prefix += io.observation_ids(obs, ecfg.max_obs_tokens)[0]
            prefixes.append(prefix)
            prompts.append(prompt_ids(tok, config, q.question) + prefix)
        trajs = eval_rollout(model, tok, config, prompts, None, rt, io)  # tools refused: an action ends it
        for j, (q, prefix, tr) in enumerate(zip(qs, prefixes, trajs)):
            ids = prefix + tr.ids
            records.append({
                "id": q.id, "question": q.question, "golden_answers": golden(q),
                "response": tok.decode(ids, skip_special_tokens=False), "dialect": config.dialect,
                "tokens": {"ids": ids, "loss_mask": [0] * len(prefix) + tr.loss_mask},
                "meta": {"stage": stage, "sample": i + j, "group": q.kind, **({"run": run} if run else {})},
            })
    breakdowns: list[dict] = []
    for i in range(0, len(records), 256):
        breakdowns += env.grade(records[i:i + 256], scheme="em")
    for rec, b in zip(records, breakdowns):
        rec["reward"] = b
    return summarise(breakdowns), records
