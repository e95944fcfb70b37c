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
Ids are never decoded and re-encoded between turns. Every turn's context is recorded (length + CRC), and
`retok_mismatch` checks that each is a prefix of the ids finally trained — 0 mismatches with ids end to end.
`retok_drift` says whether decode → encode of a finished response would give other ids (a text-based loop would
train on those: informative, non-zero for byte-level BPE)."""

from __future__ import annotations

import time
import zlib
from array import array
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from .agentio import AgentIO
from .dialects import Tags
from .generate import StringStops, generate


@dataclass
class RlTrajectory:
    prompt_ids: list[int]
    ids: list[int] = field(default_factory=list)
    loss_mask: list[int] = field(default_factory=list)
    logprobs: list[float | None] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)
    tool_failures: int = 0
    simulated: bool = False
    truncated: bool = False  # hit max_new_tokens in a turn, max_len, or max_obs_tokens on a real observation
    finished: bool = False  # ended on an answer / EOS (not a limit, not a refused action)
    contexts: list[tuple[int, int]] = field(default_factory=list)  # (length, crc32) of each turn's model input


def _crc(ids: list[int]) -> int:
    return zlib.crc32(array("q", ids).tobytes())


def rollout(model: Any, tok: Any, prompts: list[list[int]], t: Tags, tool: Callable[[list[str]], list[str | None]] | None,
            *, max_turns: int, max_new_tokens: int, max_obs_tokens: int, max_len: int, device: torch.device,
            dtype: torch.dtype | None, temperature: float = 0.0, generator: torch.Generator | None = None,
            timings: dict[str, float] | None = None, simulate: bool | None = None,
            io: AgentIO | None = None) -> list[RlTrajectory]:
    """`tool=None` → simulated observations written by `model` unless `simulate=False` (then an action ends the
    trajectory). `timings` accumulates generate/tools seconds. Greedy when temperature == 0."""
    io = io or AgentIO.make(tok, t)
    simulate = tool is None if simulate is None else simulate
    stop_ids, stop_strs = io.turn_stops()
    strings = StringStops(tok, stop_strs) if stop_strs else None
    timings = timings if timings is not None else {}
    trajs = [RlTrajectory(list(p), simulated=simulate) for p in prompts]
    active = list(range(len(trajs)))
    turn = 0
    while active:
        t0 = time.time()
        contexts = [trajs[i].prompt_ids + trajs[i].ids for i in active]
        for i, c in zip(active, contexts):
            trajs[i].contexts.append((len(c), _crc(c)))
        new, lps, stopped = generate(model, contexts, max_new_tokens, stop_ids, tok.pad_token_id, device, dtype,
                                     temperature, generator, strings)
        timings["generate"] = timings.get("generate", 0.0) + time.time() - t0
        calls: list[int] = []
        starts: dict[int, int] = {}
        for i, ids, lp, st in zip(active, new, lps, stopped):
            tr = trajs[i]
            starts[i] = len(tr.ids)
            tr.ids += ids
            tr.loss_mask += [1] * len(ids)
            tr.logprobs += lp
            if not st:
                tr.truncated = True
            elif not io.ended_with_action(ids):
                tr.finished = True
            elif (tool is not None or simulate) and turn < max_turns \
                    and len(tr.prompt_ids) + len(tr.ids) < max_len:
                calls.append(i)
        turn += 1
        if not calls:
            break
        if tool is None:
            obs = _simulate(model, io, [trajs[i] for i in calls], max_obs_tokens, device, dtype, temperature,
                            generator, timings)
        else:
            obs = _real(io, [trajs[i] for i in calls], [starts[i] for i in calls], tool, max_obs_tokens, timings)
        active = []
        for i, obs_ids in zip(calls, obs):
            tr = trajs[i]
            tr.ids += obs_ids
            tr.loss_mask += [0] * len(obs_ids)
            tr.logprobs += [None] * len(obs_ids)
            if len(tr.prompt_ids) + len(tr.ids) >= max_len:
                tr.truncated = True
            else:
                active.append(i)
    for tr in trajs:  # the model may run past max_len in its last turn: cut, and say so
        keep = max(0, max_len - len(tr.prompt_ids))
        if len(tr.ids) > keep:
            tr.ids, tr.loss_mask, tr.logprobs, tr.truncated = tr.ids[:keep], tr.loss_mask[:keep], tr.logprobs[:keep], True
            tr.finished = False
    return trajs


def _real(io: AgentIO, trajs: list[RlTrajectory], starts: list[int], tool: Callable, max_obs_tokens: int,
          timings: dict) -> list[list[int]]:
    queries = [io.query(tr.ids, s) for tr, s in zip(trajs, starts)]
    t0 = time.time()
    texts = tool(queries)
    timings["tools"] = timings.get("tools", 0.0) + time.time() - t0
    out = []
    for tr, q, text in zip(trajs, queries, texts):
        tr.queries.append(q)
        if text is None:  # the call failed: an empty observation, counted as a tool failure
            tr.tool_failures += 1
            text = ""
        ids, cut = io.observation_ids(text, max_obs_tokens)
        tr.truncated = tr.truncated or cut
        out.append(ids)
    return out


def _simulate(model: Any, io: AgentIO, trajs: list[RlTrajectory], max_obs_tokens: int, device: torch.device,
              dtype: torch.dtype | None, temperature: float, generator: torch.Generator | None,
              timings: dict) -> list[list[int]]:
    """The policy writes the observation after the opening tag; cut at the closing tag or max_obs_tokens (then
    the closing tag is appended)."""
    for tr in trajs:
        tr.queries.append("")
    tok = io.tok
    o_open = io.obs_open_ids()
    stop_ids, stop_strs = io.obs_stops()
    t0 = time.time()
    contexts = [tr.prompt_ids + tr.ids + o_open for tr in trajs]
    for tr, c in zip(trajs, contexts):
        tr.contexts.append((len(c), _crc(c)))
    new, _, stopped = generate(model, contexts, max_obs_tokens, stop_ids, tok.pad_token_id, device, dtype,
                               temperature, generator, StringStops(tok, stop_strs) if stop_strs else None)
    timings["generate"] = timings.get("generate", 0.0) + time.time() - t0
    return [[*o_open, *ids] if st else [*o_open, *ids, *io.obs_close_ids()] for ids, st in zip(new, stopped)]


def retok_mismatch(tr: RlTrajectory) -> bool:
    """Whether some turn's model input is not a prefix of the ids that are trained (prompt + response): what a
    loop that decodes and re-encodes between turns would show. Always False here (ids end to end) — checked,
    not assumed. (A context longer than the trained ids — the last turn cut at max_len — cannot be compared.)"""
    full = tr.prompt_ids + tr.ids
    return any(n <= len(full) and _crc(full[:n]) != c for n, c in tr.contexts)


def retok_drift(tok: Any, ids: list[int]) -> bool:
    """Whether decode → encode of a response changes its ids (byte-level BPE merges differently across the seam
    between a generated tag and an appended observation; the word-level embedded tokenizer never drifts)."""
    text = tok.decode(ids, skip_special_tokens=False)
    return list(tok(text, add_special_tokens=False)["input_ids"]) != list(ids)


def token_offsets(tok: Any, ids: list[int], response: str) -> list[int] | None:
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
