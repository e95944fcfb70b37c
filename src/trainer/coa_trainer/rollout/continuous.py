"""Continuous batching over the rollout engine: trajectories queue for slots, every slot runs its own trajectory
through its phases (a policy turn, a simulated observation), a finished trajectory's slot is refilled from the queue
at once, and tool calls run in a worker thread while the other slots keep decoding.

The turn rules are `turns.py`'s, which `loop.run_turns` applies too (so the agent-turn conformance vectors hold both),
per trajectory: a turn ends on a stop (closing action or answer tag, EOS) or its token budget; after an action the
tool's observation — or, simulated, the policy's own, after the opening tag — is appended and the trajectory goes on,
within `max_turns` and `max_len`; a turn that ran out of tokens truncates the trajectory, one that ended otherwise
finishes it; the model may run past `max_len` in its last turn, and is cut back to it. Because every trajectory's tokens depend on its own ids and seed only (sampling.py), the results are
those of the turn-by-turn loop: greedy rollouts equal `loop.run_turns` with the reference sampler token for token,
whatever the batch, the refill order or when a tool answers.

What is appended after a tool call (the observation ids, with the turn's last sampled token before them) goes into
the slot's cache as one prefill chunk: no turn is ever encoded twice (`Engine.stats.prefill_tokens` counts)."""

from __future__ import annotations

import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from .engine import Engine, Session, Staged, bucket
from .trajectory import crc
from .stoptable import StopTable
from .turns import (
    Limits,
    after_turn,
    append_observation,
    append_unsampled,
    cut_to_length,
    goes_on_after_observation,
    tool_answered,
)

TURN, OBS = 0, 1  # stop sets / phases
MAX_SLOTS = 256
PREFILL_TOKENS = 16384  # padded tokens per prefill forward
KV_FRACTION = 0.5  # of the GPU memory free at the start of a call, at most, for the KV cache


def slot_bucket(n: int) -> int:
    """Slots in a few sizes (8, 16, … 64, then steps of 32), so calls with nearby batch sizes share a session and its
    CUDA graphs; the spare slots idle."""
    if n <= 8:
        return n
    step = 8 if n <= 64 else 32
    return min(MAX_SLOTS, -(-n // step) * step)


@dataclass
class Job:
    index: int
    tr: Any  # loop.RlTrajectory
    slot: int = -1
    length: int = 0  # tokens in the slot's cache
    pending: list[int] = field(default_factory=list)  # ids to append before the next phase (its chunk)
    counter: int = 0  # tokens sampled so far: the sampling counter
    seed: int = 0
    phase: int = TURN
    start: int = 0  # where the phase's tokens begin in tr.ids
    budget: int = 0  # tokens the phase may still sample
    hit: bool = False
    turn: int = 0
    unread: int = 0  # decode steps launched for the job whose tokens the host has not read yet
    phases: int = 0  # phases begun: which phase a launched block's tokens belong to


class Continuous:
    """One rollout call: `run()` takes every job through its phases (see the module doc). `tool` None and not
    `simulate`: an action ends the trajectory. `agent` False: one phase per job (plain generation)."""

    def __init__(
        self,
        engine: Engine,
        io: Any,
        jobs: list[Job],
        limits: Limits,
        tool: Callable | None,
        temperature: float,
        top_p: float,
        pad_id: int,
        stops: StopTable,
        agent: bool = True,
        timings: dict[str, float] | None = None,
        slots: int | None = None,
        logit_bias: dict[int, float] | None = None,
    ):
        self.engine, self.io, self.jobs, self.lim, self.tool, self.agent = engine, io, jobs, limits, tool, agent
        self.timings = timings if timings is not None else {}
        n = slots or slot_bucket(min(len(jobs), MAX_SLOTS))
        n = max(1, min(n, self._slots_that_fit(engine, jobs, limits, agent)))
        if engine.compiled:
            n = max(n, 2)  # a compiled step serves sizes ≥ 2 (engine.compile_fn); the second slot idles
        self.session: Session = engine.session(n, stops, temperature, top_p, logit_bias, pad_id)
        self.slots = n
        self.free = list(range(n))[::-1]
        self.queue = deque(jobs)
        self.starts: list[Job] = []
        self.decoding: dict[int, Job] = {}  # slot → job whose phase is decoding on the device
        self.waiting: list[tuple[Future, list[tuple[Job, str]]]] = []
        self.pool: ThreadPoolExecutor | None = None
        self.tool_s = 0.0
        self.blocked_s = 0.0

    @staticmethod
    def _slots_that_fit(engine: Engine, jobs: list[Job], lim: Limits, agent: bool) -> int:
        """On CUDA, the slots whose KV cache at a trajectory's longest possible length fits in KV_FRACTION of the
        free memory (plus what the engine's cache already holds); the other trajectories queue."""
        if engine.device.type != "cuda" or not jobs:
            return MAX_SLOTS
        longest = max(len(j.tr.prompt_ids) + len(j.tr.ids) for j in jobs) + lim.max_new_tokens
        if agent:  # every turn and observation the limits allow, bounded by max_len (+ the last turn past it)
            turns = lim.max_turns * (lim.max_new_tokens + lim.max_obs_tokens + 16)
            longest = min(longest + turns, lim.max_len + max(lim.max_new_tokens, lim.max_obs_tokens + 16))
        free, _ = torch.cuda.mem_get_info(engine.device)
        held = engine.kv.slots * (engine.kv.capacity + 1) * engine.kv.bytes_per_token()
        per_slot = (bucket(longest + 1) + 1) * engine.kv.bytes_per_token()  # capacities come in buckets
        return max(1, int((free + held) * KV_FRACTION) // per_slot)

    # ------------------------------------------------------------ phases
    def _begin(self, job: Job, phase: int, budget: int) -> None:
        tr = job.tr
        ctx = tr.prompt_ids + tr.ids
        tr.contexts.append((len(ctx), crc(ctx)))
        job.phase, job.budget, job.start, job.hit = phase, budget, len(tr.ids), False
        job.phases += 1
        self.starts.append(job)

    def _begin_turn(self, job: Job) -> None:
        self._begin(job, TURN, self.lim.max_new_tokens)

    def _append(self, job: Job, ids: list[int]) -> None:
        """Non-sampled ids (observation, tags): mask 0, no log-prob; fed to the cache with the next chunk."""
        append_unsampled(job.tr, ids)
        job.pending += ids

    def _finish(self, job: Job) -> None:
        if self.agent:
            cut_to_length(job.tr, self.lim.max_len)
        self.free.append(job.slot)
        job.slot = -1

    def _size(self, job: Job) -> int:
        return len(job.tr.prompt_ids) + len(job.tr.ids)

    def _phase_end(self, job: Job, calls: list[tuple[Job, str]]) -> None:
        tr, io, lim = job.tr, self.io, self.lim
        if not self.agent:
            self._finish(job)
            return
        if job.phase == OBS:
            if not job.hit:
                self._append(job, io.obs_close_ids())
            self._after_observation(job)
            return
        # the action is looked for only in a turn that stopped (one cut by its budget is truncated whatever it holds)
        action = job.hit and io.ended_with_action(tr.ids[job.start :])
        if after_turn(
            tr,
            stopped=job.hit,
            action=action,
            turns_done=job.turn,
            size=self._size(job),
            lim=lim,
            has_tool=self.tool is not None,
        ):
            job.turn += 1
            if self.tool is None:
                tr.queries.append("")
                self._append(job, io.obs_open_ids())
                self._begin(job, OBS, lim.max_obs_tokens)
            else:
                calls.append((job, io.query(tr.ids, job.start)))
            return
        self._finish(job)

    def _after_observation(self, job: Job) -> None:
        if goes_on_after_observation(job.tr, self._size(job), self.lim.max_len):
            self._begin_turn(job)
        else:
            self._finish(job)

    def _observe(self, job: Job, query: str, text: str | None) -> None:
        job.pending += append_observation(job.tr, self.io, tool_answered(job.tr, query, text), self.lim.max_obs_tokens)
        self._after_observation(job)

    # ------------------------------------------------------------ tools
    def _timed_tool(self, queries: list[str]) -> list[str | None]:
        assert self.tool is not None  # called only for a job whose turn calls the tool
        t0 = time.perf_counter()
        try:
            return self.tool(queries)
        finally:
            self.tool_s += time.perf_counter() - t0

    def _submit(self, calls: list[tuple[Job, str]]) -> None:
        if self.pool is None:
            self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="coa-tool")
        self.waiting.append((self.pool.submit(self._timed_tool, [q for _, q in calls]), calls))

    def _collect(self, block: bool) -> None:
        """Apply every finished tool call (the oldest one waited for when `block`)."""
        if block and self.waiting and not any(f.done() for f, _ in self.waiting):
            t0 = time.perf_counter()
            self.waiting[0][0].result()
            self.blocked_s += time.perf_counter() - t0
        still = []
        for fut, calls in self.waiting:
            if not fut.done():
                still.append((fut, calls))
                continue
            texts = fut.result()
            for (job, q), text in zip(calls, texts):
                self._observe(job, q, text)
        self.waiting = still

    # ------------------------------------------------------------ the loop
    def _prefill(self) -> None:
        eng, s = self.engine, self.session
        starts, self.starts = sorted(self.starts, key=lambda j: len(j.pending)), []
        for job in starts:
            if not job.pending:
                raise ValueError(f"trajectory {job.index}: an empty prompt cannot be continued")
            eng.reserve(self.slots, job.length + len(job.pending) + job.budget + 1)
        where = torch.tensor([j.slot for j in starts], device=eng.device)
        s.seeds[where] = torch.tensor([j.seed for j in starts], dtype=torch.long, device=eng.device)
        s.counters[where] = torch.tensor([j.counter for j in starts], dtype=torch.long, device=eng.device)
        i = 0
        while i < len(starts):  # shortest chunks first, a group's padded tokens within PREFILL_TOKENS
            k = i + 1
            while k < len(starts) and (k + 1 - i) * len(starts[k].pending) <= PREFILL_TOKENS:
                k += 1
            group = starts[i:k]
            eng.prefill(
                s,
                [j.slot for j in group],
                [j.pending for j in group],
                [j.length for j in group],
                [j.budget for j in group],
                [j.phase for j in group],
            )
            for j in group:
                j.length += len(j.pending)
                j.pending = []
                self.decoding[j.slot] = j
            i = k

    def _refill(self) -> None:
        while self.free and self.queue:
            job = self.queue.popleft()
            job.slot = self.free.pop()
            job.pending = list(job.tr.prompt_ids)
            self._begin_turn(job)

    def run(self) -> None:
        eng, s = self.engine, self.session
        t_start = time.perf_counter()
        staged: Staged | None = None  # the launched block not yet read (the engine's `overlap`)
        try:
            eng.sync_weights()  # the packed weights as the model is now
            s.active.zero_()  # a session's state outlives a call (an interrupted one too)
            while self.queue or self.decoding or self.waiting or self.starts or staged is not None:
                self._refill()
                self._collect(block=not self.decoding and not self.starts and staged is None)
                self._refill()  # slots freed by observations that ended their trajectories
                launched = None
                if self.starts or self._may_decode():
                    eng.clear_column0(s)
                    if self.starts:
                        self._prefill()
                    need = max(j.length + min(j.budget, j.unread + eng.block) for j in self.decoding.values())
                    eng.decode(s, eng.attention_length(need))
                    for j in self.decoding.values():
                        j.unread += eng.block
                    launched = eng.stage(s, {slot: (j, j.phases) for slot, j in self.decoding.items()})
                if not eng.overlap and launched is not None:
                    staged, launched = launched, None
                if staged is not None:  # read while the block just launched runs
                    self._read(staged)
                elif launched is None and self.decoding and not self.starts and not self.waiting:
                    raise RuntimeError("rollout engine: trajectories decoding but no block to run or read")
                staged = launched
        finally:
            if self.pool is not None:
                self.pool.shutdown(wait=True)
        wall = time.perf_counter() - t_start
        self.timings["generate"] = self.timings.get("generate", 0.0) + wall - self.blocked_s
        if self.tool is not None:
            self.timings["tools"] = self.timings.get("tools", 0.0) + self.tool_s

    def _may_decode(self) -> bool:
        """Whether some decoding job may still sample: one whose budget the blocks not yet read can have used up is
        done for sure (a stop is known only once read: a block may then run with every slot idle)."""
        return any(j.unread < j.budget for j in self.decoding.values())

    def _read(self, staged: Staged) -> None:
        tok, lp, live, hit = staged.read()
        calls: list[tuple[Job, str]] = []
        for slot, (job, phase) in (staged.jobs or {}).items():
            job.unread -= self.engine.block
            if self.decoding.get(slot) is not job or job.phases != phase:  # that phase ended in an earlier block
                continue
            cols = live[slot].nonzero()[0]
            if len(cols) == 0:  # a decoding slot samples in every block it runs in: its device state was lost
                raise RuntimeError(
                    f"rollout engine: slot {slot} (trajectory {job.index}) sampled nothing in a block while decoding"
                )
            toks = tok[slot, cols].tolist()
            tr = job.tr
            tr.ids += toks
            if job.phase == TURN:
                tr.loss_mask += [1] * len(toks)
                tr.logprobs += lp[slot, cols].tolist()
            else:
                tr.loss_mask += [0] * len(toks)
                tr.logprobs += [None] * len(toks)
            n = len(toks)
            job.counter += n
            job.budget -= n
            # every live step but the last wrote its input token to the cache; the last token sampled is pending
            job.length += n - 1 if cols[0] == 0 else n
            job.hit = bool(hit[slot, cols[-1]])
            if job.hit or job.budget <= 0:
                del self.decoding[slot]
                job.pending = [toks[-1]]
                self._phase_end(job, calls)
        if calls:
            self._submit(calls)
