"""RL rollouts: batched multi-turn sampling with a KV cache (generate.generate), token ids end to end.

Each turn generates until an action's closing tag, the answer's closing tag or EOS. After an action:
- real environment (RL-2): the query goes to `tool`, the returned observation is encoded once and appended as
  `<observation>…</observation>` ids with loss mask 0;
- simulated environment (RL-1, AutoCoA): the observation opening tag is appended and the policy itself writes the
  observation until the closing tag or `max_obs_tokens`; those tokens are mask 0 as well (the policy is not
  trained to hallucinate them, and they do not count in the loss).
Ids are never decoded and re-encoded between turns; `retok_mismatch` checks afterwards that decode → encode of a
finished trajectory gives the same ids (it must, for the embedded word-level tokenizer)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from .dialects import Tags
from .generate import generate


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


def _query(ids: list[int], a_open: int) -> list[int]:
    """Ids between the last action opening tag and the closing tag that ends `ids`."""
    try:
        start = len(ids) - 1 - ids[::-1].index(a_open)
    except ValueError:
        return []
    return ids[start + 1:-1]


def rollout(model: Any, tok: Any, prompts: list[list[int]], t: Tags, tool: Callable[[list[str]], list[str | None]] | None,
            *, max_turns: int, max_new_tokens: int, max_obs_tokens: int, max_len: int, device: torch.device,
            dtype: torch.dtype | None, temperature: float, generator: torch.Generator | None,
            timings: dict[str, float] | None = None) -> list[RlTrajectory]:
    """`tool=None` → simulated observations written by `model`. `timings` accumulates generate/tools seconds."""
    tid = tok.convert_tokens_to_ids
    a_open, a_close = tid(t.action_open), tid(t.action_close)
    o_open, o_close = tid(t.obs_open), tid(t.obs_close)
    stops = {a_close, tok.eos_token_id}
    if t.answer_close:
        stops.add(tid(t.answer_close))
    timings = timings if timings is not None else {}
    trajs = [RlTrajectory(list(p), simulated=tool is None) for p in prompts]
    active = list(range(len(trajs)))
    turn = 0
    while active:
        t0 = time.time()
        new, lps, stopped = generate(model, [trajs[i].prompt_ids + trajs[i].ids for i in active], max_new_tokens,
                                     stops, tok.pad_token_id, device, dtype, temperature, generator)
        timings["generate"] = timings.get("generate", 0.0) + time.time() - t0
        calls: list[int] = []
        for i, ids, lp, st in zip(active, new, lps, stopped):
            tr = trajs[i]
            tr.ids += ids
            tr.loss_mask += [1] * len(ids)
            tr.logprobs += lp
            if not st:
                tr.truncated = True
            elif ids[-1] == a_close and turn < max_turns and len(tr.prompt_ids) + len(tr.ids) < max_len:
                calls.append(i)
        turn += 1
        if not calls:
            break
        if tool is None:
            obs = _simulate(model, tok, [trajs[i] for i in calls], o_open, o_close, max_obs_tokens, device, dtype,
                            temperature, generator, timings)
        else:
            obs = _real(tok, [trajs[i] for i in calls], tool, a_open, o_open, o_close, max_obs_tokens, t, timings)
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
    return trajs


def _real(tok: Any, trajs: list[RlTrajectory], tool: Callable, a_open: int, o_open: int, o_close: int,
          max_obs_tokens: int, t: Tags, timings: dict) -> list[list[int]]:
    queries = [tok.decode(_query(tr.ids, a_open), skip_special_tokens=False).strip() for tr in trajs]
    t0 = time.time()
    texts = tool(queries)
    timings["tools"] = timings.get("tools", 0.0) + time.time() - t0
    out = []
    for tr, q, text in zip(trajs, queries, texts):
        tr.queries.append(q)
        if text is None:  # the call failed: an empty observation, counted as a tool failure
            tr.tool_failures += 1
            text = ""
        body = tok(text, add_special_tokens=False)["input_ids"]
        if len(body) > max_obs_tokens:
            body, tr.truncated = body[:max_obs_tokens], True
        out.append([o_open, *body, o_close])
    return out


def _simulate(model: Any, tok: Any, trajs: list[RlTrajectory], o_open: int, o_close: int, max_obs_tokens: int,
              device: torch.device, dtype: torch.dtype | None, temperature: float,
              generator: torch.Generator | None, timings: dict) -> list[list[int]]:
    """The policy writes the observation after the opening tag; cut at the closing tag or max_obs_tokens."""
    for tr in trajs:
        tr.queries.append("")
    t0 = time.time()
    new, _, stopped = generate(model, [tr.prompt_ids + tr.ids + [o_open] for tr in trajs], max_obs_tokens,
                               {o_close}, tok.pad_token_id, device, dtype, temperature, generator)
    timings["generate"] = timings.get("generate", 0.0) + time.time() - t0
    return [[o_open, *ids] if st else [o_open, *ids, o_close] for ids, st in zip(new, stopped)]


def retok_mismatch(tok: Any, ids: list[int]) -> bool:
    """Whether decode → encode of a response changes its ids (token drift between turns would show here)."""
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
