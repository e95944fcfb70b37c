"""The results table over several seeds (`pipeline --seeds N`): mean ± sd per row and the per-seed rows, and what
the seed-level evidence says about the papers' claims ("OTC cuts TC on 3/3 seeds; EM within 0.02 on 2/3").

Input: each seed's results.json (evaluation/results.py: `rows`, `tc_optimal`). A seed is one whole pipeline with its own
knowledge base, questions and models, so the spread is the spread a user would see by changing the seed. sd is the
sample standard deviation (n − 1); with one seed it is undefined (None, shown as —)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from ..evaluation.claims import ResultRow, RunTable, mean_sd, verdict_lines
from ..evaluation.results import DESCRIPTIONS, SETTINGS, headroom_json, otc_headroom

__all__ = [
    "SeedResult",
    "SeedRow",
    "aggregate_rows",
    "load_seed_results",
    "mean_sd",
    "seed_verdicts",
    "write_seed_results",
]


@dataclass(frozen=True)
class SeedResult:
    """One seed's results table as the summary over seeds reads it (and writes it back under `per_seed`)."""

    seed: int
    run_dir: str
    rows: list[ResultRow]
    tc_optimal: float | None
    split: str | None


@dataclass(frozen=True)
class SeedRow:
    """One setting over seeds (results.json's `rows` over seeds): each measure's mean and sample sd, and on how many
    seeds it has an EM. Written as these keys in this order."""

    setting: str
    em: float | None
    em_sd: float | None
    tc: float | None
    tc_sd: float | None
    tp: float | None
    tp_sd: float | None
    format_error_rate: float | None
    format_error_rate_sd: float | None
    seeds: int

    @property
    def cells(self) -> list[tuple[float | None, float | None]]:
        """(mean, sd) of em, tc, tp and format_error_rate: the table's columns."""
        return [
            (self.em, self.em_sd),
            (self.tc, self.tc_sd),
            (self.tp, self.tp_sd),
            (self.format_error_rate, self.format_error_rate_sd),
        ]


def aggregate_rows(per_seed: list[SeedResult]) -> list[SeedRow]:
    """One row per setting (in the table's order): each measure's mean and sd, and the seeds with an EM."""
    order = [s for s, _, _ in SETTINGS]
    present = {r.setting for p in per_seed for r in p.rows}
    order += sorted(present - set(order))  # a setting this module does not know still gets its row
    rows = []
    for setting in order:
        if setting not in present:
            continue
        mine = [next((r for r in p.rows if r.setting == setting), ResultRow(setting)) for p in per_seed]
        em, em_sd, seeds = mean_sd([r.em for r in mine])
        tc, tc_sd, _ = mean_sd([r.tc for r in mine])
        tp, tp_sd, _ = mean_sd([r.tp for r in mine])
        fer, fer_sd, _ = mean_sd([r.format_error_rate for r in mine])
        rows.append(SeedRow(setting, em, em_sd, tc, tc_sd, tp, tp_sd, fer, fer_sd, seeds))
    return rows


def seed_verdicts(per_seed: list[SeedResult]) -> list[str]:
    """Sentences from the seed-level evidence (evaluation/claims.py): on how many seeds each claim holds, the seeds
    where it fails, the mean ± sd of its measure and each seed's value."""
    return verdict_lines(
        [RunTable(p.rows, p.tc_optimal) for p in per_seed], [f"seed {p.seed}" for p in per_seed], "seeds"
    )


def _cell(m: float | None, sd: float | None) -> str:
    if m is None:
        return "—"
    return f"{m:.3f} ± {sd:.3f}" if sd is not None else f"{m:.3f}"


def load_seed_results(run_dir: Path, seed: int) -> SeedResult:
    table = RunTable.of(doc := json.loads((run_dir / "results.json").read_text(encoding="utf-8")))
    return SeedResult(seed, str(run_dir), table.rows, table.tc_optimal, doc.get("split"))


def write_seed_results(
    run_dir: Path, per_seed: list[SeedResult], split: str, questions: int | None
) -> tuple[Path, Path]:
    """results.json (`rows` = means, with `<key>_sd`; `per_seed`; `verdicts`) and results.md in run_dir."""
    rows = aggregate_rows(per_seed)
    verdicts = seed_verdicts(per_seed)
    heads = {p.seed: otc_headroom(p.rows, p.tc_optimal) for p in per_seed}
    doc = {
        "rows": [asdict(r) for r in rows],
        "split": split,
        "seeds": [p.seed for p in per_seed],
        "per_seed": [{**asdict(p), "otc_headroom": headroom_json(heads[p.seed])} for p in per_seed],
        "verdicts": verdicts,
    }
    json_path, md_path = run_dir / "results.json", run_dir / "results.md"
    json_path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")

    n = f"{questions} questions" if questions else "all questions"
    seeds = ", ".join(str(p.seed) for p in per_seed)
    table = ["| setting | EM | TC | TP | format errors |", "|---|---|---|---|---|"]
    table += [f"| {r.setting} | " + " | ".join(_cell(m, sd) for m, sd in r.cells) + " |" for r in rows]
    per = ["| seed | setting | EM | TC | TP | format errors |", "|---|---|---|---|---|---|"]
    per += [
        f"| {p.seed} | {r.setting} | " + " | ".join(_cell(v, None) for v in r.measures) + " |"
        for p in per_seed
        for r in p.rows
    ]
    gap = ["| seed | optimal TC | RL-2 TC | OTC TC | gap | closed |", "|---|---|---|---|---|---|"]
    gap += [
        f"| {s} | {h.tc_optimal:.3f} | {h.tc_rl2:.3f} | {h.tc_otc:.3f} | {h.gap:+.3f} | "
        f"{'—' if h.closed is None else format(h.closed, '.0%')} |"
        for s, h in heads.items()
        if h
    ]
    settings = [r.setting for r in rows]  # aggregate_rows gives each setting one row
    notes = [f"- **{s}**: {DESCRIPTIONS[s]}." for s in settings if s in DESCRIPTIONS]
    intro = (
        f"Split: {split} ({n} per seed); seeds {seeds}. Each seed is a whole pipeline in seed-<s>/ with its own "
        "knowledge base, question split and models (the seeds share nothing but code). Cells: mean ± sample sd "
        "over seeds; greedy decoding; graded by the environment server (scheme em). TC = tool calls per "
        "question; TP = correct answers per tool call (OTC-PO); format errors = share of trajectories with a "
        "format-rule error."
    )
    md = [
        f"# Results — {run_dir.name} ({len(per_seed)} seeds)",
        "",
        intro,
        "",
        *table,
        "",
        "## Measured, seed by seed",
        "",
        *(verdicts or ["- (not enough rows to compare)"]),
        "",
    ]
    if len(gap) > 2:
        gap_note = (
            "gap = TC of the RL-2 agent − the benchmark's optimal TC on the same questions; closed = the share "
            "of it OTC-GRPO removes."
        )
        md += ["## Over-calling gap", "", gap_note, "", *gap, ""]
    md += ["## Per seed", "", *per, "", "## Rows", "", *notes, ""]
    md_path.write_text("\n".join(md), encoding="utf-8")
    return json_path, md_path
