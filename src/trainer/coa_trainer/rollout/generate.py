"""Batched generation, greedy or sampled, with per-token log-probs; stops on token ids or on strings.

`generate` runs the rollout engine (engine.py, continuous.py: static KV cache, device-side sampling and stops,
continuous batching, CUDA graphs on CUDA) for every model it supports (kvmodel.engine_support), and otherwise
`reference_generate`: the plain loop over the model's own forward with transformers' KV cache (left padding), which
is also the reference the engine is tested against token for token. The multi-turn tool loop built on both is
`loop.rollout` (RL, eval and the workflow baseline all use that one loop)."""

from __future__ import annotations

import contextlib
import functools
import weakref
from typing import Any, Callable, Iterator

import torch

from ..model.scoring import autocast
from .sampling import nucleus
from ..data.tokenizer import TextTokenizer

_ENGINES: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()


def engine_for(model: torch.nn.Module, device: torch.device, dtype: torch.dtype | None) -> Any:
    """The model's rollout engine on `device` (made once, kept while the model lives), or None when the engine does
    not support the model (kvmodel.engine_support says why)."""
    from .engine import Engine
    from .kvmodel import engine_support

    if engine_support(model) is not None:
        return None
    per = _ENGINES.get(model)
    if per is None:
        per = _ENGINES[model] = {}
    key = (str(torch.device(device)), dtype)
    if key not in per:
        per[key] = Engine(model, torch.device(device), dtype)
    return per[key]


def engine_path(model: torch.nn.Module, device: torch.device, dtype: torch.dtype | None) -> dict[str, str]:
    """What the rollouts of `model` on `device` run, for the stage's first event: the engine's decode step (compiled or
    eager, its blocks captured as CUDA graphs or replayed) and its attention, or the reference loop with why. Read
    from an engine built with the defaults `engine_for` builds it with (nothing is allocated until a call)."""
    from .engine import Engine
    from .kvmodel import KV_BLOCK, engine_support, lora_class

    why = engine_support(model)
    # a broken peft: no layer is taken for a LoRA layer (a LoRA model then runs in the reference loop, with why)
    lora = "" if lora_class()[1] is None else f"; LoRA layers not recognised: {lora_class()[1]}"
    if why is not None:
        impl = getattr(getattr(model, "config", None), "_attn_implementation", None)
        return {
            "rollout engine": f"reference loop ({why}; transformers' forward and KV cache, one step per token){lora}",
            "rollout attention": f"the model's own ({impl})",
        }
    eng = Engine(model, torch.device(device), dtype)
    where = eng.device.type.upper()
    decode = (
        (
            "compiled decode step and prefill (torch.compile, inductor; deterministic algorithms off inside them — "
            "each index is written once, so the values are the same and the kernels fused; eager from the first "
            "compile failure on, said when it happens)"
        )
        if eng.compiled
        else f"eager decode step and prefill ({where}: the engine compiles them by default on CUDA only)"
    )
    blocks = (
        f"{eng.block}-step blocks captured as CUDA graphs"
        if eng.graphs_on and eng.device.type == "cuda"
        else f"{eng.block}-step blocks run step by step ({where}: CUDA graphs on CUDA only)"
    )
    # kvmodel.KVModel.forward: one attention call per layer over the slot's cache, flex attention when compiled
    if eng.compiled:
        attention = (
            f"flex attention (compiled) over each slot's own key blocks ({KV_BLOCK} positions each) up to "
            "its length, a block mask made from the slots' positions (no dense mask), each KV head read once"
        )
    else:
        attention = (
            "SDPA over each slot's cache up to the block's attention length, a per-row boolean length mask "
            "(SDPA's flash kernel takes no mask: the memory-efficient or math kernel runs), each KV head read "
            "once"
        )
    return {"rollout engine": f"{decode}; {blocks}{lora}", "rollout attention": attention}


def release_engines(model: torch.nn.Module) -> None:
    """Free the KV caches and captured graphs the model's engines hold (they are made again on the next call)."""
    for eng in (_ENGINES.get(model) or {}).values():
        eng.free()


def release_engine_memory(model: torch.nn.Module) -> None:
    """Before a training forward: free what the model's engines hold between calls (KV caches, captured graphs and
    their pool, packed weights), remembering the caches' sizes for `restore_engine_memory`."""
    for eng in (_ENGINES.get(model) or {}).values():
        eng.release()


def restore_engine_memory(model: torch.nn.Module) -> None:
    """After the update: the caches allocated again at their sizes, the packed weights from the updated model."""
    for eng in (_ENGINES.get(model) or {}).values():
        eng.restore()


@contextlib.contextmanager
def eval_mode(model: torch.nn.Module) -> Iterator[None]:
    """The model in eval mode inside, each module's own mode restored after: trajectories are sampled from the
    policy the trainer scores (no dropout — a LoRA model's lora_dropout, a config's attention or hidden dropout —
    while the behaviour policy samples), and training goes on in train mode."""
    modes = [(m, m.training) for m in model.modules()] if hasattr(model, "modules") else []
    for m, _ in modes:
        m.training = False
    try:
        yield
    finally:
        for m, was in modes:
            m.training = was


def in_eval_mode(fn: Callable) -> Callable:
    """`fn(model, …)` run under `eval_mode(model)`."""

    @functools.wraps(fn)
    def wrapped(model: torch.nn.Module, *args: object, **kwargs: object) -> object:
        with eval_mode(model):
            return fn(model, *args, **kwargs)

    return wrapped


def seed_base(generator: torch.Generator | None, temperature: float) -> int:
    """One draw from the caller's generator (or torch's global one): the base of every trajectory's seed."""
    if temperature <= 0:
        return 0
    if generator is None:
        return int(torch.randint(0, 2**62, (1,)).item())
    return int(torch.randint(0, 2**62, (1,), generator=generator, device=generator.device).item())


class StringStops:
    """Stop when a string has been generated, however the tokenizer split it over tokens or merged it with the
    next characters (byte-level BPE writes `</search>` as `</`, `search`, `>` or `>\n\n` …). Only rows whose
    newest token contains a stop string's last character are decoded (a short tail window), so the check costs
    almost nothing on text without tags."""

    def __init__(self, tok: TextTokenizer, strings: list[str]):
        self.tok, self.strings = tok, [s for s in strings if s]
        self.last_chars = {s[-1] for s in self.strings}
        # tokens decode to ≥ 1 character, but up to 4 byte-level tokens may make one character together
        self.window = 4 * max((len(s) for s in self.strings), default=1) + 4
        self._cand: dict[int, bool] = {}

    def __bool__(self) -> bool:
        return bool(self.strings)

    def _candidate(self, t: int) -> bool:
        c = self._cand.get(t)
        if c is None:
            piece = self.tok.decode([t], skip_special_tokens=False)
            c = self._cand[t] = any(ch in piece for ch in self.last_chars)
        return c

    def hit(self, ids: list[int]) -> bool:
        """Whether a stop string ends inside the last token of `ids` (it was not complete before it)."""
        if not ids or not self._candidate(ids[-1]):
            return False
        tail = ids[-self.window :]
        full = self.tok.decode(tail, skip_special_tokens=False)
        prev = self.tok.decode(tail[:-1], skip_special_tokens=False)
        return any(full.find(s, max(0, len(prev) - len(s) + 1)) >= 0 for s in self.strings)


def _takes(model: torch.nn.Module, name: str) -> bool:
    """Whether model.forward accepts keyword `name` (or any keyword: peft passes them on)."""
    import inspect

    params = inspect.signature(model.forward).parameters
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


@torch.no_grad()
@in_eval_mode
def generate(
    model: torch.nn.Module,
    prompts: list[list[int]],
    max_new_tokens: int,
    stop_ids: set[int],
    pad_id: int,
    device: torch.device,
    dtype: torch.dtype | None = None,
    temperature: float = 0.0,
    generator: torch.Generator | None = None,
    stop_strings: StringStops | None = None,
    top_p: float = 1.0,
    slots: int | None = None,
) -> tuple[list[list[int]], list[list[float]], list[bool]]:
    """Continue each prompt until a stop id or stop string (included) or max_new_tokens. Greedy when
    temperature == 0. Returns (new ids, their log-probs under the sampling distribution, whether each row stopped on
    a stop). The engine when it supports the model (sampled rows then depend on their own seed only: sampling.py;
    `slots`: rows decoded at once, the others queue), `reference_generate` otherwise (its rows share one
    generator's stream)."""
    eng = engine_for(model, device, dtype)
    if eng is None:
        return reference_generate(
            model,
            prompts,
            max_new_tokens,
            stop_ids,
            pad_id,
            device,
            dtype,
            temperature,
            generator,
            stop_strings,
            top_p=top_p,
        )
    B = len(prompts)
    if B == 0:
        return [], [], []
    if max_new_tokens <= 0:
        return [[] for _ in range(B)], [[] for _ in range(B)], [False] * B
    from .continuous import Continuous, Job
    from .turns import Limits
    from .trajectory import RlTrajectory
    from .sampling import trajectory_seed

    strings = stop_strings.strings if stop_strings else []
    stops = eng.stop_table(stop_strings.tok if stop_strings else None, [(set(stop_ids), strings)])
    base = seed_base(generator, temperature)
    jobs = [Job(i, RlTrajectory(list(p)), seed=trajectory_seed(base, i)) for i, p in enumerate(prompts)]
    limits = Limits(max_turns=0, max_new_tokens=max_new_tokens, max_obs_tokens=0, max_len=1 << 62, simulate=False)
    Continuous(eng, None, jobs, limits, None, temperature, top_p, pad_id, stops, agent=False, slots=slots).run()
    return [j.tr.ids for j in jobs], [j.tr.logprobs for j in jobs], [j.hit for j in jobs]


@torch.no_grad()
@in_eval_mode
def reference_generate(
    model: Any,
    prompts: list[list[int]],
    max_new_tokens: int,
    stop_ids: set[int],
    pad_id: int,
    device: torch.device,
    dtype: torch.dtype | None = None,
    temperature: float = 0.0,
    generator: torch.Generator | None = None,
    stop_strings: StringStops | None = None,
    static_cache: bool = False,
    top_p: float = 1.0,
) -> tuple[list[list[int]], list[list[float]], list[bool]]:
    """The reference loop: the model's own forward with transformers' KV cache, one host step per token. Continue
    each prompt until a stop id or stop string (included) or max_new_tokens. Greedy when temperature == 0. Returns (new ids, their log-probs under the sampling distribution, whether each row
    stopped on a stop). `static_cache`: one KV cache allocated up front for the batch × (prompt + max_new_tokens)
    (transformers StaticCache) instead of one that grows by concatenation every step — no per-step reallocation,
    fixed shapes (what CUDA graphs need), but every step attends over the whole allocated length. `top_p` < 1 samples
    from the nucleus (sampling.nucleus); the log-probs stay those of the whole tempered distribution, as the
    engine's."""
    B = len(prompts)
    if B == 0:
        return [], [], []
    if max_new_tokens <= 0:
        return [[] for _ in range(B)], [[] for _ in range(B)], [False] * B
    T = max(len(p) for p in prompts)
    ids = torch.full((B, T), pad_id, dtype=torch.long)
    attn = torch.zeros((B, T), dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, T - len(p) :] = torch.tensor(p, dtype=torch.long)
        attn[i, T - len(p) :] = 1
    ids, attn = ids.to(device), attn.to(device)
    pos = (attn.cumsum(-1) - 1).clamp(min=0)
    done = torch.zeros(B, dtype=torch.bool, device=device)
    stop = torch.tensor(sorted(stop_ids), dtype=torch.long, device=device)
    # Per-step results stay on the device and cross to the host once at the end: reading them row by row (int(),
    # float(), done[i]) costs one device sync per element, which made CUDA rollouts of a tiny model slower than
    # CPU (first CUDA run: 253 generated tok/s at batch 64). One sync per step remains: the early stop — with
    # stop strings it is the step's token ids instead (the strings are checked on the host).
    steps_tok: list[torch.Tensor] = []
    steps_lp: list[torch.Tensor] = []
    steps_live: list[torch.Tensor] = []
    steps_hit: list[torch.Tensor] = []
    strings = stop_strings if stop_strings else None
    rows: list[list[int]] = [[] for _ in range(B)]
    done_host = [False] * B
    past = None
    # logits of the last position only: the prefill's full [B, T, vocab] logits were 10 GB at batch 256 × 64 prompt
    # tokens with Qwen2.5's 151,936-entry vocabulary (bench/gpu). Every transformers causal LM takes the argument.
    last_only = {"logits_to_keep": 1} if _takes(model, "logits_to_keep") else {}
    if static_cache:
        from transformers import StaticCache

        past = StaticCache(config=model.config, max_cache_len=T + max_new_tokens)
    step_ids, step_pos = ids, pos
    for _ in range(max_new_tokens):
        with autocast(device, dtype):
            res = model(
                input_ids=step_ids,
                attention_mask=attn,
                position_ids=step_pos,
                past_key_values=past,
                use_cache=True,
                **last_only,
            )
        past = res.past_key_values
        logits = res.logits[:, -1].float()
        logp = torch.log_softmax(logits / temperature if temperature > 0 else logits, dim=-1)
        if temperature > 0:
            nxt = torch.multinomial(nucleus(logp.exp(), top_p), 1, generator=generator).squeeze(-1)
        else:
            nxt = logits.argmax(-1)
        nxt = torch.where(done, torch.full_like(nxt, pad_id), nxt)
        steps_tok.append(nxt)
        steps_lp.append(logp.gather(-1, nxt.unsqueeze(-1)).squeeze(-1))
        steps_live.append(~done)
        if strings is None:
            hit = torch.isin(nxt, stop) & ~done
            steps_hit.append(hit)
            done = done | hit
            if bool(done.all()):
                break
        else:
            hits = [False] * B
            for i, t in enumerate(nxt.tolist()):  # the step's one sync
                if done_host[i]:
                    continue
                rows[i].append(t)
                hits[i] = t in stop_ids or strings.hit(rows[i])
                done_host[i] = hits[i]
            steps_hit.append(torch.tensor(hits, device=device))
            if all(done_host):
                break
            done = torch.tensor(done_host, device=device)
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
