"""RL alerts on the metric series (kinds of src/core/events.ts). Each rule compares the mean of the last `window`
steps with a baseline (the mean of the first `window` steps) or a fixed threshold. Alerts are edge-triggered: one
alert when a condition starts to hold, re-armed once it stops holding — a 300-step run does not get 300 alerts.

- tool_call_explosion: mean tool calls > factor × baseline (baseline 0: > 1 call per trajectory)
- think_collapse:      mean think length < factor × baseline (baseline > 0)
- all_wrong_groups:    fraction of groups with no correct sample > threshold
- tool_failures:       tool-failure rate > threshold
- reward_hacking:      reward up (current − baseline > 0.05) while the format-error rate rises (> baseline + 0.05)
                       or held-out EM falls (latest < first − 0.05)"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MARGIN = 0.05


@dataclass
class Alert:
    kind: str
    severity: str
    message: str


@dataclass
class AlertMonitor:
    thresholds: dict[str, float]
    history: dict[str, list[float]] = field(default_factory=dict)
    heldout: list[float] = field(default_factory=list)
    active: set[str] = field(default_factory=set)

    @property
    def window(self) -> int:
        return int(self.thresholds.get("window", 5))

    def _base(self, key: str) -> float | None:
        xs = self.history.get(key, [])
        return sum(xs[: self.window]) / self.window if len(xs) >= 2 * self.window else None

    def _now(self, key: str) -> float | None:
        xs = self.history.get(key, [])
        return sum(xs[-self.window:]) / len(xs[-self.window:]) if xs else None

    def observe_heldout(self, em: float) -> None:
        self.heldout.append(em)

    def update(self, step: int, values: dict[str, Any]) -> list[Alert]:
        for k, v in values.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                self.history.setdefault(k, []).append(float(v))
        th = self.thresholds
        checks: dict[str, tuple[bool, str, str]] = {}

        tc0, tc = self._base("tc"), self._now("tc")
        if tc0 is not None and tc is not None:
            limit = th["tool_call_explosion"] * tc0 if tc0 > 0 else 1.0
            checks["tool_call_explosion"] = (tc > limit, "warning",
                                             f"tool calls per trajectory {tc:.2f} vs {tc0:.2f} at the start")
        th0, thk = self._base("think_len"), self._now("think_len")
        if th0 is not None and thk is not None and th0 > 0:
            checks["think_collapse"] = (thk < th["think_collapse"] * th0, "warning",
                                        f"think length {thk:.1f} tokens vs {th0:.1f} at the start")
        aw = self._now("all_wrong_groups")
        if aw is not None:
            checks["all_wrong_groups"] = (aw > th["all_wrong_groups"], "warning",
                                          f"{aw:.0%} of groups have no correct sample (no learning signal)")
        tf = self._now("tool_failure_rate")
        if tf is not None:
            checks["tool_failures"] = (tf > th["tool_failure_rate"], "error", f"tool-failure rate {tf:.0%}")
        r0, r = self._base("reward_mean"), self._now("reward_mean")
        if r0 is not None and r is not None:
            f0, f = self._base("format_error_rate"), self._now("format_error_rate")
            fmt_up = f0 is not None and f is not None and f > f0 + MARGIN
            em_down = len(self.heldout) >= 2 and self.heldout[-1] < self.heldout[0] - MARGIN
            why = "format errors rise" if fmt_up else "held-out EM falls"
            checks["reward_hacking"] = (r > r0 + MARGIN and (fmt_up or em_down), "warning",
                                        f"reward {r0:.2f} → {r:.2f} while {why}")

        out = []
        for kind, (hit, severity, message) in checks.items():
            if hit and kind not in self.active:
                self.active.add(kind)
                out.append(Alert(kind, severity, f"step {step}: {message}"))
            elif not hit:
                self.active.discard(kind)
        return out

    def state_dict(self) -> dict:
        return {"history": self.history, "heldout": self.heldout, "active": sorted(self.active)}

    def load_state_dict(self, state: dict) -> None:
        self.history = {k: list(v) for k, v in state.get("history", {}).items()}
        self.heldout = list(state.get("heldout", []))
        self.active = set(state.get("active", []))
