"""The search boundary meter's numbers and its report file: the summary of the outcomes (class counts, over- and
under-search rates, TC against the estimated minimum), the per-question rows, and the file
`<run>/eval/boundary-<stage>-<split>.json`, checked against the core's schema (src/core/boundary.ts →
schemas/boundary-report.schema.json) before it is written, so the editor's panel reads what the trainer wrote."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..contracts.boundary_class import BoundaryClass as C
from ..contracts.boundary_metric import BoundaryMetric as BM
from ..contracts.boundary_report import BoundaryReport, BoundaryRow, BoundarySummary, BoundaryTruthRow
from ..contracts.schemas import load_schema_file
from ..data.userdata import golden
from .boundary import Outcome

REPORT_VERSION = 1


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def summarise(outcomes: list[Outcome]) -> BoundarySummary:
    """The summary of src/core/boundary.ts (BoundarySummarySchema)."""
    n = len(outcomes)
    counts = {c: sum(o.cls == c.value for o in outcomes) for c in C}
    classes: dict[Any, int] = {c.value: k for c, k in counts.items()}  # the schema's class names, in its order
    known = [o for o in outcomes if o.min_calls is not None]
    calls = sum(o.tool_calls for o in known)
    spare = sum(o.tool_calls - o.min_calls for o in known if o.min_calls is not None)
    return BoundarySummary(
        questions=n,
        classes=classes,
        over_search_rate=counts[C.over_search] / n if n else None,
        under_search_rate=counts[C.under_search] / n if n else None,
        em_closed_book=_mean([o.closed_book for o in outcomes]),
        em=_mean([o.right for o in outcomes]),
        tc=_mean([o.tool_calls for o in outcomes]),
        min_tc=_mean([float(o.min_calls) for o in known if o.min_calls is not None]),
        min_tc_questions=len(known),
        tc_over_min=spare / len(known) if known else None,
        # searches the minimum does without: β-GRPO's "avoidable searches", on the questions with a known minimum
        avoidable_share=max(0.0, spare) / calls if calls else None,
    )


def live_metrics(summary: BoundarySummary) -> dict[str, float | None]:
    """The summary as the RL step's metrics (src/core/metrics.ts BOUNDARY_METRICS)."""
    return {
        BM.boundary_over_search.value: summary.over_search_rate,
        BM.boundary_under_search.value: summary.under_search_rate,
        BM.boundary_em_closed_book.value: summary.em_closed_book,
        BM.boundary_tc.value: summary.tc,
        BM.boundary_min_tc.value: summary.min_tc,
        BM.boundary_tc_over_min.value: summary.tc_over_min,
    }


def rows(
    questions: list[Any], outcomes: list[Outcome], truth: list[BoundaryTruthRow] | None = None
) -> list[BoundaryRow]:
    """One row per question (BoundaryRowSchema), with the trajectories that decided its class. (Made from its JSON:
    the row's `class` is a Python keyword, the class's field an alias of it.)"""
    out = []
    for i, (q, o) in enumerate(zip(questions, outcomes)):
        out.append(
            BoundaryRow.model_validate(
                {
                    "id": str(q.id),
                    "question": q.question,
                    "golden_answers": golden(q),
                    "group": getattr(q, "kind", None) or getattr(q, "data_source", None),
                    "class": o.cls,
                    "closed_book": o.closed_book,
                    "right": o.right,
                    "searched": o.searched,
                    "tool_calls": o.tool_calls,
                    "min_calls": o.min_calls,
                    "reachable": o.reachable,
                    "responses": o.made().texts(),
                    "truth": truth[i] if truth is not None else None,
                }
            )
        )
    return out


def report_json(report: BoundaryReport) -> dict[str, Any]:
    """The report as its file holds it (the row's `class` by its name, optional responses left out)."""
    return report.model_dump(mode="json", by_alias=True, exclude_unset=True)


def check_report(report: dict[str, Any]) -> None:
    """Raise ValueError naming the first field that breaks schemas/boundary-report.schema.json."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(load_schema_file("boundary-report.schema.json"))
    err = next(iter(sorted(validator.iter_errors(report), key=lambda e: list(e.absolute_path))), None)
    if err is not None:
        where = "/".join(str(p) for p in err.absolute_path) or "(root)"
        raise ValueError(f"boundary report {where}: {err.message}")


def write_report(path: Path, report: BoundaryReport) -> Path:
    """Checked against the schema, then written whole (a temporary file renamed onto the path)."""
    data = report_json(report)
    check_report(data)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def _num(v: float | None, digits: int = 3) -> str:
    return "—" if v is None else f"{v:.{digits}f}"


def format_summary(report: BoundaryReport) -> str:
    """The report in a few lines of text (the command's output)."""
    s = report.summary
    counts = " · ".join(f"{c} {n}" for c, n in s.classes.items())
    lines = [
        f"{report.stage} (step {report.step}) on {report.split}: {s.questions} questions, "
        f"{report.samples} sample(s) each way",
        f"classes: {counts}",
        f"over-search rate {_num(s.over_search_rate)} · under-search rate {_num(s.under_search_rate)}",
        f"EM closed-book {_num(s.em_closed_book)} · with search {_num(s.em)}",
        f"TC {_num(s.tc)} · estimated minimum {_num(s.min_tc)} on {s.min_tc_questions} questions "
        f"(TC over it {_num(s.tc_over_min)}; avoidable searches {_num(s.avoidable_share)})",
    ]
    t = report.truth
    if t:
        lines.append(
            f"benchmark truth: classes agree on {_num(t.class_agreement)} · minimum {_num(t.min_tc_meter)} "
            f"vs truth {_num(t.min_tc_truth)} on the same questions (truth on all "
            f"{_num(t.min_tc_truth_all)}; the benchmark's optimum {_num(t.optimal_tc)})"
        )
    return "\n".join(lines)
