"""The search boundary meter: on any question set, where a checkpoint searches though it knew the answer
(over-search) and answers though it should have searched (under-search), and the fewest searches it needs — found by
contrasting the checkpoint's own rollouts of the same questions:

- closed book: the agent prompt with the search engine replaced by the model's own memory. Each query it sends is
  answered by the model itself, asked that query alone: the query as the question, the model's own first turn, and the
  observation it then writes (cut at the first tag it writes), or — when it answers from memory instead of searching —
  what it wrote. Greedy, one answer per query, so a fact is recalled the same way whichever question it serves, as
  when each fact is asked alone. Forms that look cheaper measure nothing on agents that write `x born in ?` before
  every search: ending the trajectory or forcing an answer at the first action makes the model answer with its query
  (0 of 198 facts right on the demo's OTC checkpoint); and letting it write the observation in the question's own
  context makes the recall of one fact change with the question around it (seed 0's RL-2 checkpoint: the classes then
  agreed with the fact-by-fact truth on 0.83 of the test questions, this way on 0.91). What a query answered from
  memory returns was chosen on dev (bench/boundary/tuning.md).
- with search: the same prompt with the real tool, greedy like evaluation (or k samples at a temperature).
- minimal calls: a question answered right with search has each real search in turn replaced by the model's own
  answer to that query (the trajectory cut where the observation starts; after it the model goes on with the real
  tool). A search whose replacement keeps the answer right was not needed; the next one is tried on the new
  trajectory. The searches left are the estimate: 0 when the closed-book answer is right, and at least 1 when it is
  wrong (all searches replaced is the closed-book run itself — except after a forced search, an action the model
  did not take by itself).
- forced search: a question wrong both ways gets one more search where it answered (its trajectory cut before the
  answer and an action opened; the model writes the query, the real tool answers, the model goes on).

Each question falls in one class (src/core/boundary.ts): no-search (right closed-book, did not search), over-search
(right closed-book, searched anyway), needed-search (wrong closed-book, right with search), under-search (wrong both
ways, right with the forced search), unreachable (wrong all three ways)."""

from __future__ import annotations

import random
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable

import torch

from ..contracts.boundary_class import BoundaryClass as C
from ..contracts.run_config import RunConfig
from ..data.dialects import tags
from ..data.lengths import resolve_max_len
from ..data.prompts import prompt_ids
from ..data.userdata import golden
from ..model.load import model_context
from ..rollout.agentio import AgentIO
from ..rollout.generate import StringStops, reference_generate
from ..rollout.loop import ModelSampler, RlTrajectory, Sampler, add_since, run_turns
from ..rollout.turns import append_unsampled
from .baselines import prefix_before
from ..data.tokenizer import TextTokenizer
from ..model.load import Runtime
from ..env.client import EnvClient


@dataclass
class Trial:
    """One trajectory of a question, after the prompt: the ids, which of them the model wrote (1) or were put in (0:
    real observations, tags the meter opened), where each real search's observation starts, and its grade."""

    ids: list[int]
    mask: list[int]
    searches: list[int]
    right: bool = False
    tool_calls: int = 0  # the grader's count of actions, as evaluation's TC counts them
    text: str = ""


@dataclass
class Trials:
    """The trajectories that decided a question's class: its first closed-book and with-search samples, and where
    made, the forced search (wrong both ways) and the fewest-search trajectory."""

    closed_book: Trial
    search: Trial
    forced: Trial | None = None
    minimal: Trial | None = None

    def texts(self) -> dict[str, str]:
        """Each made trajectory's text by name (the report's `responses`), in the order they were made."""
        made = {"closed_book": self.closed_book, "search": self.search, "forced": self.forced, "minimal": self.minimal}
        return {k: t.text for k, t in made.items() if t is not None}


@dataclass
class Outcome:
    """What the meter found for one question."""

    closed_book: float  # share of closed-book samples answered right (greedy: 0 or 1)
    right: float  # share of with-search samples answered right
    searched: float  # share of with-search samples that searched
    tool_calls: float  # mean tool calls with search
    min_calls: int | None  # estimated fewest searches for a right answer; None when no way found one
    reachable: bool | None  # wrong both ways: whether the forced search made it right (None: not tried)
    cls: str
    trials: Trials | None = None  # None: an outcome stated without its trajectories

    def made(self) -> Trials:
        """The trajectories the meter made for this question (every outcome it measures has them)."""
        if self.trials is None:
            raise ValueError("this outcome was not measured: it has no trajectories")
        return self.trials


def classify(closed_book_right: bool, right: bool, searched: bool, reachable: bool | None) -> str:
    """The class of a question from what was measured (the one rule the meter and the benchmark's truth share)."""
    if closed_book_right:
        return C.over_search.value if searched else C.no_search.value
    if right:
        return C.needed_search.value if searched else C.no_search.value
    return C.under_search.value if reachable else C.unreachable.value


def zero_runs(mask: list[int]) -> list[int]:
    """Where each maximal run of mask-0 tokens starts: in a rollout with the real tool, each real observation."""
    return [i for i, m in enumerate(mask) if m == 0 and (i == 0 or mask[i - 1] != 0)]


def zero_tail(mask: list[int]) -> list[int]:
    """The trailing run of mask-0 tokens (an observation just appended)."""
    n = len(mask)
    while n and mask[n - 1] == 0:
        n -= 1
    return mask[n:]


def majority(share: float) -> bool:
    return share >= 0.5


class ClosedBookSampler(ModelSampler):
    """The trainer's model on the reference path (the recall runs inside a rollout's tool call, which the engine would
    make on its tool thread beside its decoding), writing its own observations, each cut at the first tag it writes
    (the observation's closing tag, or any other: an observation that opens a thought or an answer ends there)."""

    def __init__(
        self,
        model: torch.nn.Module,
        io: AgentIO,
        device: torch.device,
        dtype: torch.dtype | None,
        temperature: float = 0.0,
        generator: torch.Generator | None = None,
    ):
        super().__init__(model, io, device, dtype, temperature, generator, engine=False)
        t = io.t
        self.tag_strings = [
            x
            for x in (
                t.think_open,
                t.think_close,
                t.action_open,
                t.action_close,
                t.obs_open,
                t.obs_close,
                t.answer_open,
                t.answer_close,
            )
            if x
        ]

    def simulate(self, trajs: list[RlTrajectory], max_obs_tokens: int, timings: dict) -> None:
        io, tok = self.io, self.tok
        o_open, o_close = io.obs_open_ids(), io.obs_close_ids()
        if io.special:
            stops, strings = {io.id_of(x) for x in self.tag_strings} | io.eos_ids(), None
        else:
            stops, strings = io.eos_ids(), StringStops(tok, self.tag_strings)
        t0 = time.time()
        contexts = [tr.prompt_ids + tr.ids + o_open for tr in trajs]
        new, _, _ = reference_generate(
            self.model,
            contexts,
            max_obs_tokens,
            stops,
            tok.pad_token_id,
            self.device,
            self.dtype,
            self.temperature,
            self.generator,
            strings,
            top_p=self.top_p,
        )
        add_since(timings, "generate", t0)
        for tr, ids in zip(trajs, new):
            append_unsampled(tr, [*o_open, *self._body(ids), *o_close])

    def _body(self, ids: list[int]) -> list[int]:
        """The written ids up to the first tag (or EOS)."""
        io = self.io
        if io.special:
            ends = {io.id_of(x) for x in self.tag_strings} | io.eos_ids()
            return ids[: next((k for k, i in enumerate(ids) if i in ends), len(ids))]
        text = self.tok.decode(ids, skip_special_tokens=False)
        cut = min([text.find(x) for x in self.tag_strings if x in text] + [len(text)])
        return ids[: prefix_before(self.tok, ids, cut)]


SamplerFactory = Callable[[bool, float, "torch.Generator | None"], Sampler]
"""(closed_book, temperature, generator) → the policy's rollout.Sampler. A closed-book one is called between turns
(no engine thread: its tool is the model itself) and its `simulate` writes the observation the search would return."""


def model_samplers(model: torch.nn.Module, io: AgentIO, rt: Runtime) -> SamplerFactory:
    """The trainer's model: the rollout engine with search (as evaluation), the reference path closed-book."""

    def make(closed_book: bool, temperature: float, generator: torch.Generator | None) -> Sampler:
        if closed_book:
            return ClosedBookSampler(model, io, rt.device, rt.autocast_dtype, temperature, generator)
        return ModelSampler(model, io, rt.device, rt.autocast_dtype, temperature, generator)

    return make


class Meter:
    """A policy answering through the environment server `env` (search and grading), with the run config's
    evaluation limits. The policy is the checkpoint `model` (its samplers made by `model_samplers`), or any
    rollout.Sampler over token ids given as `samplers`."""

    def __init__(
        self,
        model: torch.nn.Module,
        tok: TextTokenizer,
        config: RunConfig,
        rt: Runtime,
        env: EnvClient,
        io: AgentIO | None = None,
        log: Callable[[str], None] | None = None,
        samplers: SamplerFactory | None = None,
    ):
        self.tok, self.config, self.rt, self.env = tok, config, rt, env
        self.t = tags(config.dialect)
        self.io = io or AgentIO.make(tok, self.t)
        self.ecfg = config.eval
        self.max_len = resolve_max_len(self.ecfg.max_len, None, model_context(model) if model is not None else None)
        self.samplers = samplers or model_samplers(model, self.io, rt)
        self.log = log or (lambda _msg: None)
        self.recalled: dict[str, str] = {}  # the model's own answer per query (self.recall)
        if self.t.answer_open is None:
            raise ValueError(f"the {config.dialect} dialect has no answer tag: the forced search needs one")

    # ------------------------------------------------------------ rollouts
    def tool(self, queries: list[str]) -> list[str | None]:
        return self.env.observations(queries, self.ecfg.top_k, self.config.dialect)

    def _rollout(
        self,
        prompts: list[list[int]],
        tool: Callable[[list[str]], list[str | None]] | None,
        temperature: float = 0.0,
        generator: torch.Generator | None = None,
        closed_book: bool = False,
    ) -> list[RlTrajectory]:
        """The one rollout loop (rollout.run_turns) in batches of eval.batch_size, with `tool` (None: an action ends
        the trajectory); closed_book: the policy's closed-book sampler answers through `tool` = self.recall."""
        out: list[RlTrajectory] = []
        e = self.ecfg
        for i in range(0, len(prompts), e.batch_size):
            trajs = [RlTrajectory(list(p)) for p in prompts[i : i + e.batch_size]]
            out += run_turns(
                self.samplers(closed_book, temperature, generator),
                trajs,
                tool,
                max_turns=e.max_turns,
                max_new_tokens=e.max_new_tokens,
                max_obs_tokens=e.max_obs_tokens,
                max_len=self.max_len,
            )
        return out

    def recall(self, queries: list[str]) -> list[str | None]:
        """The search engine closed-book: each query answered by the model asked it alone (module docstring), greedy
        and once per query (cached for this meter)."""
        todo = sorted({q for q in queries if q not in self.recalled})
        e, io = self.ecfg, self.io
        for i in range(0, len(todo), e.batch_size):
            batch = todo[i : i + e.batch_size]
            sampler = self.samplers(True, 0.0, None)
            trajs = [RlTrajectory(prompt_ids(self.tok, self.config, q), simulated=True) for q in batch]
            outs = sampler.turn(trajs, e.max_new_tokens, {})
            searched = [tr for tr, o in zip(trajs, outs) if o.action]
            if searched:
                sampler.simulate(searched, e.max_obs_tokens, {})
            for q, tr, o in zip(batch, trajs, outs):
                if o.action:  # the observation it wrote: the ids after the turn, inside the observation tags
                    body = tr.ids[len(tr.ids) - len(zero_tail(tr.loss_mask)) :]
                    text = self.tok.decode(
                        body[len(io.obs_open_ids()) : -len(io.obs_close_ids())], skip_special_tokens=False
                    )
                else:  # it answered from memory: what it wrote, tags left out
                    text = self._untagged(self.tok.decode(tr.ids, skip_special_tokens=False))
                self.recalled[q] = " ".join(text.split())
        return [self.recalled[q] for q in queries]

    def _untagged(self, text: str) -> str:
        t = self.t
        for tag in (
            t.think_open,
            t.think_close,
            t.action_open,
            t.action_close,
            t.obs_open,
            t.obs_close,
            t.answer_open,
            t.answer_close,
        ):
            if tag:
                text = text.replace(tag, " ")
        return text

    def _grade(self, questions: list[Any], trials: list[Trial]) -> None:
        """Right (EM) and tool calls of each trial, by the environment server's grader (scheme em)."""
        for t in trials:
            t.text = self.tok.decode(t.ids, skip_special_tokens=False)
        records = [
            {
                "id": f"{q.id}-{i}",
                "question": q.question,
                "golden_answers": golden(q),
                "response": t.text,
                "dialect": self.config.dialect,
            }
            for i, (q, t) in enumerate(zip(questions, trials))
        ]
        for i in range(0, len(records), 256):
            for t, b in zip(trials[i : i + 256], self.env.grade(records[i : i + 256], scheme="em")):
                t.right, t.tool_calls = float(b.em) > 0, int(b.tool_calls)

    def trials(
        self, questions: list[Any], real: bool, temperature: float = 0.0, generator: torch.Generator | None = None
    ) -> list[Trial]:
        """One graded trajectory per question, with search (`real`) or closed-book (self.recall answers its queries)."""
        prompts = [prompt_ids(self.tok, self.config, q.question) for q in questions]
        trajs = self._rollout(prompts, self.tool if real else self.recall, temperature, generator, closed_book=not real)
        out = [Trial(list(tr.ids), list(tr.loss_mask), zero_runs(tr.loss_mask) if real else []) for tr in trajs]
        self._grade(questions, out)
        return out

    # ------------------------------------------------------------ minimal calls
    def minimal(self, questions: list[Any], start: list[Trial]) -> list[Trial]:
        """For each right trajectory, the searches it can do without (module docstring): the trajectory with each
        unneeded search's observation replaced by the model's own answer to that query. Batched over the questions."""
        io = self.io
        cur = list(start)
        tried = [0] * len(cur)  # searches before this index were found needed
        # each round either finds a search needed or removes one; a continuation may search again, so cap the rounds
        for _ in range(2 * self.ecfg.max_turns + 2):
            active = [i for i, t in enumerate(cur) if tried[i] < len(t.searches)]
            if not active:
                break
            cuts = [cur[i].searches[tried[i]] for i in active]
            own = [
                io.observation_ids(x or "", self.ecfg.max_obs_tokens)[0]
                for x in self.recall([io.query(cur[i].ids[:c], 0) for i, c in zip(active, cuts)])
            ]
            heads = [
                (cur[i].ids[:c] + o, cur[i].mask[:c] + [0] * len(o), cur[i].searches[: tried[i]])
                for i, c, o in zip(active, cuts, own)
            ]
            base = [prompt_ids(self.tok, self.config, questions[i].question) for i in active]
            trajs = self._rollout([b + h[0] for b, h in zip(base, heads)], self.tool)
            made = [
                Trial(ids + tr.ids, mask + tr.loss_mask, kept + [len(ids) + s for s in zero_runs(tr.loss_mask)])
                for (ids, mask, kept), tr in zip(heads, trajs)
            ]
            self._grade([questions[i] for i in active], made)
            for i, t in zip(active, made):
                if t.right:
                    cur[i] = t  # that search was not needed: go on from the trajectory without it
                else:
                    tried[i] += 1
        return cur

    # ------------------------------------------------------------ forced search
    def forced(self, questions: list[Any], wrong: list[Trial], queries: list[str] | None = None) -> list[Trial | None]:
        """One more search where each wrong trajectory answered: cut before its answer, an action opened; the model
        writes the query (a turn with tools refused ends on the action) — or `queries` gives it (the benchmark's
        truth searches the fact the model lacks) — the real tool answers, the model goes on."""
        t, io, tok = self.t, self.io, self.tok
        a_open = tok.encode(t.action_open, add_special_tokens=False)
        heads: list[tuple[int, list[int], list[int], list[int]]] = []
        for i, w in enumerate(wrong):
            cut = self._answer_start(w)
            if cut is not None:
                heads.append(
                    (i, w.ids[:cut] + a_open, w.mask[:cut] + [0] * len(a_open), [s for s in w.searches if s < cut])
                )
        out: list[Trial | None] = [None] * len(wrong)
        if not heads:
            return out
        base = [prompt_ids(tok, self.config, questions[i].question) for i, *_ in heads]
        if queries is None:
            # the query: one turn that ends on the action's closing tag (an action ends a trajectory without tools)
            turns = self._rollout([b + h[1] for b, h in zip(base, heads)], None)
            asked = [
                (h, b, list(q.ids), list(q.loss_mask))
                for h, b, q in zip(heads, base, turns)
                if q.ids and io.ended_with_action(q.ids)
            ]
        else:
            written = [tok.encode(f" {queries[h[0]]} {t.action_close}", add_special_tokens=False) for h in heads]
            asked = [(h, b, w, [0] * len(w)) for h, b, w in zip(heads, base, written)]
        if not asked:
            return out
        texts = self.tool([io.query(h[1][-len(a_open) :] + ids, 0) for h, _, ids, _ in asked])
        obs = [io.observation_ids(x or "", self.ecfg.max_obs_tokens)[0] for x in texts]
        heads2 = [
            (h[0], h[1] + ids + o, h[2] + mask + [0] * len(o), h[3] + [len(h[1]) + len(ids)])
            for (h, _, ids, mask), o in zip(asked, obs)
        ]
        rest = self._rollout([b + h[1] for (_, b, _, _), h in zip(asked, heads2)], self.tool)
        made = [
            Trial(h[1] + tr.ids, h[2] + tr.loss_mask, h[3] + [len(h[1]) + s for s in zero_runs(tr.loss_mask)])
            for h, tr in zip(heads2, rest)
        ]
        self._grade([questions[h[0]] for h in heads2], made)
        for h, m in zip(heads2, made):
            out[h[0]] = m
        return out

    def _answer_start(self, trial: Trial) -> int | None:
        """Index of the last answer's opening tag in the trial's ids (None: it never answered)."""
        t, io = self.t, self.io
        assert t.answer_open is not None
        if io.special:
            a = io.id_of(t.answer_open)
            return len(trial.ids) - 1 - trial.ids[::-1].index(a) if a in trial.ids else None
        pos = self.tok.decode(trial.ids, skip_special_tokens=False).rfind(t.answer_open)
        return prefix_before(self.tok, trial.ids, pos) if pos >= 0 else None

    # ------------------------------------------------------------ all of it
    @torch.no_grad()
    def measure(self, questions: list[Any], samples: int = 1, temperature: float = 1.0, seed: int = 0) -> list[Outcome]:
        """Every question's outcome. samples=1: greedy (temperature ignored); k > 1: k samples each way at
        `temperature`, classes by majority, the minimum from the right sample with the fewest searches."""
        k = max(1, samples)
        temp = temperature if k > 1 else 0.0
        gen = None
        if k > 1:
            gen = torch.Generator(device=self.rt.device)
            gen.manual_seed(seed)
        rep = [q for q in questions for _ in range(k)]
        t0 = time.time()
        closed = self.trials(rep, real=False, temperature=temp, generator=gen)
        self.log(f"closed book: {len(rep)} trajectories ({time.time() - t0:.1f} s)")
        t0 = time.time()
        search = self.trials(rep, real=True, temperature=temp, generator=gen)
        self.log(f"with search: {len(rep)} trajectories ({time.time() - t0:.1f} s)")
        outs: list[Outcome] = []
        for i in range(len(questions)):
            c, s = closed[i * k : (i + 1) * k], search[i * k : (i + 1) * k]
            share = lambda xs: sum(xs) / len(xs)  # noqa: E731
            outs.append(
                Outcome(
                    share([x.right for x in c]),
                    share([x.right for x in s]),
                    share([x.tool_calls > 0 for x in s]),
                    share([x.tool_calls for x in s]),
                    None,
                    None,
                    "",
                    Trials(c[0], s[0]),
                )
            )
        # wrong both ways: one more search
        lost = [i for i, o in enumerate(outs) if not majority(o.closed_book) and not majority(o.right)]
        if lost:
            t0 = time.time()
            firsts = [next((x for x in search[i * k : (i + 1) * k] if not x.right), search[i * k]) for i in lost]
            for i, f in zip(lost, self.forced([questions[i] for i in lost], firsts)):
                outs[i].reachable = bool(f is not None and f.right)
                if f is not None:
                    outs[i].made().forced = f
            self.log(f"forced search: {len(lost)} questions ({time.time() - t0:.1f} s)")
        # the fewest searches, from the right trajectory with the fewest
        need = []
        for i, o in enumerate(outs):
            if majority(o.closed_book):
                o.min_calls = 0
                continue
            right = [x for x in search[i * k : (i + 1) * k] if x.right]
            if not right and o.reachable and (forced := o.made().forced) is not None:
                right = [forced]
            if right:
                need.append((i, min(right, key=lambda x: len(x.searches))))
        if need:
            t0 = time.time()
            for (i, x), m in zip(need, self.minimal([questions[i] for i, _ in need], [x for _, x in need])):
                best = m if len(m.searches) <= len(x.searches) else x  # a continuation may have searched more
                # wrong closed-book, so not 0: a forced search replaced by its recall is still an action the model
                # did not take by itself (without it, it answered wrong)
                outs[i].min_calls = max(1, len(best.searches))
                outs[i].made().minimal = best
            self.log(f"minimal calls: {len(need)} questions ({time.time() - t0:.1f} s)")
        for o in outs:
            o.cls = classify(majority(o.closed_book), majority(o.right), majority(o.searched), o.reachable)
        return outs


def fixed_sample(questions: list[Any], n: int, seed: int) -> list[Any]:
    """`n` questions drawn once with the seed, in their own order: the same sample at every step of a run."""
    if len(questions) <= n:
        return list(questions)
    keep = set(random.Random(f"{seed}/boundary").sample(range(len(questions)), n))
    return [q for i, q in enumerate(questions) if i in keep]


def stderr_log(msg: str) -> None:
    print(f"boundary: {msg}", file=sys.stderr, flush=True)
