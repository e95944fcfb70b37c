"""The agent metrics of graded trajectories, computed here only: an RL step (`step_sums` → `step_values`), an
evaluation, a collection batch and the TRL callback all turn the grader's breakdowns into the same numbers under the
same names (src/core/metrics.ts, generated as AgentMetric), which the core's alert rules read. Sums first (all-reduced
under DDP), values from the global sums — so the numbers are the same whatever the number of processes."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import asdict, dataclass, fields
from typing import Any, Self, Sequence

from ..contracts.agent_metric import AgentMetric as M
from ..contracts.record import RewardBreakdown
from ..contracts.schemas import codes_table
from .loop import RlTrajectory
from .agentio import AgentIO


@dataclass
class GradedSums:
    """Sums over the grader's breakdowns (and, given groups, over GRPO's groups of one question's samples)."""

    n: float = 0.0
    reward: float = 0.0
    reward_sq: float = 0.0
    em: float = 0.0
    f1: float = 0.0
    tc: float = 0.0
    format_errors: float = 0.0
    groups: float = 0.0
    groups_all_correct: float = 0.0
    groups_all_wrong: float = 0.0
    groups_zero_variance: float = 0.0

    @classmethod
    def read(cls, sums: dict[str, float]) -> Self:
        """These sums out of a dict of a step's sums (all-reduced under DDP as a dict, with the update's own)."""
        return cls(**{f.name: sums[f.name] for f in fields(cls)})


@dataclass
class StepSums(GradedSums):
    """An RL step's sums: the graded ones and the trajectories' (tool calls, truncation, tokens, re-tokenisation)."""

    calls: float = 0.0
    failures: float = 0.0
    called: float = 0.0
    malformed: float = 0.0
    truncated: float = 0.0
    gen_tokens: float = 0.0
    think_tokens: float = 0.0
    retok_mismatches: float = 0.0
    retok_drift: float = 0.0


def graded_sums(
    breakdowns: Sequence[RewardBreakdown], groups: Sequence[Hashable] | None = None, into: GradedSums | None = None
) -> GradedSums:
    """Sums over the grader's breakdowns; `groups` (one label per breakdown: GRPO's samples of one question) adds
    the counts of groups with every / no sample correct, and of groups whose rewards are all equal (zero
    advantages: no gradient, whatever the correctness — an OTC group of right answers with different call counts
    still has one). `into`: the sums to add to (fresh ones by default)."""
    s = into if into is not None else GradedSums()
    for b in breakdowns:
        r = float(b.total)
        s.n += 1
        s.reward += r
        s.reward_sq += r * r
        s.em += float(b.em)
        s.f1 += float(b.f1)
        s.tc += float(b.tool_calls)
        s.format_errors += float(not b.format_ok)
    if groups is not None:
        correct: dict[Hashable, list[bool]] = {}
        rewards: dict[Hashable, set[float]] = {}
        for b, g in zip(breakdowns, groups):
            correct.setdefault(g, []).append(float(b.r_correct) > 0)
            rewards.setdefault(g, set()).add(float(b.total))
        for g, c in correct.items():
            s.groups += 1
            s.groups_all_correct += float(all(c))
            s.groups_all_wrong += float(not any(c))
            s.groups_zero_variance += float(len(rewards[g]) == 1)
    return s


def _div(a: float, b: float) -> float | None:
    return a / b if b else None


def graded_values(s: GradedSums) -> dict[str, float | None]:
    n = s.n
    mean = _div(s.reward, n)
    var = max(0.0, s.reward_sq / n - mean * mean) if n and mean is not None else None
    out = {
        M.reward_mean.value: mean,
        M.reward_std.value: var**0.5 if var is not None else None,
        M.em.value: _div(s.em, n),
        M.f1.value: _div(s.f1, n),
        M.tc.value: _div(s.tc, n),
        M.tp.value: _div(s.em, s.tc),
        M.format_error_rate.value: _div(s.format_errors, n),
        M.trajectories.value: n,
    }
    if s.groups:
        out[M.all_correct_groups.value] = _div(s.groups_all_correct, s.groups)
        out[M.all_wrong_groups.value] = _div(s.groups_all_wrong, s.groups)
        out[M.zero_variance_groups.value] = _div(s.groups_zero_variance, s.groups)
    return out


def step_sums(
    trajs: list[RlTrajectory],
    breakdowns: list[RewardBreakdown],
    group_size: int,
    io: AgentIO,
    retok: list[bool],
    drift: list[bool] | None = None,
) -> dict[str, float]:
    """An RL step's sums (StepSums) as the dict the stage adds its update's sums to and all-reduces: the graded ones
    (GRPO groups are consecutive runs of `group_size`) and the trajectories'."""
    s = StepSums()
    graded_sums(breakdowns, [i // group_size for i in range(len(breakdowns))], into=s)
    drift = drift or [False] * len(trajs)
    # format codes that mean a tool call itself was malformed (marked toolCall in src/core/codes.ts)
    call_codes = set(codes_table().tool_call_codes)
    for tr, b, bad, dr in zip(trajs, breakdowns, retok, drift):
        s.calls += len(tr.queries)
        s.failures += tr.tool_failures
        attempted = b.tool_calls > 0 or bool(tr.queries)
        s.called += float(attempted)
        s.malformed += float(attempted and bool(call_codes.intersection(b.violations)))
        s.truncated += float(tr.truncated)
        s.gen_tokens += sum(tr.loss_mask)
        s.think_tokens += io.think_tokens(tr.ids, tr.loss_mask)
        s.retok_mismatches += float(bad)
        s.retok_drift += float(dr)
    return asdict(s)


def step_values(sums: dict[str, float]) -> dict[str, Any]:
    """The step's agent metrics from its (all-reduced) sums."""
    s = StepSums.read(sums)
    n = s.n
    return {
        **graded_values(s),
        M.tool_failure_rate.value: _div(s.failures, s.calls) if s.calls else 0.0,
        M.malformed_call_rate.value: _div(s.malformed, s.called) if s.called else 0.0,
        M.truncation_ratio.value: _div(s.truncated, n),
        M.response_len.value: _div(s.gen_tokens, n),
        M.think_len.value: _div(s.think_tokens, n),
        M.retok_mismatches.value: s.retok_mismatches,
        M.retok_drift_rate.value: _div(s.retok_drift, n),
        **logprob_diff_values(sums),
    }


def logprob_diff_counts(s: dict[str, float]) -> list[int]:
    """The histogram of |sampler − trainer| log-probs the update measured (`lpd_bin<i>`: algos/grpo.py)."""
    n = sum(1 for k in s if k.startswith("lpd_bin"))
    return [int(s[f"lpd_bin{i}"]) for i in range(n)]


def logprob_diff_values(s: dict[str, float]) -> dict[str, float | None]:
    """Mean and largest |sampler − trainer| log-prob per trained token (None where the step measured none)."""
    tokens = sum(logprob_diff_counts(s))
    return {
        M.logprob_diff_mean.value: _div(s.get("lpd_sum", 0.0), tokens),
        M.logprob_diff_max.value: s.get("lpd_max") if tokens else None,
    }
