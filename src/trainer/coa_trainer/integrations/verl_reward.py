"""verl's custom reward function calling the CoA grader, so verl trains on — and dumps, and logs — the reward the
editor hovers:

    custom_reward_function.path=pkg://coa_trainer.integrations.verl_reward   (or this file's path)
    custom_reward_function.name=compute_score
    +custom_reward_function.reward_kwargs.scheme=otc-grpo                     (optional; em by default)
    +custom_reward_function.reward_kwargs.run=<run id>                        (OTC-GRPO: whose minima the server keeps)
    reward_model.reward_manager=batch  reward_model.use_reward_loop=False     (OTC-GRPO: the whole batch in one call)

verl calls it in two ways (volcengine/verl b178a3cd56f58b2d502255daba591e92833930a7), and `compute_score` answers
both; `reward_kwargs` arrive merged into the keyword arguments (verl/trainer/ppo/reward.py `_call_with_kwargs`):
- one sample per call, `compute_score(data_source=, solution_str=, ground_truth=, extra_info=)` →
  `{"score", …}`: verl/workers/reward_manager/naive.py `NaiveRewardManager.__call__` (in batch order) and
  verl/experimental/reward_loop/reward_manager/naive.py `run_single` (the reward loop, verl's default: samples
  scored concurrently, in any order);
- the whole batch in one call, `compute_score(data_sources=, solution_strs=, ground_truths=, extra_infos=)` → a
  list: verl/workers/reward_manager/batch.py `BatchRewardManager.verify`.
A dict is read as `result["score"]` plus every key into `reward_extra_info`, which `_dump_generations` writes into
the rollout dumps and validation averages — so every key is a number or a string, the same keys on every call. The
server is found through COA_ENV_URL (grader.py).

A scheme whose reward needs the other answers to the same question (OTC-GRPO: n is the fewest tool calls among the
group's correct answers; schemas/rewards.json `group_schemes`) is graded only through the batch call, where all of a
prompt's samples are present, so the result does not depend on the order or the threads of the calls. Called one
sample at a time it is refused at once, naming the manager to use: a running minimum over samples in arrival order
would score the same answers differently from run to run. OTC-GRPO also needs `run`, the id under which the server
keeps each question's minimum across steps (saved with our own checkpoints); without it the call is refused rather
than scored as plain EM.

verl's call carries no question text: the published AutoCoA and Search-R1 parquets put only `{index, split}` in
`extra_info` (verl adds `num_turns` and `rollout_reward_scores`), so the question is named by `data_source`, `split`
and `index` (`meta.question_key`, read by the core's `questionKey`); a `question` in `extra_info`, where a dataset
has one, is used as it is."""

from __future__ import annotations

import os
import sys
import json
import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

if not __package__:  # loaded by file path (verl's load_extern_object): make the package importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    from coa_trainer.contracts.schemas import rewards_table
    from coa_trainer.integrations.grader import RewardCallError, flat_breakdown, golden_list, grader, reward_settings
    from coa_trainer.data.records import trajectory_record
else:
    from ..contracts.schemas import rewards_table
    from .grader import RewardCallError, flat_breakdown, golden_list, grader, reward_settings
    from ..data.records import trajectory_record

# What verl hands the batch call for each column of its batch: a list, or a numpy object array read from parquet
Column = Sequence[object] | np.ndarray

# One grade request stays well under the environment server's 32 MiB body limit (src/env/server.ts): a big batch is
# sent in parts, each holding whole questions, so every question's minimum is still taken over all its samples.
REQUEST_BUDGET_BYTES = 8 * 1024 * 1024


def compute_score(
    data_source: object = None,
    solution_str: str | None = None,
    ground_truth: object = None,
    extra_info: dict | None = None,
    *,
    data_sources: Column | None = None,
    solution_strs: Column | None = None,
    ground_truths: Column | None = None,
    extra_infos: Column | None = None,
    scheme: str | None = None,
    params: dict | None = None,
    run: str | None = None,
    dialect: str | None = None,
    **kwargs: object,
) -> dict | list[dict]:
    """One sample's `{"score": total, "em", "f1", "format_ok", "format_codes", "tool_calls", "optimal_tool_calls",
    "r_tool", "r_correct", "scheme"}`, or a list of them for verl's batch manager (`solution_strs=`). Unknown keyword
    arguments (verl's reward_router_address, …) are ignored; a grader failure raises (verl then stops the step instead
    of training on a made-up reward)."""
    scheme, params, run = reward_settings(scheme, params, run)
    if solution_strs is None:
        if solution_str is None:
            raise RewardCallError(
                "coa verl reward: called without solution_str (one sample) or solution_strs (verl's batch manager)"
            )
        if scheme in group_schemes():  # refused before anything else: no setting makes a per-sample call exact
            raise RewardCallError(
                f"coa verl reward: scheme {scheme} needs each prompt's whole group in one call (its reward compares "
                "an answer with the other answers to the same question), but verl called it with one sample "
                "(solution_str=), as its naive manager and its reward loop do. Use verl's batch manager: "
                "reward_model.reward_manager=batch reward_model.use_reward_loop=False (the reward loop, verl's "
                "default, scores samples one by one; verl 0.9 has no batch manager left). Or choose the per-sample "
                "OTC reward, scheme=otc-ppo (docs/integrations.md)"
            )
    if scheme == "otc-grpo" and not run:
        raise RewardCallError(
            "coa verl reward: scheme otc-grpo needs a run id — the server keeps each question's fewest tool calls "
            "under it across steps: add +custom_reward_function.reward_kwargs.run=<run id> (or set COA_REWARD_RUN)"
        )
    if solution_strs is not None:
        return score_batch(
            data_sources,
            solution_strs,
            ground_truths,
            extra_infos,
            scheme=scheme,
            params=params,
            run=run,
            dialect=dialect,
        )
    (record,), _ = _records([data_source], [solution_str], [ground_truth], [extra_info], dialect)
    (breakdown,) = grader().grade([record], scheme=scheme, params=params or None, run=run)
    return flat_breakdown(breakdown)


def score_batch(
    data_sources: Column | None,
    solution_strs: Column,
    ground_truths: Column | None,
    extra_infos: Column | None,
    *,
    scheme: str,
    params: dict,
    run: str | None,
    dialect: str | None = None,
) -> list[dict]:
    """verl's batch manager's call: every sample graded with the others of its question, in requests of whole
    questions; the breakdowns in the batch's order."""
    n = len(solution_strs)
    sources = list(data_sources) if data_sources is not None else ["" for _ in range(n)]
    truths = list(ground_truths) if ground_truths is not None else [None for _ in range(n)]
    extras = list(extra_infos) if extra_infos is not None else [None for _ in range(n)]
    if not (len(sources) == len(truths) == len(extras) == n):
        raise RewardCallError(
            f"coa verl reward: the batch has {n} solution_strs but {len(sources)} data_sources, "
            f"{len(truths)} ground_truths and {len(extras)} extra_infos"
        )
    records, keys = _records(sources, list(solution_strs), truths, extras, dialect)
    out: list[dict | None] = [None] * n
    for part in _parts_by_question(records, keys):
        breakdowns = grader().grade([records[i] for i in part], scheme=scheme, params=params or None, run=run)
        for i, b in zip(part, breakdowns):
            out[i] = flat_breakdown(b)
    return out  # type: ignore[return-value]


def group_schemes() -> frozenset[str]:
    return frozenset(rewards_table().group_schemes)


def _records(
    sources: list, responses: list, truths: list, extras: list, dialect: str | None
) -> tuple[list[dict], list[str]]:
    """The batch's records, and each one's question key (the core's questionKey: meta.question_key, else the
    question)."""
    records, keys = [], []
    for source, response, truth, extra in zip(sources, responses, truths, extras):
        extra = extra if isinstance(extra, dict) else {}
        golden = golden_list(truth)
        asked = extra.get("question")
        question = asked if isinstance(asked, str) and asked.strip() else ""
        # no question text: the core groups the answers to one question by meta.question_key
        key = None if question else question_key(source, extra, golden)
        meta: dict[str, Any] = {"data_source": str(source), **({} if key is None else {"question_key": key})}
        keys.append(key or question.strip())
        records.append(
            trajectory_record(
                str(_plain(extra.get("index", "sample"))),
                question,
                str(response),
                golden_answers=golden,
                dialect=dialect or None,
                meta=meta,
            )
        )
    return records, keys


def _parts_by_question(records: list[dict], keys: list[str]) -> list[list[int]]:
    """Indices of `records` in parts of whole questions (`keys`: each record's question key), each part's JSON under
    REQUEST_BUDGET_BYTES unless one question alone is bigger."""
    by_question: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        by_question.setdefault(key, []).append(i)
    parts: list[list[int]] = []
    size = 0
    for indices in by_question.values():
        group_size = sum(len(json.dumps(records[i], ensure_ascii=False)) for i in indices)
        if parts and size + group_size <= REQUEST_BUDGET_BYTES:
            parts[-1].extend(indices)
            size += group_size
        else:
            parts.append(list(indices))
            size = group_size
    return parts


def _plain(value: object) -> object:
    item = getattr(value, "item", None)  # a numpy scalar read from parquet
    return item() if callable(item) else value


_log = logging.getLogger(__name__)
_warned_unindexed = False


def question_key(data_source: object, extra: dict, golden: list[str]) -> str:
    """The question a verl sample answers, as verl names it: data source, split and row index (every verl
    preprocessing script writes `extra_info.index`). Without an index only the golden answers are left, so questions
    with the same answers share one minimum; that is said once."""
    index = extra.get("index")
    item = getattr(index, "item", None)
    if callable(item):  # numpy scalars from parquet
        index = item()
    if isinstance(index, (int, str)) and not isinstance(index, bool) and str(index) != "":
        return f"{data_source}/{extra.get('split', '')}/{index}"
    global _warned_unindexed
    if not _warned_unindexed:
        _warned_unindexed = True
        _log.warning(
            "coa verl reward: extra_info has neither 'question' nor 'index'; OTC-GRPO keys questions by "
            "data_source and ground truth, so questions with the same golden answers share one minimum"
        )
    return f"{data_source}/answers/{json.dumps(golden, ensure_ascii=False)}"
