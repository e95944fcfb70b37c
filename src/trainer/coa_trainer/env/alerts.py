"""RL alerts on the metric series, computed by the core (src/core/alerts.ts: the rules, their thresholds and the
edge-triggering live there only) through the environment server's POST /v1/alerts. This class keeps the monitor
state between steps and in checkpoints; the server is stateless. Used by the RL stages and the TRL callback
(integrations/trl.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..contracts.env_protocol import Alert
from .client import EnvClient


@dataclass
class AlertMonitor:
    thresholds: dict[str, float]
    env: EnvClient  # the grader's server is up whenever alerts are computed
    state: dict[str, Any] | None = None
    _heldout: float | None = field(default=None, repr=False)

    def observe_heldout(self, em: float) -> None:
        """A held-out EM for the reward-hacking rule; sent with the next update."""
        self._heldout = float(em)

    def update(self, step: int, values: dict[str, Any]) -> list[Alert]:
        # JSON has no NaN: only finite numbers travel (the core ignores anything else anyway).
        finite = {
            k: float(v)
            for k, v in values.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        }
        answer = self.env.alerts(step, finite, self.thresholds, self.state, self._heldout)
        self._heldout = None
        self.state = answer.state
        return answer.alerts

    def state_dict(self) -> dict[str, Any]:
        return self.state or {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        # the server also reads the whole-history state of checkpoints written before the rules moved to the core
        self.state = state or None
