"""Batched generation with a KV cache (left padding), and the multi-turn tool loop. Token ids flow end to end:
generated ids are kept as ids, observations are encoded once and appended with loss-mask 0 — no decode → re-encode
between turns. Written for reuse by the RL stages (sampling, per-token log-probs, masks)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from .dialects import Tags
from .losses import autocast


@torch.no_grad()
def generate(model: Any, prompts: list[list[int]], max_new_tokens: int, stop_ids: set[int], pad_id: int,
             device: torch.device, dtype: torch.dtype | None = None, temperature: float = 0.0,
             generator: torch.Generator | None = None) -> tuple[list[list[int]], list[list[float]], list[bool]]:
    """Continue each prompt until a stop id (included) or max_new_tokens. Greedy when temperature == 0.
    Returns (new ids, their log-probs under the sampling distribution, whether each row stopped on a stop id)."""
    B = len(prompts)
    if B == 0:
        return [], [], []
    if max_new_tokens <= 0:
        return [[] for _ in range(B)], [[] for _ in range(B)], [False] * B
    T = max(len(p) for p in prompts)
    ids = torch.full((B, T), pad_id, dtype=torch.long)
    attn = torch.zeros((B, T), dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, T - len(p):] = torch.tensor(p, dtype=torch.long)
        attn[i, T - len(p):] = 1
    ids, attn = ids.to(device), attn.to(device)
    pos = (attn.cumsum(-1) - 1).clamp(min=0)
    done = torch.zeros(B, dtype=torch.bool, device=device)
    stop = torch.tensor(sorted(stop_ids), dtype=torch.long, device=device)
    # Per-step results stay on the device and cross to the host once at the end: reading them row by row (int(),
    # float(), done[i]) costs one device sync per element, which made CUDA rollouts of a tiny model slower than
    # CPU (first CUDA run: 253 generated tok/s at batch 64). One sync per step remains: the early stop.
    steps_tok: list[torch.Tensor] = []
    steps_lp: list[torch.Tensor] = []
    steps_live: list[torch.Tensor] = []
    steps_hit: list[torch.Tensor] = []
    past = None
    step_ids, step_pos = ids, pos
    for _ in range(max_new_tokens):
        with autocast(device, dtype):
            res = model(input_ids=step_ids, attention_mask=attn, position_ids=step_pos, past_key_values=past,
                        use_cache=True)
        past = res.past_key_values
        logits = res.logits[:, -1].float()
        logp = torch.log_softmax(logits / temperature if temperature > 0 else logits, dim=-1)
        if temperature > 0:
            nxt = torch.multinomial(logp.exp(), 1, generator=generator).squeeze(-1)
        else:
            nxt = logits.argmax(-1)
        nxt = torch.where(done, torch.full_like(nxt, pad_id), nxt)
        hit = torch.isin(nxt, stop) & ~done
        steps_tok.append(nxt)
        steps_lp.append(logp.gather(-1, nxt.unsqueeze(-1)).squeeze(-1))
        steps_live.append(~done)
        steps_hit.append(hit)
        done = done | hit
        if bool(done.all()):
            break
        attn = torch.cat([attn, torch.ones_like(attn[:, :1])], dim=-1)
        step_pos = step_pos[:, -1:] + 1
        step_ids = nxt.unsqueeze(-1)
    toks = torch.stack(steps_tok, 1).tolist()
    lps = torch.stack(steps_lp, 1).tolist()
    live = torch.stack(steps_live, 1).tolist()
    stopped = torch.stack(steps_hit, 1).any(1).tolist()
    out = [[t for t, keep in zip(toks[i], live[i]) if keep] for i in range(B)]
    logps = [[lp for lp, keep in zip(lps[i], live[i]) if keep] for i in range(B)]
    return out, logps, stopped


@dataclass
class Trajectory:
    """One multi-turn rollout: response ids with per-token mask (1 = model wrote it) and kind."""

    prompt_ids: list[int]
    ids: list[int] = field(default_factory=list)
    loss_mask: list[int] = field(default_factory=list)
    logprobs: list[float | None] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)
    tool_failures: int = 0
    finished: bool = False  # ended with an answer / stop, not by a limit
    truncated: bool = False


def _last_between(ids: list[int], open_id: int, close_id: int) -> list[int] | None:
    try:
        end = len(ids) - 1 - ids[::-1].index(close_id)
        start = len(ids) - 1 - ids[::-1].index(open_id)
    except ValueError:
        return None
    return ids[start + 1:end] if start < end else None


def rollout(model: Any, tok: Any, prompts: list[list[int]], t: Tags,
            tool: Callable[[list[str]], list[str]] | None, max_turns: int, max_new_tokens: int,
            device: torch.device, dtype: torch.dtype | None = None, temperature: float = 0.0,
            generator: torch.Generator | None = None, max_total: int = 1024) -> list[Trajectory]:
    """The agent loop: generate until an action close / answer close / EOS; for an action, call `tool` with the
    query text and append `<obs>observation</obs>` ids (mask 0). `tool=None` means no tools: an action ends the
    trajectory. Each trajectory allows at most `max_turns` tool calls."""
    tid = tok.convert_tokens_to_ids
    a_open, a_close = tid(t.action_open), tid(t.action_close)
    stops = {a_close, tok.eos_token_id}
    if t.answer_close:
        stops.add(tid(t.answer_close))
    trajs = [Trajectory(list(p)) for p in prompts]
    active = list(range(len(trajs)))
    turn = 0
    while active:
        new, lps, stopped = generate(model, [trajs[i].prompt_ids + trajs[i].ids for i in active], max_new_tokens,
                                     stops, tok.pad_token_id, device, dtype, temperature, generator)
        calls: list[tuple[int, str]] = []
        for i, ids, lp, st in zip(active, new, lps, stopped):
            tr = trajs[i]
            tr.ids += ids
            tr.loss_mask += [1] * len(ids)
            tr.logprobs += lp
            if not st:
                tr.truncated = True
            elif ids[-1] == a_close and tool is not None and turn < max_turns:
                q = _last_between(tr.ids, a_open, a_close)
                calls.append((i, tok.decode(q, skip_special_tokens=False).strip() if q else ""))
            else:
                tr.finished = ids[-1] != a_close
        turn += 1
        if not calls:
            break
        observations = tool([q for _, q in calls])  # type: ignore[misc]
        active = []
        for (i, q), obs in zip(calls, observations):
            tr = trajs[i]
            tr.queries.append(q)
            if obs is None:
                tr.tool_failures += 1
                obs = ""
            obs_ids = tok(f"{t.obs_open}{obs}{t.obs_close}", add_special_tokens=False)["input_ids"]
            tr.ids += obs_ids
            tr.loss_mask += [0] * len(obs_ids)
            tr.logprobs += [None] * len(obs_ids)
            if len(tr.prompt_ids) + len(tr.ids) >= max_total:
                tr.truncated = True
            else:
                active.append(i)
    return trajs
