"""verl's custom reward function calling the CoA grader, so verl trains on — and dumps, and logs — the reward the
editor hovers:

    custom_reward_function.path=pkg://coa_trainer.integrations.verl_reward   (or this file's path)
    custom_reward_function.name=compute_score
    +custom_reward_function.reward_kwargs.scheme=otc-grpo                     (optional; em by default)

Called by verl's reward managers as `compute_score(data_source=, solution_str=, ground_truth=, extra_info=, **kw)`
(verl/workers/reward_manager/naive.py `NaiveRewardManager.__call__` and
verl/experimental/reward_loop/reward_manager/naive.py `run_single`, volcengine/verl
b178a3cd56f58b2d502255daba591e92833930a7); `reward_kwargs` arrive merged into the keyword arguments
(verl/trainer/ppo/reward.py `_call_with_kwargs`). A dict return is read as `result["score"]` plus every key into
`reward_extra_info`, which `_dump_generations` writes into the rollout dumps and validation averages — so every key
is a number or a string, the same keys on every call. The server is found through COA_ENV_URL (grader.py).

OTC-GRPO keeps its running minimum of tool calls per question. verl's call carries no question text: the published
AutoCoA and Search-R1 parquets put only `{index, split}` in `extra_info` (verl adds `num_turns` and
`rollout_reward_scores`), so the question is named by `data_source`, `split` and `index` (`meta.question_key`, read
by the core's `questionKey`); a `question` in `extra_info`, where a dataset has one, is used as it is."""

from __future__ import annotations

import os
import sys
import json
import logging
from typing import Any

if not __package__:  # loaded by file path (verl's load_extern_object): make the package importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    from coa_trainer.integrations.grader import flat_breakdown, golden_list, grader, reward_settings
else:
    from .grader import flat_breakdown, golden_list, grader, reward_settings


def compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: dict | None = None,
                  scheme: str | None = None, params: dict | None = None, run: str | None = None,
                  dialect: str | None = None, **kwargs: Any) -> dict:
    """{"score": total, "em", "f1", "format_ok", "format_codes", "tool_calls", "optimal_tool_calls", "r_tool",
    "r_correct", "scheme"} for one response. Unknown keyword arguments (verl's reward_router_address, …) are
    ignored; a grader failure raises (verl then stops the step instead of training on a made-up reward)."""
    scheme, params, run = reward_settings(scheme, params, run)
    extra = extra_info or {}
    question = extra.get("question")
    golden = golden_list(ground_truth)
    meta: dict[str, Any] = {"data_source": str(data_source)}
    if not (isinstance(question, str) and question.strip()):
        question = ""
        meta["question_key"] = question_key(data_source, extra, golden)
    record: dict[str, Any] = {
        "id": str(extra.get("index", "sample")),
        "question": question,
        "golden_answers": golden,
        "response": solution_str,
        "meta": meta,
    }
    if dialect:
        record["dialect"] = dialect
    (breakdown,) = grader().grade([record], scheme=scheme, params=params or None, run=run)
    return flat_breakdown(breakdown)


_log = logging.getLogger(__name__)
_warned_unindexed = False


def question_key(data_source: Any, extra: dict, golden: list[str]) -> str:
    """The question a verl sample answers, as verl names it: data source, split and row index (every verl
    preprocessing script writes `extra_info.index`). Without an index only the golden answers are left, so questions
    with the same answers share one minimum; that is said once."""
    index = extra.get("index")
    if hasattr(index, "item"):  # numpy scalars from parquet
        index = index.item()
    if isinstance(index, (int, str)) and not isinstance(index, bool) and str(index) != "":
        return f"{data_source}/{extra.get('split', '')}/{index}"
    global _warned_unindexed
    if not _warned_unindexed:
        _warned_unindexed = True
        _log.warning("coa verl reward: extra_info has neither 'question' nor 'index'; OTC-GRPO keys questions by "
                     "data_source and ground truth, so questions with the same golden answers share one minimum")
    return f"{data_source}/answers/{json.dumps(golden, ensure_ascii=False)}"
