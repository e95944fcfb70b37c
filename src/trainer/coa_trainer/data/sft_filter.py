"""data.sft_filter: which of the user's (or a collection's) trajectories SFT-2/3 train on. The flags are the core's
(`coa data prepare sft` writes each trajectory's dialect, `format_ok` and `correct`); this only chooses, counts and
says so — a stage never trains on wrong answers, broken formats or a mix of dialects' tags without a word."""

from __future__ import annotations

from dataclasses import dataclass, field
from ..base.errors import StageError
from ..contracts.run_config import SftFilter
from .prepared import SftRecord


@dataclass
class Dropped:
    """Trajectories dropped, by the first check each failed."""

    dialect: int = 0
    format: int = 0
    incorrect: int = 0


@dataclass
class SftFilterReport:
    given: int = 0
    kept: int = 0
    dialect: str | None = None  # the dialect kept (None: any, and the data had none)
    dropped: Dropped = field(default_factory=Dropped)
    other_dialects: dict[str, int] = field(default_factory=dict)
    ungraded: int = 0  # kept without golden answers: not graded

    def line(self, stage: str) -> str:
        why = ", ".join(
            f"{n} {what}"
            for what, n in (
                (
                    "in other dialects" + (f" ({_counts(self.other_dialects)})" if self.other_dialects else ""),
                    self.dropped.dialect,
                ),
                ("with format errors", self.dropped.format),
                ("with a wrong answer", self.dropped.incorrect),
            )
            if n
        )
        ungraded = f"; {self.ungraded} kept ungraded (no golden answers)" if self.ungraded else ""
        return (
            f"{stage} data: {self.kept} of {self.given} trajectories kept by data.sft_filter"
            f"{f' (dialect {self.dialect})' if self.dialect else ''}; dropped: {why or 'none'}{ungraded}"
        )


def _counts(by: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(by.items()))


def filter_sft(
    records: list[SftRecord], flt: SftFilter, run_dialect: str, stage: str
) -> tuple[list[SftRecord], SftFilterReport]:
    """(kept records, report). A record is dropped for the first check it fails: dialect, format, answer. Raises a
    StageError when nothing is left, or when `dialect: any` would mix dialects in one stage."""
    want = run_dialect if flt.dialect == "run" else None if flt.dialect == "any" else flt.dialect
    report = SftFilterReport(given=len(records), dialect=want)
    kept = []
    for r in records:
        if want is not None and r.dialect != want:
            report.dropped.dialect += 1
            report.other_dialects[r.dialect] = report.other_dialects.get(r.dialect, 0) + 1
        elif flt.format_ok and not r.format_ok:
            report.dropped.format += 1
        elif flt.correct and r.correct is False:
            report.dropped.incorrect += 1
        else:
            report.ungraded += r.correct is None
            kept.append(r)
    report.kept = len(kept)
    if want is None:
        mix: dict[str, int] = {}
        for r in kept:
            mix[r.dialect] = mix.get(r.dialect, 0) + 1
        if len(mix) > 1:
            raise StageError(
                f"{stage}: the trajectories mix dialects ({_counts(mix)}): one stage would train "
                "their different tags side by side. Set data.sft_filter.dialect to one of them ('run' "
                "keeps the run's dialect), or convert them to one dialect",
                "bad_data",
            )
        report.dialect = next(iter(mix), None)
    if records and not kept:
        raise StageError(
            f"{report.line(stage)} — nothing left to train on: loosen data.sft_filter, or give other trajectories",
            "bad_data",
        )
    return kept, report
