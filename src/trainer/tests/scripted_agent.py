"""A policy whose knowledge and habits the test sets, so the search boundary meter's answer is known before it runs:
it knows the facts in `memory` ((subject, relation) → object), searches a known fact anyway for the subjects in
`verify` (over-search), writes a guess instead of searching an unknown fact for the subjects in `guess` (under-search),
answers a two-hop question with the first hop's entity for the subjects in `stop` when it remembers that hop and no
observation states the next (it knows both facts, yet fails to chain them), and otherwise searches what it does not know — in the oracle's words (`x born in ?`, `<search> x born in </search>`).
It reads facts from observations (the corpus's `x born in y .`) and, closed-book, writes an observation holding only
what it remembers (asked a query alone, it answers from memory or searches and writes that observation). It decides from the text of its context alone (the prompt and the response so far), as a model
does, so the meter's cut-and-continue trajectories (a search replaced, one more search forced) get the policy's own
continuation. A rollout.Sampler over the embedded tokenizer's ids (tags are single tokens): the meter and the one
rollout loop run unchanged; only the checkpoint is replaced."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from coa_trainer.data.benchmark import RELATIONS, Benchmark, Hop, Question
from coa_trainer.rollout.agentio import AgentIO
from coa_trainer.rollout.loop import ModelSampler, RlTrajectory, TurnOut
from coa_trainer.rollout.turns import append_unsampled


@dataclass
class Habits:
    memory: dict[tuple[str, str], str]
    verify: set[str] = field(default_factory=set)
    guess: set[str] = field(default_factory=set)
    stop: set[str] = field(default_factory=set)
    wrong: str = "what"  # what a guess says: a word of the vocabulary that is no entity, so never a golden answer


class ScriptedAgent(ModelSampler):
    def __init__(self, io: AgentIO, habits: Habits, questions: dict[str, Question]):
        import torch

        super().__init__(None, io, torch.device("cpu"), None, engine=False)
        self.h, self.questions = habits, questions

    # ------------------------------------------------------------ reading the context
    def _text(self, tr: RlTrajectory) -> str:
        return self.tok.decode(tr.prompt_ids + tr.ids, skip_special_tokens=False)

    def _question(self, text: str) -> Question:
        # the decoder joins words with spaces: the question runs to its "?" (a query asked alone has none)
        asked = text.split("question :", 1)[1].split(self.io.t.think_open, 1)[0]
        asked = " ".join((asked.split("?", 1)[0] + "?" if "?" in asked else asked).split())
        if asked in self.questions:
            return self.questions[asked]
        for rel, (_, _, prefix, _) in RELATIONS.items():  # a query about what it guessed: nothing to know there
            m = re.fullmatch(prefix.format(s=r"(\w+)"), asked)
            if m:
                return Question("query", asked, "", rel, [Hop(m.group(1), rel, "", False)], "query")
        raise KeyError(asked)

    def _observed(self, text: str, subject: str, relation: str) -> str | None:
        """The object an observation in the context states for (subject, relation)."""
        t = self.io.t
        prefix = RELATIONS[relation][2].format(s=subject)
        for body in re.findall(re.escape(t.obs_open) + "(.*?)" + re.escape(t.obs_close), text, re.S):
            m = re.search(re.escape(prefix) + r" (\w+) \.", body)
            if m:
                return m.group(1)
        return None

    def _next(self, text: str) -> str:
        """The rest of this turn: statements and a search, or the answer."""
        t = self.io.t
        searched = set(re.findall(re.escape(t.action_open) + " (.*?) " + re.escape(t.action_close), text))
        q = self._question(text)
        subject, think = q.hops[0].subject, []
        for i, hop in enumerate(q.hops):
            prefix = RELATIONS[hop.relation][2].format(s=subject)
            known = self.h.memory.get((subject, hop.relation))
            seen = self._observed(text, subject, hop.relation)
            if known is not None:
                think.append(f"{prefix} {known} .")
                if subject in self.h.verify and prefix not in searched:
                    return self._turn(think, prefix)
                if (
                    subject in self.h.stop
                    and i + 1 < len(q.hops)
                    and self._observed(text, known, q.hops[i + 1].relation) is None
                ):
                    return f"{t.think_open} {' '.join(think)} {t.think_close} {t.answer_open} {known} {t.answer_close}"
                subject = known
            elif seen is not None:
                think.append(f"{prefix} {seen} .")
                subject = seen
            elif subject in self.h.guess or prefix in searched:
                think.append(f"{prefix} {self.h.wrong} .")  # a guess, or nothing found: answer anyway
                subject = self.h.wrong
            else:
                think.append(f"{prefix} ?")
                return self._turn(think, prefix)
        return f"{t.think_open} {' '.join(think)} {t.think_close} {t.answer_open} {subject} {t.answer_close}"

    def _turn(self, think: list[str], query: str) -> str:
        t = self.io.t
        return f"{t.think_open} {' '.join(think)} {t.think_close} {t.action_open} {query} {t.action_close}"

    # ------------------------------------------------------------ the Sampler
    def turn(self, trajs: list[RlTrajectory], max_new_tokens: int, timings: dict) -> list[TurnOut]:
        outs = []
        t = self.io.t
        for tr in trajs:
            text = self._text(tr)
            if text.rstrip().endswith(t.action_open):  # an action opened for it (the meter's forced search)
                nxt = self._next(text.rstrip()[: -len(t.action_open)])
                query = (
                    nxt.split(t.action_open)[-1].split(t.action_close)[0].strip()
                    if t.action_open in nxt
                    else self._last_prefix(text)
                )
                words = f"{query} {t.action_close}"
            else:
                words = self._next(text)
            ids = self.tok(words, add_special_tokens=False)["input_ids"][:max_new_tokens]
            start = len(tr.ids)
            tr.ids += ids
            tr.loss_mask += [1] * len(ids)
            tr.logprobs += [0.0] * len(ids)
            outs.append(TurnOut(True, self.io.ended_with_action(ids), start))
        return outs

    def _last_prefix(self, text: str) -> str:
        """The statement prefix of the last fact the context states (what a forced search asks about)."""
        q = self._question(text)
        subject, prefix = q.hops[0].subject, ""
        for hop in q.hops:
            prefix = RELATIONS[hop.relation][2].format(s=subject)
            m = re.findall(re.escape(prefix) + r" (\w+) \.", text)
            if not m:
                break
            subject = m[-1]
        return prefix

    def simulate(self, trajs: list[RlTrajectory], max_obs_tokens: int, timings: dict) -> None:
        """Closed book: the observation holds what it remembers of the fact it searched (nothing if it does not)."""
        t = self.io.t
        for tr in trajs:
            text = self._text(tr)
            query = text.split(t.action_open)[-1].split(t.action_close)[0].strip()
            fact = next(
                (f"{query} {o} ." for (s, rel), o in self.h.memory.items() if RELATIONS[rel][2].format(s=s) == query),
                "",
            )
            append_unsampled(tr, self.tok(f"{t.obs_open} {fact} {t.obs_close}", add_special_tokens=False)["input_ids"])


def question_index(bench: Benchmark, extra: list[Question] | None = None) -> dict[str, Question]:
    """Every question's text → the question (the benchmark's, its facts asked alone, and `extra`)."""
    from coa_trainer.evaluation.boundary_truth import fact_questions

    qs = list(bench.questions) + [f for q in bench.questions for f in fact_questions(q)] + list(extra or [])
    # a query asked alone (the meter's closed book): "x born in" is the one-hop question about that fact
    qs += [
        Question(f"query-{i}", RELATIONS[rel][2].format(s=s), o, rel, [Hop(s, rel, o, True)], "query")
        for i, ((s, rel), o) in enumerate(sorted(bench.facts.items()))
    ]
    return {" ".join(q.question.split()): q for q in qs}


def samplers(agent: ScriptedAgent) -> Any:
    """A Meter's sampler factory: the same scripted policy with search and closed-book."""
    return lambda closed_book, temperature, generator: agent
