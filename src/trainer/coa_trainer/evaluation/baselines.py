"""The results table's two baselines that are not "the agent in its own tool loop".

- no-tool: the pretrained model, closed-book, in the pretraining QA form (`question : … \\n answer :`); it makes no
  tool calls, so TC = 0 and TP is undefined (null); that form has no tags, so there is no format to violate (null).
- workflow: the "agentic workflow" baseline of the papers (AutoCoA) — a fixed retrieve-then-answer pipeline with no
  agentic decision. The question itself is searched once by the pipeline (not by the model); the action and its
  observation are put into the response as context the model did not write (mask 0), and the model (the SFT-1+2
  agent) answers from there with tools refused: where it reaches for a tool (a second hop the observation does not
  hold), the pipeline keeps its reasoning up to its last closed thought and opens the answer, and the answer ends
  at the first tag the model writes. So every trajectory ends in an answer (the model's best guess), and a format
  error means the model broke the format itself, not that the workflow refused it. Graded by the environment
  server like every agent row; the pipeline's one search counts as a tool call (TC = 1)."""

from __future__ import annotations

from functools import partial
from typing import Any, Sequence

import torch

from ..rollout.agentio import AgentIO
from ..rollout.metrics import graded_sums, graded_values
from ..data.benchmark import Question
from ..data.samples import encode_text
from ..data.dialects import tags
from ..evaluation.agent import closed_book, eval_rollout, mean_em
from ..data.prompts import prompt_ids
from ..data.userdata import QuestionSplits, UserQuestion, golden, source_of
from ..contracts.run_config import RunConfig
from ..contracts.record import RewardBreakdown
from ..data.records import JsonRecord, RecordTokens, trajectory_record
from ..data.tokenizer import TextTokenizer
from ..model.load import Runtime
from ..env.client import EnvClient


def summarise(breakdowns: list[RewardBreakdown]) -> dict:
    """EM, F1, TC, TP (correct answers per tool call, OTC-PO's tool productivity) and format-error rate — the agent
    metrics' own arithmetic (rollout/metrics), so the workflow row is measured as the agent rows are."""
    v = graded_values(graded_sums(breakdowns))
    return {**{k: v[k] for k in ("em", "f1", "tc", "tp", "format_error_rate")}, "questions": float(len(breakdowns))}


def _questions(bench: QuestionSplits, config: RunConfig, split: str) -> Sequence[Question | UserQuestion]:
    qs = bench.split(split)
    return qs[: config.eval.limit] if config.eval.limit else qs


@torch.no_grad()
def no_tool_eval(
    model: torch.nn.Module, tok: TextTokenizer, bench: QuestionSplits, config: RunConfig, split: str, rt: Runtime
) -> dict:
    rows = closed_book(model, tok, _QuestionsView(bench, _questions(bench, config, split), split), config, split, rt)
    return {
        "em": mean_em(rows),
        "f1": None,
        "tc": 0.0,
        "tp": None,
        "format_error_rate": None,
        "questions": float(len(rows)),
    }


class _QuestionsView:
    """plain_eval reads bench.split(); this narrows it to the evaluated questions (eval.limit) without copying."""

    def __init__(self, bench: QuestionSplits, questions: Sequence[Question | UserQuestion], split: str):
        self._bench, self._questions, self._split = bench, questions, split

    def split(self, name: str, /) -> Sequence[Question | UserQuestion]:
        return self._questions if name == self._split else self._bench.split(name)


@torch.no_grad()
def workflow_eval(
    model: torch.nn.Module,
    tok: TextTokenizer,
    bench: QuestionSplits,
    config: RunConfig,
    split: str,
    rt: Runtime,
    env: EnvClient,
    run: str | None = None,
    stage: str = "workflow",
) -> tuple[dict, list[dict]]:
    ecfg = config.eval
    t = tags(config.dialect)
    questions = _questions(bench, config, split)
    io = AgentIO.make(tok, t)
    # each record's parts, built once to be graded and once more with its grade (the one builder's key order)
    pending: list[partial[JsonRecord]] = []
    for i in range(0, len(questions), ecfg.batch_size):
        qs = questions[i : i + ecfg.batch_size]
        observations = env.search([q.question for q in qs], top_k=ecfg.top_k, dialect=config.dialect)
        prompts, prefixes = [], []
        for q, obs in zip(qs, observations.observations):
            # same token layout as the agent loop: the action as the model would write it, the observation
            # tokenised once and appended (rollout.rollout does exactly this after a real action)
            prefix = encode_text(tok, f"{t.action_open} {q.question} {t.action_close}")[0]
            prefix += io.observation_ids(obs, ecfg.max_obs_tokens)[0]
            prefixes.append(prefix)
            prompts.append(prompt_ids(tok, config, q.question) + prefix)
        trajs = eval_rollout(model, tok, config, prompts, None, rt, io)  # tools refused: an action ends the turn
        bodies = [list(tr.ids) for tr in trajs]
        masks = [list(tr.loss_mask) for tr in trajs]
        if t.answer_open is not None and t.answer_close is not None:
            _answer_where_refused(model, tok, config, rt, io, t, prompts, bodies, masks)
        for j, (q, prefix, body, mask) in enumerate(zip(qs, prefixes, bodies, masks)):
            ids = prefix + body
            pending.append(
                partial(
                    trajectory_record,
                    q.id,
                    q.question,
                    tok.decode(ids, skip_special_tokens=False),
                    golden_answers=golden(q),
                    dialect=config.dialect,
                    tokens=RecordTokens(ids, [0] * len(prefix) + mask),
                    meta={
                        "stage": stage,
                        "sample": i + j,
                        "group": q.kind,
                        **({"run": run} if run else {}),
                        **source_of(q),
                    },
                )
            )
    ungraded = [make() for make in pending]
    breakdowns: list[RewardBreakdown] = []
    for i in range(0, len(ungraded), 256):
        breakdowns += env.grade(ungraded[i : i + 256], scheme="em")
    return summarise(breakdowns), [make(reward=b) for make, b in zip(pending, breakdowns)]


def _answer_where_refused(
    model: torch.nn.Module,
    tok: TextTokenizer,
    config: RunConfig,
    rt: Runtime,
    io: AgentIO,
    t: Any,
    prompts: list[list[int]],
    bodies: list[list[int]],
    masks: list[list[int]],
) -> None:
    """Tools refused, the workflow still answers: a continuation that did not end in an answer (the model reached
    for a tool) is cut after its last closed thought, the pipeline opens the answer, and the model writes it; the
    answer ends at the first tag the model writes (a query it starts, a thought inside the answer). Edits `bodies` and
    their loss `masks` (the tags the pipeline writes are mask 0, as its search and observation are)."""
    refused = [k for k, b in enumerate(bodies) if t.answer_close not in tok.decode(b, skip_special_tokens=False)]
    if not refused:
        return
    opened = encode_text(tok, f" {t.answer_open}")[0]
    for k in refused:
        keep = prefix_through(tok, bodies[k], t.think_close)
        bodies[k] = bodies[k][:keep] + opened
        masks[k] = masks[k][:keep] + [0] * len(opened)
    answers = eval_rollout(model, tok, config, [prompts[k] + bodies[k] for k in refused], None, rt, io)
    tag_texts = [
        x for x in (t.answer_close, t.action_open, t.action_close, t.answer_open, t.think_open, t.think_close) if x
    ]
    for k, tr in zip(refused, answers):
        text = tok.decode(tr.ids, skip_special_tokens=False)
        first = min(((text.find(x), x) for x in tag_texts if x in text), default=(-1, ""))
        if first[1] == t.answer_close:
            end, closed = prefix_through(tok, tr.ids, t.answer_close, first=True), []
        else:
            end = prefix_before(tok, tr.ids, first[0]) if first[0] >= 0 else len(tr.ids)
            closed = encode_text(tok, f" {t.answer_close}")[0]
        bodies[k] += tr.ids[:end] + closed
        masks[k] += tr.loss_mask[:end] + [0] * len(closed)


def prefix_through(tok: TextTokenizer, ids: list[int], tag: str, first: bool = False) -> int:
    """How many of `ids` it takes to include the last (or first) `tag` of their decoding; 0 when it is absent.
    Special-token tags are one id; BPE text tags may span several."""
    text = tok.decode(ids, skip_special_tokens=False)
    pos = text.find(tag) if first else text.rfind(tag)
    if pos < 0:
        return 0
    need = pos + len(tag)
    return next(n for n in range(len(ids) + 1) if len(tok.decode(ids[:n], skip_special_tokens=False)) >= need)


def prefix_before(tok: TextTokenizer, ids: list[int], pos: int) -> int:
    """The most of `ids` whose decoding ends at or before character `pos`."""
    n = 0
    while n < len(ids) and len(tok.decode(ids[: n + 1], skip_special_tokens=False)) <= pos:
        n += 1
    return n
