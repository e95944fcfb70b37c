# Generated from src/core/metrics.ts (AGENT_METRICS) by scripts/gen-python-contracts.mjs (datamodel-code-generator): do not edit.

from __future__ import annotations

from enum import Enum


class AgentMetric(str, Enum):
    reward_mean = "reward_mean"
    reward_std = "reward_std"
    em = "em"
    f1 = "f1"
    tc = "tc"
    tp = "tp"
    format_error_rate = "format_error_rate"
    tool_failure_rate = "tool_failure_rate"
    malformed_call_rate = "malformed_call_rate"
    truncation_ratio = "truncation_ratio"
    all_correct_groups = "all_correct_groups"
    all_wrong_groups = "all_wrong_groups"
    zero_variance_groups = "zero_variance_groups"
    response_len = "response_len"
    think_len = "think_len"
    retok_mismatches = "retok_mismatches"
    retok_drift_rate = "retok_drift_rate"
    logprob_diff_mean = "logprob_diff_mean"
    logprob_diff_max = "logprob_diff_max"
    trajectories = "trajectories"
