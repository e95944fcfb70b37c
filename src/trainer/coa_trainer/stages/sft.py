"""The four LM stages as data stream + loss + metrics + end-of-stage check. The training loop (stages/train.py) and the
set-up (stages/setup.py) are shared. Data: the embedded benchmark's oracle trajectories, or — with a run config
`data` section — the user's trajectories and pairs through the core (data/userdata.py), masks from its segments."""

from __future__ import annotations

import time
from typing import Any

import torch
from pydantic import BaseModel, ConfigDict

from ..data.benchmark import Benchmark
from ..data.samples import (
    Encoded,
    masked_kinds,
    Pair,
    oracle_examples,
    pair_stream,
    pretrain_stream,
    sft1_pairs,
    sft1_stream,
    sft_mix_stream,
    truncate,
    user_pairs,
    user_sft_examples,
)
from ..data.dialects import Tags
from ..data.lengths import resolve_max_len, sft_report
from ..data.sft_filter import filter_sft
from ..model.load import model_context
from ..algos.losses import lm_count, lm_loss_parts, sft1_lengths, sft1_loss_parts
from ..model.load import Runtime
from ..base.config import sft_mix_stage, stage_config, supervised_stage
from ..data.records import JsonRecord, RecordTokens, trajectory_record
from ..algos.microbatch import accumulate, clip_grad_norm
from ..model.activations import drop_gradients
from ..base.errors import StageError
from ..contracts.schemas import stage_info
from .setup import StageRun
from ..contracts.run_config import RunConfig
from ..data.tokenizer import TextTokenizer
from ..contracts.events import SampleEvent
from ..contracts.record import TrajectoryRecord
from ..data.userdata import UserData


class LossSums(BaseModel):
    """What the loop reads of a supervised step's all-reduced sums: the loss and the tokens the batch held
    (algos/losses; a batch of no micro-batches has no extras, so no tokens)."""

    model_config = ConfigDict(frozen=True, extra="ignore")
    loss_sum: float
    tokens: float = 0.0


class PairSums(BaseModel):
    """SFT-1's sums over a step's pairs (algos/losses.sft1_loss_parts): action pairs, pairs ranked right (of them,
    action pairs), and the summed log-probs of the chosen and rejected sides."""

    model_config = ConfigDict(frozen=True, extra="ignore")
    act_pairs: float
    pair_correct: float
    act_correct: float
    logp_chosen: float
    logp_rejected: float


def _embedded(bench: Benchmark | None) -> Benchmark:
    """The embedded benchmark: a stage without the user's data always has it."""
    if bench is None:
        raise RuntimeError("this stage reads the embedded benchmark, which a run on the user's data does not load")
    return bench


class LmStage:
    """pretrain, SFT-2 (observations masked) and SFT-3 (observations trained): masked token NLL."""

    def __init__(
        self,
        name: str,
        config: RunConfig,
        bench: Benchmark | None,
        tok: TextTokenizer,
        t: Tags,
        rt: Runtime,
        data: UserData | None = None,
        context: int | None = None,
    ):
        self.name, self.config, self.bench, self.tok, self.t, self.rt, self.data = name, config, bench, tok, t, rt, data
        scfg = stage_config(config, name)
        self.notes: list[str] = []  # what the length cap does to the data, for the run's log
        self.filtered: str | None = None  # what data.sft_filter kept, said when the stage starts
        self.info = stage_info(name)
        if self.info.kind == "pretrain":
            self.max_len = max_len = config.stages.pretrain.max_len
            self.stream = pretrain_stream(_embedded(bench), tok, config.seed, max_len)
            return
        if data is not None:
            records = data.sft_records()
            if records:
                records, report = filter_sft(records, data.data.sft_filter, config.dialect, name)
                self.notes += [report.line(name)] if report.kept < report.given or report.ungraded else []
                self.filtered = report.line(name)
            examples = user_sft_examples(records, tok, config, name)
            if not examples:
                raise StageError(
                    f"{name} has no trajectories to train on: data.sft names none (give *.coa.jsonl "
                    "trajectories or OpenAI chats there, or run collect first)",
                    "bad_data",
                )
        else:
            examples = oracle_examples(_embedded(bench), tok, config, t, "train", masked_kinds(name))
        need = max((len(e.input_ids) for e in examples), default=None)
        self.max_len = resolve_max_len(scfg.max_len, need, context)
        report = sft_report(f"{name} examples", examples, self.max_len, scfg.max_len is None)
        report.require_tokens(name)
        self.notes += [line] if (line := report.line()) else []
        cut = [truncate(e, self.max_len) for e in examples]
        self.stream = sft_mix_stream(cut, config, name, config.seed)

    def describe(self) -> str:
        n = self.stream.epoch_size()
        if self.info.kind == "pretrain":
            return f"{len(_embedded(self.bench).pretrain_lines())} pretraining lines packed into {n} samples per epoch"
        masked = "observations trained" if self.info.trains_observations else "observations masked"
        kept = f"{self.filtered}; " if self.filtered else ""
        return (
            f"{kept}{n} trajectories per epoch (CoA:CoT {sft_mix_stage(stage_config(self.config, self.name), self.name).coa_cot_ratio}:1), {masked}, "
            f"max_len {self.max_len}"
        )

    def loss_parts(self, model: torch.nn.Module, batch: list[Encoded]) -> tuple[torch.Tensor, float, dict]:
        return lm_loss_parts(
            model,
            batch,
            self.tok.pad_token_id,
            self.rt.device,
            self.rt.autocast_dtype,
            stage_config(self.config, self.name).packing,
        )

    def count(self, batch: list[Encoded]) -> float:
        return lm_count(batch)

    def lengths(self, batch: list[Encoded]) -> list[list[int]]:
        return [[len(e.input_ids)] for e in batch]

    def metrics(self, stats: dict, count: float) -> dict:
        return {"trained_tokens": count}

    def sample_record(self, e: Encoded, run: str, step: int) -> JsonRecord:
        response = e.response or self.tok.decode(e.ids, skip_special_tokens=False)
        m = e.meta
        return trajectory_record(
            m.id if m else f"{self.name}-{step}",
            m.question if m else "",
            response,
            golden_answers=list(m.golden_answers) if m else [],
            dialect=(m.dialect if m else None) or "coa",
            tokens=RecordTokens(e.ids, e.loss_mask, offsets=e.offsets if e.response else None),
            meta={"run": run, "stage": self.name, "step": step, "sample": 0},
        )

    @torch.no_grad()
    def evaluate(self, model: torch.nn.Module) -> dict[str, dict]:
        if self.info.kind == "pretrain":
            from ..evaluation.agent import plain_eval

            return {"dev": plain_eval(model, self.tok, _embedded(self.bench), self.config, "dev", self.rt)[0]}
        if self.data is not None:  # users' SFT data has no held-out trajectories: the agent eval is `eval`
            return {}
        # SFT-2/3: held-out masked NLL on the dev oracle trajectories
        masked = masked_kinds(self.name)
        dev = oracle_examples(_embedded(self.bench), self.tok, self.config, self.t, "dev", masked, self.max_len)
        total, count = 0.0, 0.0
        for i in range(0, len(dev), 32):
            s, c, _ = lm_loss_parts(
                model, dev[i : i + 32], self.tok.pad_token_id, self.rt.device, self.rt.autocast_dtype
            )
            total, count = total + float(s), count + c
        return {"dev": {"loss": total / max(count, 1.0), "trajectories": float(len(dev))}}


class Sft1Stage:
    """AutoCoA SFT-1 (when to act): contrastive pairs at each decision point."""

    name = "sft1"

    def __init__(
        self,
        config: RunConfig,
        bench: Benchmark | None,
        tok: TextTokenizer,
        t: Tags,
        rt: Runtime,
        data: UserData | None = None,
    ):
        self.config, self.bench, self.tok, self.t, self.rt, self.data = config, bench, tok, t, rt, data
        self.scfg = config.stages.sft1
        if data is not None:
            self.pairs = user_pairs(data.pairs(), tok, config)
            self.stream = pair_stream(self.pairs, config.seed)
        else:
            self.stream = sft1_stream(_embedded(bench), tok, config, t, config.seed)

    def describe(self) -> str:
        if self.data is not None:
            kinds: dict[str, int] = {}
            for kind in (p.meta.kind for p in self.pairs if p.meta):
                kinds[kind] = kinds.get(kind, 0) + 1
            by_kind = ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
            return f"{len(self.pairs)} pairs from your data ({by_kind}; beta {self.scfg.beta})"
        return (
            f"{self.stream.epoch_size()} contrastive pairs (beta {self.scfg.beta}, margin {self.scfg.margin},"
            f" alpha {self.scfg.alpha})"
        )

    def loss_parts(self, model: torch.nn.Module, batch: list[Pair]) -> tuple[torch.Tensor, float, dict]:
        return sft1_loss_parts(
            model,
            batch,
            self.tok.pad_token_id,
            self.rt.device,
            self.rt.autocast_dtype,
            self.scfg.beta,
            self.scfg.margin,
            self.scfg.alpha,
            self.scfg.packing,
        )

    def count(self, batch: list[Pair]) -> float:
        return float(len(batch))

    def lengths(self, batch: list[Pair]) -> list[list[int]]:
        return sft1_lengths(batch)

    def metrics(self, stats: dict, count: float) -> dict:
        s = PairSums.model_validate(stats)
        acts = s.act_pairs
        answers = count - acts
        return {
            "pair_acc": s.pair_correct / max(count, 1.0),
            "act_acc": s.act_correct / acts if acts else None,
            "answer_acc": (s.pair_correct - s.act_correct) / answers if answers else None,
            "logp_chosen": s.logp_chosen / max(count, 1.0),
            "logp_rejected": s.logp_rejected / max(count, 1.0),
        }

    def sample_record(self, p: Pair, run: str, step: int) -> JsonRecord:
        ids = p.prefix_ids + p.chosen_ids
        mask = p.chosen_mask if p.chosen_mask is not None else [1] * len(p.chosen_ids)
        return trajectory_record(
            f"sft1-{step}",
            self.tok.decode(p.prompt_ids, skip_special_tokens=False),
            self.tok.decode(ids, skip_special_tokens=False),
            dialect=self.config.dialect,
            tokens=RecordTokens(ids, [0] * len(p.prefix_ids) + list(mask)),
            meta={"run": run, "stage": "sft1", "step": step, "sample": 0, "group": "act" if p.act else "answer"},
        )

    @torch.no_grad()
    def evaluate(self, model: torch.nn.Module) -> dict[str, dict]:
        if self.data is not None:  # users' pairs have no dev split
            return {}
        pairs = sft1_pairs(_embedded(self.bench), self.tok, self.config, self.t, "dev", self.config.seed)
        stats: dict[str, float] = {}
        for i in range(0, len(pairs), 32):
            _, _, ex = self.loss_parts(model, pairs[i : i + 32])
            for k, v in ex.items():
                stats[k] = stats.get(k, 0.0) + v
        return {"dev": {k: v for k, v in self.metrics(stats, float(len(pairs))).items()}}


class SupervisedSteps:
    """pretrain and SFT-1/2/3 for the one loop (stages/loop.py): a step takes the next batch of the stage's stream,
    runs it in token-budget micro-batches (each loss divided by the global count, algos/microbatch.py) and makes one
    AdamW update. `cursor` is the samples consumed, so a resume takes up the stream where the checkpoint left it."""

    def __init__(self, run: StageRun):
        self.run, self.impl = run, make_stage(run)
        self.cursor = 0
        self.scfg = supervised_stage(run.schedule.scfg, run.stage)
        self.local = self.scfg.batch_size // run.di.world_size
        self.batch: list[Any] = []

    def describe(self) -> str:
        return self.impl.describe()

    def notes(self) -> list[str]:
        return list(getattr(self.impl, "notes", []))

    def resume(self, extra: dict) -> None:
        pass  # the stream position (cursor) is all a supervised stage keeps

    def fresh(self) -> None:
        pass

    def probe_update(self) -> None:
        """The next step's forward/backward — its batch, its micro-batches — without the optimiser step, the gradients
        dropped (model/activations.py measures it)."""
        run, scfg, di, impl = self.run, self.scfg, self.run.di, self.impl
        batch = impl.stream.take(self.cursor + di.rank * self.local, self.local)
        accumulate(
            run.model.trained,
            batch,
            impl.lengths(batch),
            impl.count(batch),
            impl.loss_parts,
            scfg.micro_batch_tokens,
            scfg.packing,
            di,
        )
        drop_gradients(run.model.trained, run.schedule.opt)

    def step(self, step: int) -> dict[str, float | None]:
        run, scfg, di, impl = self.run, self.scfg, self.run.di, self.impl
        run.phase("update", step + 1)
        t0 = time.time()
        batch = impl.stream.take(self.cursor + di.rank * self.local, self.local)
        run.schedule.opt.zero_grad(set_to_none=True)
        acc = accumulate(
            run.model.trained,
            batch,
            impl.lengths(batch),
            impl.count(batch),
            impl.loss_parts,
            scfg.micro_batch_tokens,
            scfg.packing,
            di,
        )
        grad_norm = clip_grad_norm(run.schedule.params, scfg.grad_clip)
        run.schedule.opt.step()
        run.schedule.sched.step()
        self.cursor += scfg.batch_size
        self.batch = batch
        stats = di.all_reduce_dict({"loss_sum": acc.loss_sum, **acc.extras})
        sums = LossSums.model_validate(stats)
        dt = time.time() - t0
        return {
            "loss": sums.loss_sum / max(acc.global_count, 1.0),
            "lr": float(run.schedule.sched.get_last_lr()[0]),
            "grad_norm": float(grad_norm),
            "tokens_per_s": sums.tokens / max(dt, 1e-9),
            **impl.metrics(stats, acc.global_count),
        }

    def alerts(self, step: int, values: dict) -> list[Any]:
        return []

    def sample(self, step: int) -> None:
        w = self.run.io.writer
        w.emit(
            SampleEvent(
                stage=self.run.label,
                step=step,
                record=TrajectoryRecord.model_validate(self.impl.sample_record(self.batch[0], w.run, step)),
            )
        )

    def checkpoint_extra(self) -> None:
        return None

    def evaluate(self) -> dict[str, dict]:
        return self.impl.evaluate(self.run.model.policy)

    def close(self) -> None:
        pass


def make_stage(run: StageRun) -> Any:
    """The stage implementation for a stage_setup.StageRun."""
    if stage_info(run.stage).loss == "pairwise":
        return Sft1Stage(run.config, run.data.bench, run.model.tok, run.model.tags, run.rt, run.data.user)
    return LmStage(
        run.stage,
        run.config,
        run.data.bench,
        run.model.tok,
        run.model.tags,
        run.rt,
        run.data.user,
        model_context(run.model.policy),
    )
