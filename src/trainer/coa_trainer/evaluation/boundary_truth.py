"""Ground truth for the search boundary meter on the embedded benchmark, where every question's facts are known: each
fact of a question (its hops, on the true chain of entities) is asked alone, as the benchmark's single-hop question
about it, closed-book, of the same checkpoint. A question needs a search for each fact the checkpoint does not answer;
that count is its true minimum, and its true class follows from it with the checkpoint's own search-allowed run:

- every fact answered → no-search or over-search (whether that run searched) — unless that run made no search and was
  wrong: a run without a search is itself the question answered closed-book, so its grade is measured, not inferred
  from the facts (a model that knows both facts of a chain may still answer the first hop's entity); the question is
  then wrong closed-book and its minimum is 1, not 0;
- wrong closed-book, right with search → needed-search;
- wrong both ways → under-search if it is right once the search it lacks is made for it (where it answered, the
  benchmark's own query for the first fact it does not answer closed-book, then the model goes on), else unreachable.
  Unlike the meter's forced search, the query is the benchmark's, not one the model writes — except where no fact is
  missing: there is then no fact for the benchmark to search, and the one more search is the model's own.

The benchmark's own optimum (`optimal_tool_calls`: hops about entities not in the pretraining text) is what a model
that remembered exactly its pretraining would need; the checkpoint's truth is what *this* model needs."""

from __future__ import annotations

from ..contracts.boundary_report import BoundaryTruth, BoundaryTruthRow
from ..data.benchmark import RELATIONS, Benchmark, Question
from .boundary import Meter, Outcome, classify, majority


def fact_questions(q: Question) -> list[Question]:
    """One single-hop question per hop of `q`, about the hop's true subject (the benchmark's question template)."""
    return [
        Question(f"{q.id}/fact{i}", RELATIONS[h.relation][3].format(s=h.subject), h.object, h.relation, [h], q.split)
        for i, h in enumerate(q.hops)
    ]


def truth_rows(
    meter: Meter, bench: Benchmark, questions: list[Question], outcomes: list[Outcome]
) -> list[BoundaryTruthRow]:
    """Each question's true minimum and class (module docstring), greedy closed-book fact by fact."""
    del bench  # the questions carry their hops; kept in the signature so callers pass the benchmark they measured
    facts = [fact_questions(q) for q in questions]
    flat = [f for fs in facts for f in fs]
    answered = iter(t.right for t in meter.trials(flat, real=False))
    known = [[next(answered) for _ in fs] for fs in facts]
    # right closed-book: every fact answered — or, where its own run made no search, that run's grade
    closed = [all(k) and (majority(o.searched) or majority(o.right)) for o, k in zip(outcomes, known)]
    lost = [i for i, (o, c) in enumerate(zip(outcomes, closed)) if not c and not majority(o.right)]
    reachable = {i: False for i in lost}
    # wrong both ways with a fact missing: is it right once the benchmark searches that fact for it?
    short = [i for i in lost if not all(known[i])]
    if short:
        first = [next(j for j, k in enumerate(known[i]) if not k) for i in short]
        queries = [
            RELATIONS[questions[i].hops[j].relation][2].format(s=questions[i].hops[j].subject)
            for i, j in zip(short, first)
        ]
        made = meter.forced([questions[i] for i in short], [outcomes[i].made().search for i in short], queries)
        reachable.update({i: bool(m is not None and m.right) for i, m in zip(short, made)})
    # no fact missing, answered wrong without a search: the search the model itself makes there
    whole = [i for i in lost if all(known[i])]
    if whole:
        made = meter.forced([questions[i] for i in whole], [outcomes[i].made().search for i in whole])
        reachable.update({i: bool(m is not None and m.right) for i, m in zip(whole, made)})
    out = []
    for i, (q, o, k) in enumerate(zip(questions, outcomes, known)):
        # answered wrong without a search: it needs one, though it answers every fact alone
        need = max(sum(not x for x in k), int(not closed[i]))
        cls = classify(closed[i], majority(o.right), majority(o.searched), reachable.get(i))
        # made from its JSON: `class` is a Python keyword (the class's field is an alias of it)
        out.append(
            BoundaryTruthRow.model_validate(
                {"class": cls, "min_calls": need, "facts_known": k, "optimal": q.optimal_tool_calls}
            )
        )
    return out


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def agreement(outcomes: list[Outcome], truth: list[BoundaryTruthRow]) -> BoundaryTruth:
    """How the meter agrees with the truth (src/core/boundary.ts BoundaryTruthSchema)."""
    pairs = list(zip(outcomes, truth))
    known = [(o, t) for o, t in pairs if o.min_calls is not None]
    confusion: dict[str, dict[str, int]] = {}
    for o, t in pairs:
        row = confusion.setdefault(t.class_, {})
        row[o.cls] = row.get(o.cls, 0) + 1
    return BoundaryTruth(
        class_agreement=_mean([float(o.cls == t.class_) for o, t in pairs]),
        min_tc_meter=_mean([float(o.min_calls) for o, _ in known if o.min_calls is not None]),
        min_tc_truth=_mean([float(t.min_calls) for _, t in known]),
        min_tc_truth_all=_mean([float(t.min_calls) for t in truth]),
        optimal_tc=_mean([float(t.optimal) for t in truth if t.optimal is not None]),
        optimal_tc_same=_mean([float(t.optimal) for _, t in known if t.optimal is not None]),
        optimal_agreement=_mean([float(o.min_calls == t.optimal) for o, t in known if t.optimal is not None]),
        confusion=confusion,
    )
