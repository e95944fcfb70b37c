"""The multi-turn rollout loop — the one loop RL (rl1/rl2), evaluation and the workflow baseline run: batched
sampling with a KV cache (generate.generate), token ids end to end.

Each turn generates until an action's closing tag, the answer's closing tag or EOS (tag ids, or tag strings
however BPE tokenised them: agentio.AgentIO). After an action:
- real tool (RL-2, eval): the query goes to `tool`, the observation is tokenised once (cut at `max_obs_tokens`) and
  appended as `<observation>…</observation>` ids with loss mask 0;
- simulated (RL-1, AutoCoA): the observation opening tag is appended and the policy itself writes the observation
  until the closing tag or `max_obs_tokens`; those tokens are mask 0 as well;
- no tools (`simulate=False`, `tool=None`: eval's no-tool mode, the workflow baseline's answer turn): the action
  ends the trajectory.
The turn logic is `run_turns`; what produces a turn's continuation is a `Sampler`: `ModelSampler` here (the
trainer's model), `teacher.EndpointSampler` for an OpenAI-compatible endpoint (coa_trainer collect). With the
trainer's model, `run_turns` hands the whole loop to the rollout engine when it supports the model
(continuous.py: the same turn logic per trajectory, continuous batching, tool calls beside decoding, observations
appended to each slot's KV cache); `ModelSampler.turn` below, one batched `reference_generate` per turn, is the
reference it is tested against and the path of models the engine does not run. Ids are never
decoded and re-encoded between turns by the model sampler. Every turn's context is recorded (length + CRC), and
`retok_mismatch` checks that each is a prefix of the ids finally trained — 0 mismatches with ids end to end.
`retok_drift` says whether decode → encode of a finished response would give other ids (a text-based loop would
train on those: informative, non-zero for byte-level BPE)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Protocol

import torch

from ..rollout.agentio import AgentIO
from ..data.dialects import Tags
from ..rollout.generate import StringStops, eval_mode, reference_generate
from ..rollout.trajectory import RlTrajectory, crc as _crc
from ..data.tokenizer import TextTokenizer
from .turns import (
    Limits,
    after_turn,
    append_observation,
    append_unsampled,
    cut_to_length,
    goes_on_after_observation,
    tool_answered,
)


@dataclass
class TurnOut:
    """What a sampler produced for one trajectory in one turn (already appended to it by the sampler)."""

    stopped: bool  # on a stop (closing tag / EOS), not a length limit
    action: bool  # the turn ended on the action's closing tag
    start: int  # where the turn began in the trajectory (ids: index; text: character offset)


class Sampler(Protocol):
    """ "Produce the next continuation" — the one thing that differs between the trainer's model (ids, batched
    KV-cached generation) and a teacher behind an OpenAI-compatible endpoint (text). The turn logic around it
    (stop at the closing action tag, call the tool, append the observation, continue, limits) is `run_turns`."""

    def turn(self, trajs: list[RlTrajectory], max_new_tokens: int, timings: dict) -> list[TurnOut]: ...

    def query(self, tr: RlTrajectory, start: int) -> str: ...

    def observe(self, tr: RlTrajectory, text: str, max_obs_tokens: int) -> None: ...

    def simulate(self, trajs: list[RlTrajectory], max_obs_tokens: int, timings: dict) -> None: ...

    def size(self, tr: RlTrajectory) -> int: ...

    def cut(self, tr: RlTrajectory, max_len: int) -> None: ...


def add_since(timings: dict[str, float], phase: str, t0: float) -> None:
    """Add the seconds since `t0` (time.time()) to a phase's total in a rollout's `timings`."""
    timings[phase] = timings.get(phase, 0.0) + time.time() - t0


def rollout(
    model: torch.nn.Module,
    tok: TextTokenizer,
    prompts: list[list[int]],
    t: Tags,
    tool: Callable[[list[str]], list[str | None]] | None,
    *,
    max_turns: int,
    max_new_tokens: int,
    max_obs_tokens: int,
    max_len: int,
    device: torch.device,
    dtype: torch.dtype | None,
    temperature: float = 0.0,
    generator: torch.Generator | None = None,
    timings: dict[str, float] | None = None,
    simulate: bool | None = None,
    io: AgentIO | None = None,
    top_p: float = 1.0,
    engine: bool = True,
    slots: int | None = None,
) -> list[RlTrajectory]:
    """`tool=None` → simulated observations written by `model` unless `simulate=False` (then an action ends the
    trajectory). `timings` accumulates generate/tools seconds. Greedy when temperature == 0. `engine=False`: the
    reference sampler even where the engine runs the model; `slots`: trajectories the engine decodes at once."""
    sampler = ModelSampler(
        model, io or AgentIO.make(tok, t), device, dtype, temperature, generator, top_p, engine, slots
    )
    simulate = tool is None if simulate is None else simulate
    trajs = [RlTrajectory(list(p), simulated=simulate) for p in prompts]
    with eval_mode(model):  # sampled from the policy that is scored: no dropout (generate.eval_mode)
        return run_turns(
            sampler,
            trajs,
            tool,
            max_turns=max_turns,
            max_new_tokens=max_new_tokens,
            max_obs_tokens=max_obs_tokens,
            max_len=max_len,
            simulate=simulate,
            timings=timings,
        )


def run_turns(
    sampler: Sampler,
    trajs: list[RlTrajectory],
    tool: Callable[[list[str]], list[str | None]] | None,
    *,
    max_turns: int,
    max_new_tokens: int,
    max_obs_tokens: int,
    max_len: int,
    simulate: bool = False,
    timings: dict[str, float] | None = None,
) -> list[RlTrajectory]:
    """The multi-turn loop: each active trajectory gets its next continuation; one that ended on an action (and
    is within max_turns and max_len) gets the tool's observation — or, simulated, the sampler's own — appended,
    and goes on. A trajectory whose sampler failed (`error`) leaves the loop as it is."""
    timings = timings if timings is not None else {}
    lim = Limits(max_turns, max_new_tokens, max_obs_tokens, max_len, simulate)
    if isinstance(sampler, ModelSampler) and sampler.run_engine(
        trajs,
        tool,
        max_turns=max_turns,
        max_new_tokens=max_new_tokens,
        max_obs_tokens=max_obs_tokens,
        max_len=max_len,
        simulate=simulate,
        timings=timings,
    ):
        return trajs
    active = [tr for tr in trajs if tr.error is None]
    turn = 0
    while active:
        outs = sampler.turn(active, max_new_tokens, timings)
        calls: list[tuple[RlTrajectory, int]] = []
        for tr, out in zip(active, outs):
            if tr.error is None and after_turn(
                tr,
                stopped=out.stopped,
                action=out.action,
                turns_done=turn,
                size=sampler.size(tr),
                lim=lim,
                has_tool=tool is not None,
            ):
                calls.append((tr, out.start))
        turn += 1
        if not calls:
            break
        if tool is None:
            for tr, _ in calls:
                tr.queries.append("")
            sampler.simulate([tr for tr, _ in calls], max_obs_tokens, timings)
        else:
            queries = [sampler.query(tr, start) for tr, start in calls]
            t0 = time.time()
            texts = tool(queries)
            add_since(timings, "tools", t0)
            for (tr, _), q, text in zip(calls, queries, texts):
                sampler.observe(tr, tool_answered(tr, q, text), max_obs_tokens)
        active = [tr for tr, _ in calls if goes_on_after_observation(tr, sampler.size(tr), max_len)]
    for tr in trajs:  # the model may run past max_len in its last turn: cut, and say so
        sampler.cut(tr, max_len)
    return trajs


class ModelSampler:
    """The trainer's own model, ids end to end — an observation is tokenised once and appended (mask 0), nothing is
    decoded and re-encoded between turns. `run_engine` runs the whole loop on the rollout engine; `turn` /
    `simulate` are the reference path (one batched `reference_generate` per turn)."""

    def __init__(
        self,
        model: torch.nn.Module,
        io: AgentIO,
        device: torch.device,
        dtype: torch.dtype | None,
        temperature: float = 0.0,
        generator: torch.Generator | None = None,
        top_p: float = 1.0,
        engine: bool = True,
        slots: int | None = None,
    ):
        self.model, self.io, self.tok = model, io, io.tok
        self.device, self.dtype, self.temperature, self.generator = device, dtype, temperature, generator
        self.top_p, self.engine, self.slots = top_p, engine, slots
        stop_ids, stop_strs = io.turn_stops()
        self.stop_ids, self.strings = stop_ids, (StringStops(self.tok, stop_strs) if stop_strs else None)

    def run_engine(
        self,
        trajs: list[RlTrajectory],
        tool: Callable[[list[str]], list[str | None]] | None,
        *,
        max_turns: int,
        max_new_tokens: int,
        max_obs_tokens: int,
        max_len: int,
        simulate: bool,
        timings: dict[str, float],
    ) -> bool:
        """The whole multi-turn loop on the rollout engine (continuous.py); False when the engine does not run this
        model (or `engine=False`): the caller takes the reference path."""
        from .continuous import Continuous, Job
        from .generate import engine_for, seed_base
        from .sampling import trajectory_seed

        eng = engine_for(self.model, self.device, self.dtype) if self.engine else None
        if eng is None:
            return False
        stops = eng.stop_table(self.tok, [self.io.turn_stops(), self.io.obs_stops()])
        base = seed_base(self.generator, self.temperature)
        jobs = [Job(i, tr, seed=trajectory_seed(base, i)) for i, tr in enumerate(trajs) if tr.error is None]
        limits = Limits(max_turns, max_new_tokens, max_obs_tokens, max_len, simulate)
        with torch.no_grad():
            Continuous(
                eng,
                self.io,
                jobs,
                limits,
                tool,
                self.temperature,
                self.top_p,
                self.tok.pad_token_id,
                stops,
                timings=timings,
                slots=self.slots,
            ).run()
        return True

    def turn(self, trajs: list[RlTrajectory], max_new_tokens: int, timings: dict) -> list[TurnOut]:
        t0 = time.time()
        contexts = [tr.prompt_ids + tr.ids for tr in trajs]
        for tr, c in zip(trajs, contexts):
            tr.contexts.append((len(c), _crc(c)))
        new, lps, stopped = reference_generate(
            self.model,
            contexts,
            max_new_tokens,
            self.stop_ids,
            self.tok.pad_token_id,
            self.device,
            self.dtype,
            self.temperature,
            self.generator,
            self.strings,
            top_p=self.top_p,
        )
        add_since(timings, "generate", t0)
        outs = []
        for tr, ids, lp, st in zip(trajs, new, lps, stopped):
            start = len(tr.ids)
            tr.ids += ids
            tr.loss_mask += [1] * len(ids)
            tr.logprobs += lp
            outs.append(TurnOut(st, st and self.io.ended_with_action(ids), start))
        return outs

    def query(self, tr: RlTrajectory, start: int) -> str:
        return self.io.query(tr.ids, start)

    def observe(self, tr: RlTrajectory, text: str, max_obs_tokens: int) -> None:
        append_observation(tr, self.io, text, max_obs_tokens)

    def simulate(self, trajs: list[RlTrajectory], max_obs_tokens: int, timings: dict) -> None:
        """The policy writes the observation after the opening tag; cut at the closing tag or max_obs_tokens
        (then the closing tag is appended)."""
        io = self.io
        o_open = io.obs_open_ids()
        stop_ids, stop_strs = io.obs_stops()
        t0 = time.time()
        contexts = [tr.prompt_ids + tr.ids + o_open for tr in trajs]
        for tr, c in zip(trajs, contexts):
            tr.contexts.append((len(c), _crc(c)))
        new, _, stopped = reference_generate(
            self.model,
            contexts,
            max_obs_tokens,
            stop_ids,
            self.tok.pad_token_id,
            self.device,
            self.dtype,
            self.temperature,
            self.generator,
            StringStops(self.tok, stop_strs) if stop_strs else None,
            top_p=self.top_p,
        )
        add_since(timings, "generate", t0)
        for tr, ids, st in zip(trajs, new, stopped):
            append_unsampled(tr, [*o_open, *ids] if st else [*o_open, *ids, *io.obs_close_ids()])

    def size(self, tr: RlTrajectory) -> int:
        return len(tr.prompt_ids) + len(tr.ids)

    def cut(self, tr: RlTrajectory, max_len: int) -> None:
        cut_to_length(tr, max_len)


def retok_mismatch(tr: RlTrajectory) -> bool:
    """Whether some turn's model input is not a prefix of the ids that are trained (prompt + response): what a
    loop that decodes and re-encodes between turns would show. Always False here (ids end to end) — checked,
    not assumed. (A context longer than the trained ids — the last turn cut at max_len — cannot be compared.)"""
    full = tr.prompt_ids + tr.ids
    return any(n <= len(full) and _crc(full[:n]) != c for n, c in tr.contexts)


def retok_drift(tok: TextTokenizer, ids: list[int]) -> bool:
    """Whether decode → encode of a response changes its ids (byte-level BPE merges differently across the seam
    between a generated tag and an appended observation; the word-level embedded tokenizer never drifts)."""
    text = tok.decode(ids, skip_special_tokens=False)
    return list(tok.encode(text, add_special_tokens=False)) != list(ids)


def token_offsets(tok: TextTokenizer, ids: list[int], response: str) -> list[int] | None:
    """Character offset of each token in `response`, when the decoder joins single-token pieces with one space
    (the embedded word-level tokenizer); None otherwise (offsets are optional in a record)."""
    pieces = [tok.decode([i], skip_special_tokens=False) for i in ids]
    if " ".join(pieces) != response:
        return None
    out, pos = [], 0
    for p in pieces:
        out.append(pos)
        pos += len(p) + 1
    return out
