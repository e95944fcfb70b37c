"""The papers' claims as numbers: per run, whether each holds and by how much; over runs, on how many it holds and
the mean ± sd of its measure. One place for the claim arithmetic, read by the multi-seed results
(evaluation/seed_results.py), bench/fidelity (seeds × thread counts) and the demo's verdict (a run's own value set
against the spread bench/fidelity measured).

A run is one results table (evaluation/results.py rows + the benchmark's optimal TC). Each claim has a measure:
- chain: EM(no tool) < EM(workflow) < EM(SFT-1+2) ≤ EM(SFT+RL) (AutoCoA's ordering); measure = the smallest of the
  three EM differences (how much the weakest link holds by);
- agent_beats_workflow / rl_over_sft: EM differences;
- otc_cuts_tc: OTC-GRPO's relative cut in tool calls vs RL-2 (holds from 5 %: less is what another sampling seed
  moves TC by on 133 questions);
- otc_keeps_em: EM(OTC) − EM(RL-2), holds within −0.02;
- otc_closes_gap: the share of the over-calling gap (TC of RL-2 − the benchmark's optimal TC) OTC-GRPO removes,
  holds from 50 % (None when RL-2 does not over-call or there is no optimum);
- otc_raises_tp: TP(OTC) − TP(RL-2), holds above 0."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Callable

from pydantic import TypeAdapter

TC_CUT = 0.05
EM_KEPT = 0.02
GAP_TARGET = 0.5


ROW_KEYS = ("em", "tc", "tp", "format_error_rate")  # a results row's measures, in the table's column order


@dataclass(frozen=True)
class ResultRow:
    """One row of a results table (results.json's `rows`): a setting and its measures, None where unmeasured (no
    model, or a measure the setting does not define). Written as these keys in this order."""

    setting: str
    em: float | None = None
    tc: float | None = None
    tp: float | None = None
    format_error_rate: float | None = None

    @classmethod
    def of_metrics(cls, setting: str, metrics: Mapping[str, float | None]) -> ResultRow:
        """The row of an evaluation's metrics (name → value, as its `eval` event carries them)."""
        em, tc, tp, fer = (metrics.get(k) for k in ROW_KEYS)
        return cls(setting, em, tc, tp, fer)

    @property
    def measures(self) -> tuple[float | None, float | None, float | None, float | None]:
        """em, tc, tp and format_error_rate: the table's columns (ROW_KEYS)."""
        return self.em, self.tc, self.tp, self.format_error_rate


@dataclass(frozen=True)
class RunTable:
    """One run's results table as the claims read it: its rows and the benchmark's optimal TC."""

    rows: list[ResultRow]
    tc_optimal: float | None = None

    @classmethod
    def of(cls, doc: object) -> RunTable:
        """From results.json's data (or anything with its `rows` and `tc_optimal`), validated once
        (pydantic's ValidationError, a ValueError, names what is wrong)."""
        return _RUN_TABLE.validate_python(doc)


_RUN_TABLE = TypeAdapter(RunTable)

Measure = Callable[[ResultRow], float | None]


def em_of(r: ResultRow) -> float | None:
    return r.em


def tc_of(r: ResultRow) -> float | None:
    return r.tc


def tp_of(r: ResultRow) -> float | None:
    return r.tp


@dataclass(frozen=True)
class Claim:
    id: str
    text: str  # the claim, as a verdict names it
    unit: str  # how its measure is shown: "em" (±0.000), "share" (percent)
    measure_name: str
    measure: Callable[[dict[str, ResultRow], float | None], float | None]
    holds: Callable[[float, dict[str, ResultRow]], bool]

    def on(self, by: dict[str, ResultRow], tc_optimal: float | None) -> ClaimResult:
        """This claim on one results table (its rows by setting)."""
        v = self.measure(by, tc_optimal)
        return ClaimResult(v, None if v is None else self.holds(v, by), fmt(v, self.unit))


def _get(by: dict[str, ResultRow], setting: str, measure: Measure = em_of) -> float | None:
    row = by.get(setting)
    v = None if row is None else measure(row)
    return None if v is None else float(v)


def _diff(a: str, b: str, measure: Measure = em_of) -> Callable[[dict[str, ResultRow], float | None], float | None]:
    def diff(by: dict[str, ResultRow], _opt: float | None) -> float | None:
        x, y = _get(by, a, measure), _get(by, b, measure)
        return None if x is None or y is None else x - y

    return diff


def _chain(by: dict[str, ResultRow], _opt: float | None) -> float | None:
    ems = [_get(by, s) for s in ("no-tool", "workflow", "sft12", "sft-rl")]
    if any(e is None for e in ems):
        return None
    return min(b - a for a, b in zip(ems, ems[1:]))  # type: ignore[operator]


def _chain_holds(_v: float, by: dict[str, ResultRow]) -> bool:
    nt, wf, sft, rl = (_get(by, s) for s in ("no-tool", "workflow", "sft12", "sft-rl"))
    return nt < wf < sft <= rl  # type: ignore[operator]


def _cut(by: dict[str, ResultRow], _opt: float | None) -> float | None:
    tc, otc = _get(by, "sft-rl", tc_of), _get(by, "sft-rl-otc", tc_of)
    return None if tc is None or otc is None or not tc else 1 - otc / tc


def gap_closed(by: dict[str, ResultRow], tc_optimal: float | None) -> float | None:
    tc, otc = _get(by, "sft-rl", tc_of), _get(by, "sft-rl-otc", tc_of)
    if tc_optimal is None or tc is None or otc is None or tc - tc_optimal <= 0:
        return None
    return (tc - otc) / (tc - tc_optimal)


OTC_CUTS_TC = Claim(
    "otc_cuts_tc", f"OTC-GRPO cuts tool calls (by ≥ {TC_CUT:.0%})", "share", "cut", _cut, lambda v, _: v >= TC_CUT
)
OTC_KEEPS_EM = Claim(
    "otc_keeps_em",
    f"OTC-GRPO keeps EM (within {EM_KEPT} of RL-2)",
    "em",
    "EM difference",
    _diff("sft-rl-otc", "sft-rl"),
    lambda v, _: v >= -EM_KEPT,
)
CLAIMS: list[Claim] = [
    Claim("chain", "EM(no tool) < EM(workflow) < EM(SFT-1+2) ≤ EM(SFT+RL)", "em", "weakest link", _chain, _chain_holds),
    Claim(
        "agent_beats_workflow",
        "the trained agent beats the always-search workflow",
        "em",
        "EM difference",
        _diff("sft-rl", "workflow"),
        lambda v, _: v > 0,
    ),
    Claim(
        "rl_over_sft",
        "SFT-3 + RL is at least SFT-1+2",
        "em",
        "EM difference",
        _diff("sft-rl", "sft12"),
        lambda v, _: v >= 0,
    ),
    OTC_CUTS_TC,
    OTC_KEEPS_EM,
    Claim(
        "otc_closes_gap",
        f"OTC-GRPO closes ≥ {GAP_TARGET:.0%} of the over-calling gap (TC of RL-2 − the benchmark's optimal TC)",
        "share",
        "closed",
        gap_closed,
        lambda v, _: v >= GAP_TARGET,
    ),
    Claim(
        "otc_raises_tp",
        "tool productivity (correct answers per call) rises with OTC-GRPO",
        "em",
        "TP difference",
        _diff("sft-rl-otc", "sft-rl", tp_of),
        lambda v, _: v > 0,
    ),
]


@dataclass(frozen=True)
class ClaimResult:
    """One claim on one run: its measure (None where a row is missing), whether it holds, the measure as shown."""

    value: float | None
    holds: bool | None
    shown: str


UNMEASURED = ClaimResult(None, None, "—")


def by_setting(rows: list[ResultRow]) -> dict[str, ResultRow]:
    """A results table's rows by their setting (each setting has one row)."""
    return {r.setting: r for r in rows}


def claim_results(rows: list[ResultRow], tc_optimal: float | None) -> dict[str, ClaimResult]:
    """Each claim (by id) on one results table."""
    by = by_setting(rows)
    return {c.id: c.on(by, tc_optimal) for c in CLAIMS}


def run_claims(rows: list[ResultRow], tc_optimal: float | None) -> dict[str, dict]:
    """{claim id: {"value": measure or None, "holds": bool or None, "shown": the measure formatted}} for one results
    table (results.json carries it; the demo prints `shown` next to bench/fidelity's spread)."""
    return {k: asdict(v) for k, v in claim_results(rows, tc_optimal).items()}


def mean_sd(values: list[float | None]) -> tuple[float | None, float | None, int]:
    """Mean and sample sd (n − 1) of the values that are not None, and how many there were."""
    xs = [float(v) for v in values if v is not None]
    if not xs:
        return None, None, 0
    m = sum(xs) / len(xs)
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else None
    return m, sd, len(xs)


@dataclass(frozen=True)
class ClaimSpread:
    """One claim over runs: on how many it holds (of the runs where it was measured), the mean ± sd of its measure,
    the runs where it fails, each run's value."""

    id: str
    text: str
    unit: str
    measure: str
    holds: int
    runs: int
    mean: float | None
    sd: float | None
    failing: list[str]
    values: list[float | None]

    @property
    def spread(self) -> str:
        """ "70 ± 15%" / "+0.012 ± 0.020" (sd only from two runs on)."""
        if self.mean is None:
            return "—"
        if self.unit == "share":
            return f"{self.mean * 100:.0f} ± {self.sd * 100:.0f}%" if self.sd is not None else f"{self.mean:.0%}"
        return f"{self.mean:+.3f} ± {self.sd:.3f}" if self.sd is not None else f"{self.mean:+.3f}"

    def json(self) -> dict[str, Any]:
        return {**asdict(self), "spread": self.spread}


def claim_spreads(per_run: list[dict[str, ClaimResult]], labels: list[str]) -> list[ClaimSpread]:
    """Per claim over runs (each `claim_results` output, named by `labels`)."""
    out = []
    for c in CLAIMS:
        cells = [r.get(c.id, UNMEASURED) for r in per_run]
        known = [x.holds for x in cells if x.holds is not None]
        m, sd, _ = mean_sd([x.value for x in cells])
        out.append(
            ClaimSpread(
                c.id,
                c.text,
                c.unit,
                c.measure_name,
                sum(known),
                len(known),
                m,
                sd,
                [lab for lab, x in zip(labels, cells) if x.holds is False],
                [x.value for x in cells],
            )
        )
    return out


def spread(per_run: list[dict[str, dict]], labels: list[str]) -> list[dict]:
    """`claim_spreads` over runs' `run_claims` outputs (results.json's claims), as JSON data: per claim on how many
    it holds, the mean ± sd of its measure (and formatted: `spread`), and the runs where it fails."""
    typed = [{k: ClaimResult(**v) for k, v in r.items()} for r in per_run]
    return [s.json() for s in claim_spreads(typed, labels)]


def fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    return f"{value:.0%}" if unit == "share" else f"{value:+.3f}"


def chain_breaks(rows: list[ResultRow]) -> list[str]:
    """The links of EM(no tool) < EM(workflow) < EM(SFT-1+2) ≤ EM(SFT+RL) that do not hold in one results table."""
    by = by_setting(rows)
    chain = ("no-tool", "workflow", "sft12", "sft-rl")
    ems = [e for e in (_get(by, s) for s in chain) if e is not None]
    if len(ems) < len(chain):
        return []
    return [
        f"{a} {x:.3f} {'>' if i == 2 else '≥'} {b} {y:.3f}"
        for i, (a, b, x, y) in enumerate(zip(chain, chain[1:], ems, ems[1:]))
        if (x > y if i == 2 else x >= y)
    ]


def verdict_lines(tables: list[RunTable], labels: list[str], noun: str) -> list[str]:
    """One sentence per claim over runs: on how many `noun` it holds (naming where it fails, and for the chain the
    links that break), the mean ± sd of its measure and each run's value."""
    per_run = [claim_results(t.rows, t.tc_optimal) for t in tables]
    lines = []
    for s in claim_spreads(per_run, labels):
        if not s.runs:
            continue
        failing = f" (not on {', '.join(s.failing)})" if s.failing else ""
        values = ", ".join(f"{lab}: {fmt(v, s.unit)}" for lab, v in zip(labels, s.values))
        line = (
            f"- {s.text[0].upper()}{s.text[1:]} on {s.holds}/{s.runs} {noun}{failing}: "
            f"{s.measure} {s.spread} ({values})"
        )
        if s.id == "chain":
            broken = [f"{lab}: {', '.join(b)}" for lab, t in zip(labels, tables) if (b := chain_breaks(t.rows))]
            line += f"; broken links — {'; '.join(broken)}" if broken else ""
        if s.id == "otc_keeps_em" and s.mean is not None:
            line += f"; on average OTC {'keeps' if s.mean >= -EM_KEPT else 'does NOT keep'} EM"
        lines.append(line + ".")
    return lines
