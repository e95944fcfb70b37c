"""Agent metrics of one RL step. Per rank, `step_sums` turns trajectories and the grader's breakdowns into sums
(all-reduced under DDP), and `step_values` turns the global sums into the logged values — so the numbers are the
same whatever the number of processes."""

from __future__ import annotations

from typing import Any

from ..rollout.loop import RlTrajectory
from ..contracts.schemas import codes_table


def step_sums(trajs: list[RlTrajectory], breakdowns: list[dict], group_size: int, io: Any,
              retok: list[bool], drift: list[bool] | None = None) -> dict[str, float]:
    s: dict[str, float] = {k: 0.0 for k in (
        "n", "reward", "reward_sq", "em", "f1", "tc", "calls", "failures", "called", "malformed", "truncated",
        "format_errors", "groups", "groups_all_correct", "groups_all_wrong", "gen_tokens", "think_tokens",
        "retok_mismatches", "retok_drift")}
    drift = drift or [False] * len(trajs)
    # format codes that mean a tool call itself was malformed (marked toolCall in src/core/codes.ts)
    call_codes = set(codes_table()["tool_call_codes"])
    for tr, b, bad, dr in zip(trajs, breakdowns, retok, drift):
        r = float(b["total"])
        s["n"] += 1
        s["reward"] += r
        s["reward_sq"] += r * r
        s["em"] += float(b["em"])
        s["f1"] += float(b["f1"])
        s["tc"] += float(b["tool_calls"])
        s["calls"] += len(tr.queries)
        s["failures"] += tr.tool_failures
        attempted = b["tool_calls"] > 0 or bool(tr.queries)
        s["called"] += float(attempted)
        s["malformed"] += float(attempted and bool(call_codes.intersection(b["violations"])))
        s["truncated"] += float(tr.truncated)
        s["format_errors"] += float(not b["format_ok"])
        s["gen_tokens"] += sum(tr.loss_mask)
        s["think_tokens"] += io.think_tokens(tr.ids, tr.loss_mask)
        s["retok_mismatches"] += float(bad)
        s["retok_drift"] += float(dr)
    for g in range(0, len(breakdowns), group_size):
        correct = [float(b["r_correct"]) > 0 for b in breakdowns[g:g + group_size]]
        s["groups"] += 1
        s["groups_all_correct"] += float(all(correct))
        s["groups_all_wrong"] += float(not any(correct))
    return s


def _div(a: float, b: float) -> float | None:
    return a / b if b else None


def step_values(s: dict[str, float]) -> dict[str, Any]:
    n = s["n"]
    mean = _div(s["reward"], n)
    var = max(0.0, s["reward_sq"] / n - mean * mean) if n and mean is not None else None
    return {
        "reward_mean": mean,
        "reward_std": var ** 0.5 if var is not None else None,
        "em": _div(s["em"], n),
        "f1": _div(s["f1"], n),
        "tc": _div(s["tc"], n),
        "tp": _div(s["em"], s["tc"]),
        "tool_failure_rate": _div(s["failures"], s["calls"]) if s["calls"] else 0.0,
        "malformed_call_rate": _div(s["malformed"], s["called"]) if s["called"] else 0.0,
        "truncation_ratio": _div(s["truncated"], n),
        "format_error_rate": _div(s["format_errors"], n),
        "all_correct_groups": _div(s["groups_all_correct"], s["groups"]),
        "all_wrong_groups": _div(s["groups_all_wrong"], s["groups"]),
        "response_len": _div(s["gen_tokens"], n),
        "think_len": _div(s["think_tokens"], n),
        "retok_mismatches": s["retok_mismatches"],
        "retok_drift_rate": _div(s["retok_drift"], n),
        "trajectories": n,
    }
