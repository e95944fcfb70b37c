"""The rollout engine's device side: slots over a static KV cache, chunk prefill, and decode steps that run
`BLOCK` at a time with every decision on the device.

A slot holds one trajectory. Its state lives in device tensors: the cache length, the next token to feed, whether
it is decoding, its remaining token budget, which stop set it follows and its stop automaton's state, its
sampling seed and token counter. A decode step feeds every slot's next token, writes its key and value, samples,
checks stops (`stoptable.StopTable`) and retires finished slots — no host synchronisation. The host reads the
block's tokens once per block (`read`) and, between blocks, gives slots new chunks (`prefill`): a new prompt, or
the observation after a tool call appended to the slot's cache as it is (earlier turns are never re-encoded).

On CUDA a block of decode steps is captured once per (session, attention length) as a CUDA graph and replayed: one
launch per `BLOCK` tokens instead of hundreds per token. The attention length is a bucket (a power of two) of the
longest slot, so a step reads the cache up to where slots actually reach, not the whole allocation. Elsewhere
(CPU) the same code runs eagerly."""

from __future__ import annotations

import contextlib
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..base.lifecycle import STOP
from .kvmodel import KVModel
from .sampling import choose
from .stoptable import StopTable
from ..data.tokenizer import TextTokenizer

BLOCK = 8  # decode steps between two host reads
MIN_BUCKET = 64


def bucket(n: int) -> int:
    """The power of two ≥ n (at least MIN_BUCKET): cache capacities and attention lengths."""
    b = MIN_BUCKET
    while b < n:
        b *= 2
    return b


@dataclass
class Stats:
    """What the engine did, for benches and step metrics. `forward_s` / `decode_s` are host wall seconds of eager
    decode steps (the model's forward, the whole step) and `prefill_s` of prefill forwards: real durations on CPU
    only (CUDA runs asynchronously; with CUDA graphs the decode figures stay 0)."""

    decode_steps: int = 0
    blocks: int = 0
    graph_replays: int = 0
    graphs_captured: int = 0
    prefill_tokens: int = 0
    prefill_calls: int = 0
    forward_s: float = 0.0
    decode_s: float = 0.0
    prefill_s: float = 0.0


class Session:
    """One engine configuration — slots, stop table, sampling — with its device state and captured graphs."""

    def __init__(self, engine: "Engine", slots: int, stops: StopTable, temperature: float, top_p: float,
                 bias: torch.Tensor | None, pad_id: int):
        dev, K = engine.device, engine.block
        self.slots, self.stops, self.temperature, self.top_p, self.bias = slots, stops, temperature, top_p, bias

        def z(dt: torch.dtype, *extra: int) -> torch.Tensor:
            return torch.zeros((slots, *extra), dtype=dt, device=dev)

        self.last_tok, self.lens, self.budget, self.set_idx = z(torch.long), z(torch.long), z(torch.long), z(torch.long)
        self.seeds, self.counters, self.active = z(torch.long), z(torch.long), z(torch.bool)
        self.stop_state = stops.fresh_state(slots)
        self.out_tok, self.out_lp = z(torch.long, K + 1), z(torch.float32, K + 1)
        self.out_live, self.out_hit = z(torch.bool, K + 1), z(torch.bool, K + 1)
        self.rows = torch.arange(slots, device=dev)
        self.pad = torch.tensor(pad_id, dtype=torch.long, device=dev)
        self.graphs: dict[int, Any] = {}

    def state(self) -> list[torch.Tensor]:
        return [self.last_tok, self.lens, self.budget, self.counters, self.active, self.stop_state,
                self.out_tok, self.out_lp, self.out_live, self.out_hit]


class Engine:
    """Device work of the rollout engine for one model (see the module doc). `graphs`: capture decode blocks as
    CUDA graphs (default: on CUDA)."""

    def __init__(self, model: torch.nn.Module, device: torch.device, dtype: torch.dtype | None, block: int = BLOCK,
                 graphs: bool | None = None):
        self.kv = KVModel(model, device, dtype)
        self.device, self.dtype, self.block = device, dtype, block
        self.graphs_on = device.type == "cuda" if graphs is None else graphs
        self.sessions: "OrderedDict[tuple, Session]" = OrderedDict()
        self.pool = None
        self.positions = torch.zeros(0, dtype=torch.long, device=device)
        self.stats = Stats()
        self.vocab = self.kv.head.weight.shape[0]
        self._params = self._param_key()
        self._tables: dict[tuple, StopTable] = {}

    # ------------------------------------------------------------ configuration
    def _param_key(self) -> tuple:
        return tuple(p.data_ptr() for p in self.kv.parameters())

    def session(self, slots: int, stops: StopTable, temperature: float, top_p: float,
                bias: dict[int, float] | None, pad_id: int) -> Session:
        """The session for this configuration (made once; its graphs are kept for the next call alike)."""
        if self._param_key() != self._params:  # parameters were replaced (not updated in place): graphs are stale
            self._params = self._param_key()
            self.drop_graphs()
        key = (slots, stops, float(temperature), float(top_p), tuple(sorted((bias or {}).items())), pad_id)
        s = self.sessions.get(key)
        if s is None:
            bt = None
            if bias:
                bt = torch.zeros(self.vocab, dtype=torch.float32)
                for i, b in bias.items():
                    bt[i] = b
                bt = bt.to(self.device)
            s = Session(self, slots, stops, temperature, top_p, bt, pad_id)
            self.sessions[key] = s
            while len(self.sessions) > 4:
                self.sessions.popitem(last=False)
        self.sessions.move_to_end(key)
        return s

    def stop_table(self, tok: TextTokenizer, sets: list[tuple[set[int], list[str]]]) -> StopTable:
        """The device stop table of these stop sets (built once per tokenizer and sets)."""
        key = (id(tok), tuple((tuple(sorted(i for i in a if i is not None)), tuple(b)) for a, b in sets))
        table = self._tables.get(key)
        if table is None or table.tok_ref() is not tok:
            table = self._tables[key] = StopTable(tok, sets, self.vocab, self.device)
        return table

    def reserve(self, slots: int, capacity: int) -> None:
        """A cache of at least `slots` × `capacity` (grown by buckets, contents kept; captured graphs dropped)."""
        if slots <= self.kv.slots and capacity <= self.kv.capacity:
            return
        self.kv.allocate(max(slots, self.kv.slots), bucket(max(capacity, self.kv.capacity)))
        self.positions = torch.arange(self.kv.capacity + 1, device=self.device)
        self.drop_graphs()

    def drop_graphs(self) -> None:
        for s in self.sessions.values():
            s.graphs.clear()

    def free(self) -> None:
        """Release the cache, sessions and graphs (the next call allocates again)."""
        self.sessions.clear()
        self.kv.k, self.kv.v, self.kv.slots, self.kv.capacity = [], [], 0, 0
        self.pool = None

    def attention_length(self, need: int) -> int:
        return min(bucket(need), self.kv.capacity)

    def _autocast(self, capturing: bool = False) -> Any:
        if self.dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=self.dtype, cache_enabled=not capturing)

    # ------------------------------------------------------------ device steps
    def _advance(self, s: Session, rows: torch.Tensor | None, logits: torch.Tensor, live: torch.Tensor, col: int
                 ) -> None:
        """Sample for `rows` (None: every slot, in order — a decode step, done with whole-tensor ops), check stops and
        budgets, write column `col` of the outputs, retire finished rows."""
        full = rows is None

        def get(t: torch.Tensor) -> torch.Tensor:
            return t if full else t[rows]

        def put(t: torch.Tensor, v: torch.Tensor) -> None:
            if full:
                t.copy_(v)
            else:
                t[rows] = v

        tok, lp = choose(logits, s.temperature, s.top_p, get(s.seeds), get(s.counters), s.bias)
        tok = torch.where(live, tok, s.pad)
        state = get(s.stop_state)
        hit, nstate = s.stops.step(tok, state, get(s.set_idx))
        hit = hit & live
        inc = live.long()
        budget = get(s.budget) - inc
        put(s.stop_state, torch.where(live[:, None], nstate, state))
        put(s.budget, budget)
        put(s.counters, get(s.counters) + inc)
        put(s.last_tok, torch.where(live, tok, get(s.last_tok)))
        put(s.active, live & ~(hit | (budget <= 0)))
        where = (slice(None) if full else rows, col)
        s.out_tok[where] = tok
        s.out_lp[where] = lp
        s.out_live[where] = live
        s.out_hit[where] = hit

    def _decode_step(self, s: Session, L: int, col: int) -> None:
        live = s.active.clone()
        write = torch.where(live, s.lens, self.kv.capacity)  # idle slots write to the scratch position
        mask = (self.positions[:L][None, :] <= s.lens[:, None])[:, None, None, :]
        timed = not self.graphs_on
        t0 = time.perf_counter() if timed else 0.0
        logits = self.kv.forward(s.last_tok[:, None], s.lens[:, None], write[:, None], None, L, mask, None)
        if timed:
            self.stats.forward_s += time.perf_counter() - t0
        s.lens += live.long()
        self._advance(s, None, logits, live, col)

    def _block(self, s: Session, L: int) -> None:
        for col in range(1, self.block + 1):
            self._decode_step(s, L, col)

    def prefill(self, s: Session, rows: list[int], chunks: list[list[int]], starts: list[int], budgets: list[int],
                set_ids: list[int]) -> None:
        """Append each chunk to its slot's cache (slot `rows[i]` holds `starts[i]` tokens), then sample the first
        token of the slot's new phase (`budgets[i]` tokens at most, stop set `set_ids[i]`) into output column 0."""
        dev = self.device
        n, C = len(rows), max(len(c) for c in chunks)
        ids = torch.zeros((n, C), dtype=torch.long)
        for i, c in enumerate(chunks):
            ids[i, :len(c)] = torch.tensor(c, dtype=torch.long)
        lengths = torch.tensor([len(c) for c in chunks], dtype=torch.long, device=dev)
        rows_t = torch.tensor(rows, dtype=torch.long, device=dev)
        start_t = torch.tensor(starts, dtype=torch.long, device=dev)
        ids = ids.to(dev)
        offs = torch.arange(C, device=dev)
        pos = start_t[:, None] + offs[None, :]
        write = torch.where(offs[None, :] < lengths[:, None], pos, self.kv.capacity)
        L = self.attention_length(max(st + len(c) for st, c in zip(starts, chunks)))
        mask = (self.positions[:L][None, None, :] <= pos[:, :, None])[:, None]
        t0 = time.perf_counter()
        with self._autocast():
            logits = self.kv.forward(ids, pos, write, rows_t, L, mask, lengths - 1)
        self.stats.prefill_s += time.perf_counter() - t0
        s.lens[rows_t] = start_t + lengths
        s.budget[rows_t] = torch.tensor(budgets, dtype=torch.long, device=dev)
        s.set_idx[rows_t] = torch.tensor(set_ids, dtype=torch.long, device=dev)
        s.stop_state[rows_t] = 0
        self._advance(s, rows_t, logits, torch.ones(n, dtype=torch.bool, device=dev), 0)
        self.stats.prefill_tokens += sum(len(c) for c in chunks)
        self.stats.prefill_calls += 1

    def decode(self, s: Session, L: int) -> None:
        """`block` decode steps over every slot, attending to the first `L` cache positions."""
        self.stats.blocks += 1
        self.stats.decode_steps += self.block
        if not self.graphs_on:
            t0 = time.perf_counter()
            with self._autocast():
                self._block(s, L)
            self.stats.decode_s += time.perf_counter() - t0
            return
        g = s.graphs.get(L)
        if g is None:
            with STOP.shielded():  # a capture cut by a stop signal would leave the stream unusable for the checkpoint
                g = s.graphs[L] = self._capture(s, L)
        g.replay()
        self.stats.graph_replays += 1

    def _capture(self, s: Session, L: int) -> Any:
        """Warm up on a side stream (from a snapshot of the state, restored after), then capture one block."""
        snap = [t.clone() for t in s.state()]

        def restore() -> None:
            for t, v in zip(s.state(), snap):
                t.copy_(v)

        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                restore()
                with self._autocast(capturing=True):
                    self._block(s, L)
        torch.cuda.current_stream().wait_stream(side)
        restore()
        if self.pool is None:
            self.pool = torch.cuda.graph_pool_handle()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, pool=self.pool), self._autocast(capturing=True):
            self._block(s, L)
        restore()
        self.stats.graphs_captured += 1
        return g

    def clear_column0(self, s: Session) -> None:
        s.out_live[:, 0] = False

    def read(self, s: Session) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(tokens, log-probs, live, hit), each [slots, block + 1]: the host's one read per block."""
        packed = s.out_tok | (s.out_live.long() << 40) | (s.out_hit.long() << 41)
        p = packed.cpu().numpy()
        lp = s.out_lp.cpu().numpy()
        return p & ((1 << 40) - 1), lp, (p >> 40) & 1 == 1, (p >> 41) & 1 == 1
