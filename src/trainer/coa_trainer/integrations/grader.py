"""The CoA grader for other engines' reward hooks: the environment server's POST /v1/grade (rewards and format rules
live in src/core only), found through the environment:

- COA_ENV_URL   the server with its per-run token in the path, as `coa env serve` prints it (`token_url`):
                http://127.0.0.1:PORT/t/<token>  — or the bare http://127.0.0.1:PORT with COA_ENV_TOKEN set
- COA_ENV_TOKEN the token, when it is not in the URL
- COA_REWARD_SCHEME, COA_REWARD_PARAMS (JSON), COA_REWARD_RUN: defaults for the scheme, its parameters and the
                OTC-GRPO run id when the caller passes none

One client per process (verl calls the reward once per sample, from several threads)."""

from __future__ import annotations

import json
import os
import threading
from typing import Any

from ..base.options import EnvTarget
from ..contracts.record import RewardBreakdown
from ..env.client import EnvClient, EnvError
from ..env.session import connect_env

_lock = threading.Lock()
_client: EnvClient | None = None


def grader() -> EnvClient:
    global _client
    with _lock:
        if _client is None:
            url = os.environ.get("COA_ENV_URL", "").strip()
            if not url:
                raise EnvError(
                    "COA_ENV_URL is not set: start `coa env serve --corpus …` and export its token_url "
                    "(http://127.0.0.1:PORT/t/<token>) as COA_ENV_URL (docs/integrations.md)"
                )
            _client = connect_env(EnvTarget.given(url))  # the token: COA_ENV_TOKEN, unless the url carries it
        return _client


class RewardCallError(ValueError):
    """A reward hook was called in a way that cannot give the configured scheme's reward exactly (one class for the
    module and for its copy that verl loads by file path)."""


def golden_list(ground_truth: Any) -> list[str]:
    """verl's `reward_model.ground_truth` as golden answers: a string, a list (numpy arrays from parquet included) or
    Search-R1's {"target": [...]}."""
    if hasattr(ground_truth, "tolist"):
        ground_truth = ground_truth.tolist()
    if isinstance(ground_truth, dict) and "target" in ground_truth:
        return golden_list(ground_truth["target"])
    if ground_truth is None:
        return []
    if isinstance(ground_truth, (list, tuple)):
        return [str(g) for g in ground_truth]
    return [str(ground_truth)]


def reward_settings(scheme: str | None, params: dict | None, run: str | None) -> tuple[str, dict, str | None]:
    scheme = scheme or os.environ.get("COA_REWARD_SCHEME") or "em"
    if params is None:
        raw = os.environ.get("COA_REWARD_PARAMS")
        loaded: dict = json.loads(raw) if raw else {}
        params = loaded
    return scheme, dict(params), run or os.environ.get("COA_REWARD_RUN") or None


def flat_breakdown(b: RewardBreakdown) -> dict[str, float | int | str]:
    """The grader's breakdown as flat numbers and strings (verl averages every numeric key of its reward_extra_info
    and skips strings; a list or None would break its validation metrics): score, em, f1, format_ok (0/1),
    format_codes ("COA005,COA009"), tool_calls, optimal_tool_calls (-1: unknown), r_tool, r_correct, scheme."""
    n = b.optimal_tool_calls
    return {
        "score": float(b.total),
        "em": float(b.em),
        "f1": float(b.f1),
        "format_ok": int(bool(b.format_ok)),
        "format_codes": ",".join(b.violations),
        "tool_calls": int(b.tool_calls),
        "optimal_tool_calls": int(n) if n is not None else -1,
        "r_tool": float(b.r_tool),
        "r_correct": float(b.r_correct),
        "scheme": str(b.scheme),
    }
