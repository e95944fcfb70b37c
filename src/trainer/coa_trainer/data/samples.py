"""Tokenisation with loss masks from segment boundaries, and the deterministic, resumable sample streams of each
stage. Masks are decided per segment while encoding (an observation segment is masked as a whole, tags included,
because the environment writes it) — never by searching decoded text."""

from __future__ import annotations

import bisect
import random
from dataclasses import dataclass
from typing import Any, Callable

from ..base.config import sft_mix_stage, stage_config
from ..contracts.schemas import stage_info
from ..data.benchmark import Benchmark, Segment, join_segments
from ..data.dialects import Tags
from ..contracts.run_config import RunConfig
from ..data.tokenizer import TextTokenizer
from .prepared import PairRecord, SftRecord, SftSegment


def masked_kinds(stage: str) -> frozenset[str]:
    """Segment kinds out of a stage's loss: observations, unless the stage trains them (SFT-3, the world model)."""
    return frozenset() if stage_info(stage).trains_observations else frozenset({"observation"})


@dataclass(frozen=True)
class ExampleMeta:
    """Where an SFT example comes from (its question, the answers it is graded by, its dialect) and whether it is a
    chain of action (≥ 1 tool call), for the CoA : CoT mix and the stage's sample records."""

    id: str
    question: str
    golden_answers: list[str]
    coa: bool
    dialect: str | None = None  # None: the benchmark's oracle (coa tags)


@dataclass
class Encoded:
    """A prompt plus a response; per response token: id, segment kind, loss mask, char offset in the response.
    `meta`: None for pretraining text (no question)."""

    prompt_ids: list[int]
    ids: list[int]
    kinds: list[str]
    loss_mask: list[int]
    offsets: list[int]
    response: str
    meta: ExampleMeta | None = None

    @property
    def input_ids(self) -> list[int]:
        return self.prompt_ids + self.ids

    @property
    def target_mask(self) -> list[int]:
        """Loss mask over input_ids (prompt never trains)."""
        return [0] * len(self.prompt_ids) + self.loss_mask


def encode_text(tok: TextTokenizer, text: str) -> tuple[list[int], list[int]]:
    enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
    return list(enc.input_ids), [a for a, _ in enc.offset_mapping]


def encode_segments(
    tok: TextTokenizer,
    prompt: str,
    segments: list[Segment],
    masked_kinds: frozenset[str] = frozenset(),
    eos: bool = False,
) -> Encoded:
    prompt_ids, _ = encode_text(tok, prompt)
    ids: list[int] = []
    kinds: list[str] = []
    mask: list[int] = []
    offsets: list[int] = []
    pos = 0
    for seg in segments:
        seg_ids, seg_off = encode_text(tok, seg.text)
        ids += seg_ids
        kinds += [seg.kind] * len(seg_ids)
        mask += [0 if seg.kind in masked_kinds else 1] * len(seg_ids)
        offsets += [pos + o for o in seg_off]
        pos += len(seg.text) + 1  # segments are joined by one space (benchmark.join_segments)
    if eos and tok.eos_token_id is not None:
        ids.append(tok.eos_token_id)
        kinds.append("eos")
        mask.append(1)
        offsets.append(max(0, pos - 1))
    return Encoded(prompt_ids, ids, kinds, mask, offsets, join_segments(segments))


# ---------------------------------------------------------------- users' trajectories (core segments)

MODEL_KINDS = frozenset({"think", "action", "answer", "text"})


def encode_trajectory(
    tok: TextTokenizer,
    prompt_ids: list[int],
    response: str,
    segments: list[SftSegment],
    masked_kinds: frozenset[str] = frozenset(),
    eos: bool = True,
) -> Encoded:
    """Token ids, kinds and loss mask of a user's trajectory from the core's segments (code-point spans of
    `response`, `coa data prepare sft`).

    Boundary rule: the response is cut into *runs* — maximal stretches of segments that are either all
    environment-written (`observation`) or all model-written (think, action, answer and the `text` between blocks:
    whitespace the model writes) — and each run is tokenised on its own. So no token straddles the edge of an
    observation: a byte-level merge such as `">\n\n<"` across `</search>\n\n<observation>` is split there, an
    observation token is never trained in SFT-2 and a model-written token is never dropped. It is also exactly how
    the rollout loop builds the sequence (the model's ids, then the observation tokenised once and appended), so
    SFT trains the token sequences the agent later produces. Inside a run a token may straddle two model-written
    segments (`</think>\n<search>`); its kind is the segment where it starts (the fast tokenizer's offset
    mapping), its mask is 1 either way. SFT-2 and SFT-3 tokenise identically; only the masks differ."""
    runs: list[tuple[bool, int, int]] = []  # (observation?, start, end)
    for seg in segments:
        obs = seg.kind == "observation"
        if runs and runs[-1][0] == obs and runs[-1][2] == seg.start:
            runs[-1] = (obs, runs[-1][1], seg.end)
        else:
            runs.append((obs, seg.start, seg.end))
    starts = [seg.start for seg in segments]
    ids: list[int] = []
    kinds: list[str] = []
    mask: list[int] = []
    offsets: list[int] = []
    for _obs, a, b in runs:
        enc = tok(response[a:b], add_special_tokens=False, return_offsets_mapping=True)
        for tid, (o, _) in zip(enc.input_ids, enc.offset_mapping):
            kind = segments[max(0, bisect.bisect_right(starts, a + o) - 1)].kind
            ids.append(tid)
            kinds.append(kind)
            mask.append(0 if kind in masked_kinds else 1)
            offsets.append(a + o)
    if eos and tok.eos_token_id is not None:
        ids.append(tok.eos_token_id)
        kinds.append("eos")
        mask.append(1)
        offsets.append(len(response))
    return Encoded(list(prompt_ids), ids, kinds, mask, offsets, response)


def user_sft_examples(records: list[SftRecord], tok: TextTokenizer, config: RunConfig, stage: str) -> list[Encoded]:
    """SFT-2 / SFT-3 examples from the user's trajectories (data.sft through the core), not yet cut to max_len."""
    from ..data.prompts import prompt_ids

    masked = masked_kinds(stage)
    examples = []
    for r in records:
        pids = encode_text(tok, r.prompt)[0] if r.prompt else prompt_ids(tok, config, r.question, r.dialect)
        e = encode_trajectory(tok, pids, r.response, r.segments, masked)
        e.meta = ExampleMeta(r.id, r.question, r.golden_answers, r.tool_calls > 0, r.dialect)
        examples.append(e)
    return examples


def sft_mix_stream(examples: list[Encoded], config: RunConfig, stage: str, seed: int) -> Stream:
    """SFT-2 / SFT-3 samples: every chain-of-action example (≥ 1 tool call) each epoch and a different subset of the
    chain-of-thought ones, CoA : CoT = coa_cot_ratio : 1 (AutoCoA used 5:1); all CoT when there is no CoA."""
    scfg = sft_mix_stage(stage_config(config, stage), stage)
    coa = [e for e in examples if e.meta and e.meta.coa]
    cot = [e for e in examples if not (e.meta and e.meta.coa)]
    n_cot = min(len(cot), max(1, round(len(coa) / scfg.coa_cot_ratio))) if cot and coa else len(cot)

    def epoch(e: int) -> list[Encoded]:
        rng = random.Random(f"{seed}/{stage}/{e}")
        items = coa + rng.sample(cot, n_cot)  # a different CoT subset each epoch
        rng.shuffle(items)
        return items

    return Stream(epoch)


def user_pairs(pairs: list[PairRecord], tok: TextTokenizer, config: RunConfig) -> list[Pair]:
    """SFT-1 pairs from the core's pair lines: whole trajectories, observations out of the mean log-prob."""
    from ..data.prompts import prompt_ids

    out = []
    for p in pairs:
        pids = (
            encode_text(tok, p.prompt)[0]
            if p.prompt
            else prompt_ids(tok, config, p.question, p.chosen.dialect or config.dialect)
        )
        c = encode_trajectory(tok, [], p.chosen.response, p.chosen.segments, masked_kinds("sft1"))
        r = encode_trajectory(tok, [], p.rejected.response, p.rejected.segments, masked_kinds("sft1"))
        out.append(Pair(pids, [], c.ids, r.ids, p.act, c.loss_mask, r.loss_mask, PairMeta(p.id, p.kind)))
    return out


def pair_stream(pairs: list[Pair], seed: int) -> Stream:
    def epoch(e: int) -> list[Pair]:
        items = list(pairs)
        random.Random(f"{seed}/sft1/{e}").shuffle(items)
        return items

    return Stream(epoch)


def prompt_text(config: RunConfig, question: str) -> str:
    return config.prompt_template.replace("{question}", question)


def truncate(e: Encoded, max_len: int) -> Encoded:
    keep = max(0, max_len - len(e.prompt_ids))
    return Encoded(
        e.prompt_ids[:max_len], e.ids[:keep], e.kinds[:keep], e.loss_mask[:keep], e.offsets[:keep], e.response, e.meta
    )


# ---------------------------------------------------------------- sample streams


class Stream:
    """An endless, deterministic sequence of samples: epoch e is `make_epoch(e)` (shuffled with seed+e).
    The data cursor is the number of samples consumed, so resuming needs only that integer."""

    def __init__(self, make_epoch: Callable[[int], list[Any]]):
        self.make_epoch = make_epoch
        self._cache: dict[int, list[Any]] = {}

    def _epoch(self, e: int) -> list[Any]:
        if e not in self._cache:
            self._cache = {e: self.make_epoch(e)}  # only the current epoch is kept
        return self._cache[e]

    def take(self, cursor: int, n: int) -> list[Any]:
        out = []
        size = len(self._epoch(0))
        if size == 0:
            raise ValueError("empty training set")
        for i in range(cursor, cursor + n):
            out.append(self._epoch(i // size)[i % size])
        return out

    def epoch_size(self) -> int:
        return len(self._epoch(0)) if 0 in self._cache or not self._cache else len(self.make_epoch(0))


def pretrain_stream(bench: Benchmark, tok: TextTokenizer, seed: int, max_len: int, lines_per_sample: int = 8) -> Stream:
    """Pretraining text packed `lines_per_sample` lines at a time, lines separated by EOS, all tokens trained."""
    lines = bench.pretrain_lines()
    encoded = [encode_text(tok, line)[0] + [tok.eos_token_id] for line in lines]

    def epoch(e: int) -> list[Encoded]:
        order = list(range(len(encoded)))
        random.Random(f"{seed}/pretrain/{e}").shuffle(order)
        out = []
        for i in range(0, len(order), lines_per_sample):
            ids = [t for j in order[i : i + lines_per_sample] for t in encoded[j]][:max_len]
            out.append(Encoded([], ids, ["text"] * len(ids), [1] * len(ids), [0] * len(ids), ""))
        return out

    return Stream(epoch)


def oracle_examples(
    bench: Benchmark,
    tok: TextTokenizer,
    config: RunConfig,
    t: Tags,
    split: str,
    masked: frozenset[str],
    max_len: int | None = None,
) -> list[Encoded]:
    """The benchmark's oracle trajectories of a split, cut to `max_len` when given."""
    out = []
    for q in bench.split(split):
        segments = bench.oracle(q, t)
        e = encode_segments(tok, prompt_text(config, q.question), segments, masked, eos=False)
        # chain of action = the teacher searched (with redundant searches that includes some known questions)
        e.meta = ExampleMeta(q.id, q.question, [q.answer], any(s.kind == "action" for s in segments))
        out.append(truncate(e, max_len) if max_len is not None else e)
    return out


def sft_stream(
    bench: Benchmark, tok: TextTokenizer, config: RunConfig, t: Tags, stage: str, seed: int, max_len: int | None = None
) -> Stream:
    """SFT-2 / SFT-3 on the benchmark: oracle trajectories of the train split in the CoA : CoT mix. SFT-2 masks
    observation segments; SFT-3 trains on them (world model)."""
    masked = masked_kinds(stage)
    return sft_mix_stream(oracle_examples(bench, tok, config, t, "train", masked, max_len), config, stage, seed)


@dataclass(frozen=True)
class PairMeta:
    """A user's pair: its id and kind (tool-vs-notool, …), which the stage counts."""

    id: str
    kind: str


@dataclass
class Pair:
    prompt_ids: list[int]
    prefix_ids: list[int]
    chosen_ids: list[int]
    rejected_ids: list[int]
    act: bool
    chosen_mask: list[int] | None = None  # None: every continuation token counts
    rejected_mask: list[int] | None = None
    meta: PairMeta | None = None  # None: the benchmark's own pairs


def sft1_pairs(bench: Benchmark, tok: TextTokenizer, config: RunConfig, t: Tags, split: str, seed: int) -> list[Pair]:
    rng = random.Random(f"{seed}/sft1/pairs/{split}")
    out = []
    for q in bench.split(split):
        prompt_ids, _ = encode_text(tok, prompt_text(config, q.question))
        for p in bench.pairs(q, t, rng):
            out.append(
                Pair(
                    prompt_ids,
                    encode_text(tok, p.prefix)[0],
                    encode_text(tok, p.chosen)[0],
                    encode_text(tok, p.rejected)[0],
                    p.act,
                )
            )
    return out


def sft1_stream(bench: Benchmark, tok: TextTokenizer, config: RunConfig, t: Tags, seed: int) -> Stream:
    pairs = sft1_pairs(bench, tok, config, t, "train", seed)

    def epoch(e: int) -> list[Pair]:
        items = list(pairs)
        random.Random(f"{seed}/sft1/{e}").shuffle(items)
        return items

    return Stream(epoch)
