"""The rollout engine's device side: slots over a static KV cache, chunk prefill, and decode steps that run
`BLOCK` at a time with every decision on the device.

A slot holds one trajectory. Its state lives in device tensors: the cache length, the next token to feed, whether
it is decoding, its remaining token budget, which stop set it follows and its stop automaton's state, its
sampling seed and token counter. A decode step feeds every slot's next token, writes its key and value, samples,
checks stops (`stoptable.StopTable`) and retires finished slots — no host synchronisation. The host reads the
block's tokens once per block (`stage`, then `Staged.read`) and, between blocks, gives slots new chunks (`prefill`):
a new prompt, or the observation after a tool call appended to the slot's cache as it is (earlier turns are never
re-encoded).

A decode step and a prefill are each one function of tensors, compiled with torch.compile (fullgraph, dynamic
shapes: one compilation serves every slot count, chunk length and attention length) when `compiled` — by default on
CUDA; on CPU the same code runs through inductor's C++ backend when asked (the tests do). Compiled, a step of the
0.5B shape is 9 kernels per layer: a fused RMSNorm (+ the residual add), the packed q|k|v product, one kernel for
RoPE and the cache write, flex attention, the output product, a fused residual add + RMSNorm, the packed gate|up
product, SiLU·mul, the down product (kvmodel.py packs the weights) — in torch's deterministic mode too, which the
compiled calls turn off inside (`fusible`: the same values, fused kernels).

With `graphs` (default: on CUDA) a block of decode steps is captured once per (session, attention length) and
replayed: one launch per `BLOCK` tokens. The attention length is the longest slot's reach rounded up to a quarter of
its power of two (≥ 64): the shape the block is captured for. Compiled, each slot reads its own key blocks only, up
to its own length (kvmodel.block_mask); eager, every slot reads up to the attention length under a mask. The
capture protocol — warm-up runs (which compile) from a snapshot of the slots' state, restored after — is the same on
every device; on CPU the captured "graph" replays the block's steps."""

from __future__ import annotations

import contextlib
import functools
import sys
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np
import torch

from ..base.lifecycle import STOP
from .kvmodel import MAX_ROWS, KVModel
from .sampling import choose
from .stoptable import StopTable
from ..data.tokenizer import TextTokenizer

# what the host knew was decoding when a block was launched: slot → (continuous.Job, the job's phase count then)
Jobs = dict[int, tuple[Any, int]]

BLOCK = 8  # decode steps between two host reads
MIN_BUCKET = 64


def bucket(n: int) -> int:
    """The power of two ≥ n (at least MIN_BUCKET): cache capacities."""
    b = MIN_BUCKET
    while b < n:
        b *= 2
    return b


def span(n: int) -> int:
    """Attention lengths: n rounded up to a multiple of a quarter of its power of two (at least MIN_BUCKET) — a few
    lengths per octave, each read ≤ 25 % past n."""
    step = max(MIN_BUCKET, bucket(n) // 4)
    return max(MIN_BUCKET, -(-n // step) * step)


@dataclass
class Stats:
    """What the engine did, for benches and step metrics. `forward_s` / `decode_s` are host wall seconds of eager
    decode steps (the model's forward, the whole step) and `prefill_s` of prefill forwards: real durations on CPU
    only (CUDA runs asynchronously; with graphs the decode figures stay 0). `compile_error`: why the engine fell
    back from its compiled steps to eager ones (None: it did not)."""

    decode_steps: int = 0
    blocks: int = 0
    graph_replays: int = 0
    graphs_captured: int = 0
    prefill_tokens: int = 0
    prefill_calls: int = 0
    forward_s: float = 0.0
    decode_s: float = 0.0
    prefill_s: float = 0.0
    weight_syncs: int = 0
    releases: int = 0
    compile_error: str | None = None


class Session:
    """One engine configuration — slots, stop table, sampling — with its device state and captured graphs."""

    def __init__(
        self,
        engine: "Engine",
        slots: int,
        stops: StopTable,
        temperature: float,
        top_p: float,
        bias: torch.Tensor | None,
        pad_id: int,
    ):
        dev, K = engine.device, engine.block
        self.slots, self.stops, self.temperature, self.top_p, self.bias = slots, stops, temperature, top_p, bias

        def z(dt: torch.dtype, *extra: int) -> torch.Tensor:
            return torch.zeros((slots, *extra), dtype=dt, device=dev)

        self.last_tok, self.lens, self.budget, self.set_idx = z(torch.long), z(torch.long), z(torch.long), z(torch.long)
        self.seeds, self.counters, self.active = z(torch.long), z(torch.long), z(torch.bool)
        self.stop_state = stops.fresh_state(slots)
        self.out_tok, self.out_lp = z(torch.long, K + 1), z(torch.float32, K + 1)
        self.out_live, self.out_hit = z(torch.bool, K + 1), z(torch.bool, K + 1)
        self.cols = [torch.tensor([c], device=dev) for c in range(K + 1)]  # output columns as index tensors
        self.pad = torch.tensor(pad_id, dtype=torch.long, device=dev)
        self.graphs: dict[int, Any] = {}

    def state(self) -> list[torch.Tensor]:
        return [
            self.last_tok,
            self.lens,
            self.budget,
            self.counters,
            self.active,
            self.stop_state,
            self.out_tok,
            self.out_lp,
            self.out_live,
            self.out_hit,
        ]


class Staged:
    """A block's outputs on their way to the host (`Engine.stage`): on CUDA a non-blocking copy into pinned memory
    that `read()` waits for, so the next block can be launched before this one is read."""

    def __init__(self, tensors: list[torch.Tensor], event: torch.cuda.Event | None, jobs: Jobs | None = None):
        self.tensors, self.event, self.jobs = tensors, event, jobs

    def read(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(tokens, log-probs, live, hit), each [slots, block + 1]."""
        if self.event is not None:
            self.event.synchronize()
        tok, lp, live, hit = (t.numpy() for t in self.tensors)
        return tok, lp, live, hit


class _Replay:
    """The captured block where there are no CUDA graphs: replaying runs the block's (compiled) steps again."""

    def __init__(self, fn: Callable[[], None]):
        self.fn = fn

    def replay(self) -> None:
        self.fn()


def compile_fn(fn: Callable, device: torch.device) -> Callable:
    """`fn` compiled whole (fullgraph: a graph break is an error, not a silent split) for dynamic shapes: one
    compilation serves every size ≥ 2 (a size of 1 would be a second one, so the engine keeps sessions and prefills
    at 2 rows and 2 tokens at least), and sizes that happen to be equal are not assumed equal (no duck sizing: a
    session as large as the cache must not make a smaller one recompile). On CPU the generated C++ kernels are
    recorded in the profiler, so that kernels per step can be counted (kernels.decode_kernels)."""
    if device.type == "cpu":
        compiled = torch.compile(fn, fullgraph=True, dynamic=True, options={"cpp.enable_kernel_profile": True})
    else:
        compiled = torch.compile(fn, fullgraph=True, dynamic=True)
    try:
        import torch.fx.experimental._config as fx_config

        fx_config.use_duck_shape  # noqa: B018 — present in this torch
        patch = fx_config.patch  # pyright: ignore[reportAttributeAccessIssue] — made by torch's config module
        distinct: Callable[[], Any] = lambda: patch(use_duck_shape=False)  # noqa: E731
    except (ImportError, AttributeError):
        distinct = contextlib.nullcontext

    def call(*args: object) -> object:
        with distinct(), fusible():
            return compiled(*args)

    return call


@contextlib.contextmanager
def fusible() -> Iterator[None]:
    """Torch's deterministic algorithms off inside, the caller's mode restored after: a stage's `deterministic: true`
    turns them on, and then inductor leaves every index_put_ (the KV cache writes, the outputs' columns) to aten's
    sorting kernel — 16.0 kernels per decode step and layer instead of 10.5 at Qwen2.5-0.5B's layer shape on CPU. The
    compiled steps write each index once (a slot's own cache row and output column, idle slots their own scratch
    position): no accumulation, so the kernels differ and the values written do not — rollouts repeat exactly in
    either mode. (The mode is a guard of the compilation: every call runs in this one, so it compiles once.)"""
    on, warn = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    if on:
        torch.use_deterministic_algorithms(False)
    try:
        yield
    finally:
        if on:
            torch.use_deterministic_algorithms(True, warn_only=warn)


class Engine:
    """Device work of the rollout engine for one model (see the module doc). `graphs`: capture decode blocks
    (default: on CUDA); `compiled`: torch.compile the decode step and the prefill (default: on CUDA); `overlap`: the
    host reads a block while the next one runs (default: on CUDA, where the two run at once)."""

    def __init__(
        self,
        model: torch.nn.Module,
        device: torch.device,
        dtype: torch.dtype | None,
        block: int = BLOCK,
        graphs: bool | None = None,
        compiled: bool | None = None,
        overlap: bool | None = None,
    ):
        self.kv = KVModel(model, device, dtype)
        self.device, self.dtype, self.block = device, dtype, block
        self.graphs_on = device.type == "cuda" if graphs is None else graphs
        self.compiled = device.type == "cuda" if compiled is None else compiled
        self.overlap = device.type == "cuda" if overlap is None else overlap
        self.sessions: "OrderedDict[tuple, Session]" = OrderedDict()
        self.pool = None
        self.positions = torch.zeros(0, dtype=torch.long, device=device)
        self.stats = Stats()
        self.vocab = self.kv.head.weight.shape[0]
        self._params = self._param_key()
        self._tables: dict[tuple, StopTable] = {}
        self._released: tuple[int, int] | None = None
        self._host: dict[int, list[list[torch.Tensor]]] = {}
        self._flip = 0
        self._step_fn: Callable[..., None] = self._decode_step
        self._prefill_fn: Callable[..., torch.Tensor] = self._prefill_forward
        if self.compiled:  # compiled, attention is flex attention over each slot's own blocks (kvmodel)
            self._step_fn = compile_fn(functools.partial(self._decode_step, flex=True), device)
            self._prefill_fn = compile_fn(functools.partial(self._prefill_forward, flex=True), device)

    # ------------------------------------------------------------ configuration
    def _param_key(self) -> tuple:
        return tuple(p.data_ptr() for p in self.kv.parameters())

    def sync_weights(self) -> None:
        """Refresh the packed weights from the model (every call: the model may have been updated in place)."""
        if self._param_key() != self._params:  # parameters were replaced (not updated in place): graphs are stale
            self._params = self._param_key()
            self.drop_graphs()
        if self.kv.weights.sync():
            self.drop_graphs()
        self.stats.weight_syncs += 1

    def session(
        self, slots: int, stops: StopTable, temperature: float, top_p: float, bias: dict[int, float] | None, pad_id: int
    ) -> Session:
        """The session for this configuration (made once; its graphs are kept for the next call alike)."""
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
        if self.compiled and slots > MAX_ROWS:
            raise ValueError(f"rollout engine: {slots} slots; the compiled engine serves {MAX_ROWS} at most")
        self.kv.allocate(max(slots, self.kv.slots), bucket(max(capacity, self.kv.capacity)))
        self.positions = torch.arange(self.kv.capacity + 1, device=self.device)
        self.drop_graphs()

    def drop_graphs(self) -> None:
        for s in self.sessions.values():
            s.graphs.clear()
        self.pool = None

    def free(self) -> None:
        """Release the cache, sessions and graphs (the next call allocates again)."""
        self.sessions.clear()
        self.release()
        self._released = None

    def release(self) -> None:
        """Free the memory the engine holds between calls — the KV cache, the captured graphs and their memory pool,
        the packed weights — and remember the cache's size for `restore`. Sessions (a few small tensors each) stay."""
        if self.kv.slots:
            self._released = (self.kv.slots, self.kv.capacity)
        self.drop_graphs()
        self.kv.k, self.kv.v, self.kv.slots, self.kv.capacity = [], [], 0, 0
        self.kv.weights.free()
        self.positions = torch.zeros(0, dtype=torch.long, device=self.device)
        self._host.clear()
        self.stats.releases += 1

    def restore(self) -> None:
        """Allocate the cache `release` freed again, at its size (zeroed). The packed weights follow at the next call
        (from the model as it is then), and so do the graphs."""
        if self._released is not None and not self.kv.slots:
            self.reserve(*self._released)
        self._released = None

    def held_bytes(self) -> int:
        """Bytes of device memory the engine's own tensors hold: KV cache and packed weight copies."""
        kv = sum(t.numel() * t.element_size() for t in self.kv.k + self.kv.v)
        return kv + self.kv.weights.nbytes()

    def attention_length(self, need: int) -> int:
        return min(span(need), self.kv.capacity)

    def _autocast(self, capturing: bool = False) -> Any:
        if self.dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=self.dtype, cache_enabled=not capturing)

    # ------------------------------------------------------------ device steps
    def _advance(
        self, s: Session, rows: torch.Tensor | None, logits: torch.Tensor, live: torch.Tensor, col: torch.Tensor
    ) -> None:
        """Sample for `rows` (None: every slot, in order — a decode step, done with whole-tensor ops), check stops and
        budgets, write column `col` ([1] index tensor) of the outputs, retire finished rows."""
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
        for out, v in ((s.out_tok, tok), (s.out_lp, lp), (s.out_live, live), (s.out_hit, hit)):
            if full:
                out.index_copy_(1, col, v[:, None])
            else:
                out[rows, col] = v

    def _decode_step(self, s: Session, L: int, col: torch.Tensor, flex: bool = False) -> None:
        """One decode step over every slot (the function compiled when `compiled`, with `flex` attention)."""
        live = s.active.clone()
        scratch = self.kv.k[0].shape[2] - 1  # idle slots write to the scratch position
        write = torch.where(live, s.lens, scratch)
        mask = None if flex else (self.positions[:L][None, :] <= s.lens[:, None])[:, None, None, :]
        logits = self.kv.forward(s.last_tok[:, None], s.lens[:, None], write[:, None], None, L, mask, None, s.lens)
        s.lens += live.long()
        if flex:  # the next step's first positions (kvmodel.block_mask reads them)
            self.kv.starts[: s.slots].copy_(s.lens)
        self._advance(s, None, logits, live, col)

    def _step(self, s: Session, L: int, col: int) -> None:
        if self.compiled:
            try:
                return self._step_fn(s, L, s.cols[col])
            except Exception as e:  # noqa: BLE001 — a compiler that cannot build the step: run it eagerly
                self._fall_back(e)
        timed = not self.graphs_on
        t0 = time.perf_counter() if timed else 0.0
        self._decode_step(s, L, s.cols[col])
        if timed:
            self.stats.forward_s += time.perf_counter() - t0

    def _fall_back(self, e: Exception) -> None:
        """Compilation failed (no C++ compiler, no Triton, an unsupported op): the eager functions from now on — the
        same computation, more kernel launches. Said once on stderr and in `stats.compile_error`."""
        if isinstance(e, (torch.OutOfMemoryError, KeyboardInterrupt)):
            raise e
        self.stats.compile_error = f"{type(e).__name__}: {e}"[:500]
        print(f"rollout engine: torch.compile failed, decoding eagerly ({self.stats.compile_error})", file=sys.stderr)
        self._step_fn, self._prefill_fn, self.compiled = self._decode_step, self._prefill_forward, False

    def _block(self, s: Session, L: int) -> None:
        if self.compiled:
            self.kv.starts[: s.slots].copy_(s.lens)
        for col in range(1, self.block + 1):
            self._step(s, L, col)

    def _prefill_forward(
        self,
        ids: torch.Tensor,
        pos: torch.Tensor,
        write: torch.Tensor,
        rows: torch.Tensor,
        L: int,
        last: torch.Tensor,
        start: torch.Tensor,
        flex: bool = False,
    ) -> torch.Tensor:
        """The prefill's forward (the function compiled when `compiled`, with `flex` attention): logits at each row's
        last chunk token."""
        mask = None if flex else (self.positions[:L][None, None, :] <= pos[:, :, None])[:, None]
        return self.kv.forward(ids, pos, write, rows, L, mask, last, start)

    @torch.no_grad()
    def prefill(
        self,
        s: Session,
        rows: list[int],
        chunks: list[list[int]],
        starts: list[int],
        budgets: list[int],
        set_ids: list[int],
    ) -> None:
        """Append each chunk to its slot's cache (slot `rows[i]` holds `starts[i]` tokens), then sample the first
        token of the slot's new phase (`budgets[i]` tokens at most, stop set `set_ids[i]`) into output column 0."""
        dev = self.device
        n, C = len(rows), max(len(c) for c in chunks)
        L = self.attention_length(max(st + len(c) for st, c in zip(starts, chunks)))
        lens = [len(c) for c in chunks]
        if self.compiled and (n == 1 or C == 1):
            # sizes ≥ 2 (compile_fn): a padding token writes to the scratch position, a padding row (the same slot,
            # no tokens) writes only there and its logits are dropped
            C = max(C, 2)
            if n == 1:
                rows, chunks, starts, lens = rows * 2, chunks * 2, starts * 2, lens + [0]
        ids = torch.zeros((len(rows), C), dtype=torch.long)
        for i, c in enumerate(chunks):
            ids[i, : len(c)] = torch.tensor(c, dtype=torch.long)
        lengths = torch.tensor(lens, dtype=torch.long, device=dev)
        all_rows = torch.tensor(rows, dtype=torch.long, device=dev)
        start_t = torch.tensor(starts, dtype=torch.long, device=dev)
        ids = ids.to(dev)
        offs = torch.arange(C, device=dev)
        pos = start_t[:, None] + offs[None, :]
        write = torch.where(offs[None, :] < lengths[:, None], pos, self.kv.capacity)
        last = (lengths - 1).clamp(min=0)
        t0 = time.perf_counter()
        with self._autocast():
            logits = None
            if self.compiled:
                try:
                    self.kv.starts[: len(rows)].copy_(start_t)
                    logits = self._prefill_fn(ids, pos, write, all_rows, L, last, start_t)
                except Exception as e:  # noqa: BLE001
                    self._fall_back(e)
            if logits is None:
                logits = self._prefill_forward(ids, pos, write, all_rows, L, last, start_t)
        self.stats.prefill_s += time.perf_counter() - t0
        logits, rows_t, lengths, start_t = logits[:n], all_rows[:n], lengths[:n], start_t[:n]
        s.lens[rows_t] = start_t + lengths
        s.budget[rows_t] = torch.tensor(budgets, dtype=torch.long, device=dev)
        s.set_idx[rows_t] = torch.tensor(set_ids, dtype=torch.long, device=dev)
        s.stop_state[rows_t] = 0  # a phase's stop strings count its own tokens only (a slot's last phase ended anyhow)
        self._advance(s, rows_t, logits, torch.ones(n, dtype=torch.bool, device=dev), s.cols[0])
        self.stats.prefill_tokens += sum(lens[:n])
        self.stats.prefill_calls += 1

    @torch.no_grad()
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
        """Warm up (compiling, on CUDA on a side stream) from a snapshot of the slots' state, restored after, then
        capture one block. The warm-up blocks write keys and values only where the captured block writes them again
        (live slots at their next positions, idle ones at the scratch position)."""
        snap = [t.clone() for t in s.state()]

        def restore() -> None:
            for t, v in zip(s.state(), snap):
                t.copy_(v)

        cuda = self.device.type == "cuda"
        side = torch.cuda.Stream() if cuda else None
        if side is not None:
            side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side) if side is not None else contextlib.nullcontext():
            for _ in range(2):
                restore()
                with self._autocast(capturing=True):
                    self._block(s, L)
        if side is not None:
            torch.cuda.current_stream().wait_stream(side)
        restore()
        if cuda:
            if self.pool is None:
                self.pool = torch.cuda.graph_pool_handle()
            g: Any = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, pool=self.pool), self._autocast(capturing=True):
                self._block(s, L)
        else:

            def run_block() -> None:
                with self._autocast(capturing=True):
                    self._block(s, L)

            g = _Replay(run_block)
        restore()
        self.stats.graphs_captured += 1
        return g

    def clear_column0(self, s: Session) -> None:
        s.out_live[:, 0] = False

    def stage(self, s: Session, jobs: Jobs | None = None) -> Staged:
        """Start copying the last block's outputs to the host (one packed int64 tensor and the log-probs); on CUDA
        asynchronously into one of two pinned buffer sets, so a block can be read while the next one runs. `jobs`
        rides along (what the host knew was decoding when the block was launched)."""
        packed = s.out_tok | (s.out_live.long() << 40) | (s.out_hit.long() << 41)
        if self.device.type != "cuda":
            return Staged(_unpack(packed, s.out_lp.clone()), None, jobs)
        sets = self._host.get(s.slots)
        if sets is None:
            sets = self._host[s.slots] = [
                [
                    torch.empty(packed.shape, dtype=torch.long, pin_memory=True),
                    torch.empty(s.out_lp.shape, dtype=torch.float32, pin_memory=True),
                ]
                for _ in range(2)
            ]
        self._flip ^= 1
        hp, hl = sets[self._flip]
        hp.copy_(packed, non_blocking=True)
        hl.copy_(s.out_lp, non_blocking=True)
        ev = torch.cuda.Event()
        ev.record()
        return _StagedPacked(hp, hl, ev, jobs)

    def read(self, s: Session) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(tokens, log-probs, live, hit), each [slots, block + 1]: the host's one read per block, synchronously."""
        return self.stage(s).read()


def _unpack(packed: torch.Tensor, lp: torch.Tensor) -> list[torch.Tensor]:
    p = packed.cpu()
    return [p & ((1 << 40) - 1), lp.cpu(), (p >> 40) & 1 == 1, (p >> 41) & 1 == 1]


class _StagedPacked(Staged):
    """A CUDA stage: the packed host buffers are unpacked once the copy is done."""

    def __init__(self, packed: torch.Tensor, lp: torch.Tensor, event: torch.cuda.Event, jobs: Jobs | None):
        super().__init__([], event, jobs)
        self.packed, self.lp, self.done = packed, lp, event

    def read(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        self.done.synchronize()
        p = self.packed.numpy()
        # copies: the pinned buffers are written again two blocks later
        return p & ((1 << 40) - 1), self.lp.numpy().copy(), (p >> 40) & 1 == 1, (p >> 41) & 1 == 1
