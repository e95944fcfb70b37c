"""A collection's report (stages/collect/report.json and report.md): kept and dropped by reason, by mode, what an SFT
epoch takes of the kept data, the SFT-1 pairs built from it (the core's pair builder's report), the teacher's request
counts."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from .collect_settings import CollectSettings


@dataclass
class ModeCounts:
    collected: int = 0
    correct: int = 0
    kept: int = 0
    with_tools: int = 0


@dataclass
class SftMix:
    """What sft_mix_stream does with the kept data (data/samples.py): every CoA trajectory, CoT ones at
    coa_cot_ratio : 1."""

    with_tools: int
    tool_free: int
    coa_cot_ratio: float
    tool_free_per_epoch: int


@dataclass
class PairsReport:
    """The core's pair builder's report (`coa data prepare pairs --report`, PairReport in src/core/data/pairs.ts),
    kept as it came (`raw`) for report.json, with the fields report.md reads; or only an error when none was built."""

    raw: dict[str, object] = field(default_factory=dict)
    pairs: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    skipped_questions: dict[str, int] = field(default_factory=dict)
    error: str | None = None

    @staticmethod
    def parse(text: str) -> PairsReport:
        raw = json.loads(text)
        return PairsReport(
            raw=raw,
            pairs=int(raw.get("pairs", 0)),
            by_kind=dict(raw.get("by_kind", {})),
            skipped_questions=dict(raw.get("skipped_questions", {})),
        )

    @staticmethod
    def failed(error: str) -> PairsReport:
        return PairsReport(raw={"pairs": 0, "error": error}, error=error)


@dataclass
class CollectReport:
    collected: int
    questions: int
    kept: int
    dropped: dict[str, int]
    failed_samples: int
    empty_responses: int
    by_mode: dict[str, ModeCounts]
    questions_with_kept: int
    sft_mix: SftMix
    pairs: PairsReport
    teacher: dict[str, float]

    def to_json(self) -> dict[str, object]:
        return {
            "collected": self.collected,
            "questions": self.questions,
            "kept": self.kept,
            "dropped": self.dropped,
            "failed_samples": self.failed_samples,
            "empty_responses": self.empty_responses,
            "by_mode": {m: asdict(c) for m, c in self.by_mode.items()},
            "questions_with_kept": self.questions_with_kept,
            "sft_mix": asdict(self.sft_mix),
            "pairs": self.pairs.raw,
            "teacher": self.teacher,
        }


DROP_WORDS = {
    "incorrect": "wrong answer (rejection sampling)",
    "format": "format-rule error",
    "too_many_tool_calls": "more tool calls than allowed",
    "duplicate": "same response as a kept one",
}


def report_markdown(report: CollectReport, settings: CollectSettings) -> str:
    s = settings.sampling
    lines = [
        f"# Collection — {settings.teacher.describe()}",
        "",
        (
            f"{report.collected} trajectories of {report.questions} questions ({', '.join(settings.modes)}; "
            f"K = {settings.samples}, temperature {s.temperature}), graded by the "
            f"environment server (scheme {settings.reward.scheme})."
        ),
        "",
        f"**Kept: {report.kept}** ({report.questions_with_kept} questions).",
        "",
        "| dropped because | trajectories |",
        "|---|---|",
    ]
    lines += [f"| {DROP_WORDS[k]} | {v} |" for k, v in report.dropped.items()]
    empty = report.empty_responses
    if report.failed_samples - empty:
        lines += [
            f"| teacher failed (retries spent; `--resume` samples them again) | {report.failed_samples - empty} |"
        ]
    if empty:
        lines += [f"| teacher answered nothing (empty response; `--resume` samples them again) | {empty} |"]
    lines += ["", "| mode | collected | correct | with tools | kept |", "|---|---|---|---|---|"]
    lines += [f"| {m} | {v.collected} | {v.correct} | {v.with_tools} | {v.kept} |" for m, v in report.by_mode.items()]
    mix = report.sft_mix
    lines += [
        "",
        (
            f"SFT-2/3 data: {mix.with_tools} trajectories with tool calls (CoA) and {mix.tool_free} "
            f"without (CoT); at coa_cot_ratio {mix.coa_cot_ratio:g} an epoch takes every CoA one and "
            f"{mix.tool_free_per_epoch} CoT ones."
        ),
    ]
    p = report.pairs
    if p.pairs:
        kinds = ", ".join(f"{k} {v}" for k, v in p.by_kind.items() if v)
        lines += ["", f"SFT-1 pairs: {p.pairs} ({kinds}); questions skipped: {json.dumps(p.skipped_questions)}."]
    else:
        lines += ["", f"SFT-1 pairs: none ({p.error or 'no question has both a correct and a wrong trajectory'})."]
    if report.teacher:
        lines += ["", "Teacher requests: " + ", ".join(f"{k} {v:g}" for k, v in report.teacher.items() if v) + "."]
    return "\n".join(lines) + "\n"
