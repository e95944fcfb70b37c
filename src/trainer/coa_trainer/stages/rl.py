"""The RL stages rl1 / rl2 (GRPO) as a training loop: sample G rollouts per question (simulated observations for
the first `simulated_fraction` of the steps, then the env server's search), grade them with the env server's
/v1/grade, GRPO updates (`ppo_epochs` × `mini_batches` per step), metrics / alerts / samples as events,
checkpoints with the OTC-GRPO state.

Under torchrun every rank takes whole groups (prompts_per_step / world_size questions × G samples); sums are
all-reduced so the logged numbers and the loss normalisation are global. Rank 0 starts the env server (unless
--env-url is given) and passes its address to the others."""

from __future__ import annotations

import random
import time
import zlib
from pathlib import Path
from dataclasses import dataclass
from typing import Any

import torch
from pydantic import BaseModel, ConfigDict

from ..rollout.metrics import logprob_diff_counts, step_sums, step_values
from ..env.alerts import AlertMonitor
from ..data.samples import Stream
from ..algos.grpo import Sample, group_advantages, grpo_count, grpo_lengths, grpo_loss_parts
from ..data.lengths import resolve_max_len, rollout_report
from ..model.load import model_context
from ..data.prompts import prompt_ids
from ..rollout.generate import release_engine_memory, restore_engine_memory
from ..rollout.loop import RlTrajectory, retok_drift, retok_mismatch, rollout, token_offsets
from ..base.errors import StageError
from ..base.lifecycle import StageCancelled
from ..base import line_index
from ..base.runlayout import stage_dir
from ..contracts.schemas import histogram_edges
from ..contracts.run_config import RlStage, RunConfig
from ..data.benchmark import Question
from ..data.userdata import UserQuestion, golden, question_meta
from ..data.records import JsonRecord, RecordTokens, reward_json, trajectory_record
from ..contracts.env_protocol import FlaggedItem, ScanResponse
from ..contracts.record import RewardBreakdown, TrajectoryRecord
from ..contracts.boundary_metric import BoundaryMetric
from ..evaluation.boundary import Meter, fixed_sample
from ..evaluation.boundary_report import live_metrics, summarise
from ..base.options import EnvTarget
from .setup import StageRun
from ..data.tokenizer import TextTokenizer
from ..base.distributed import DistInfo
from ..contracts.events import HistogramEvent, LogEvent, SampleEvent
from ..contracts.agent_metric import AgentMetric


@dataclass(frozen=True)
class SampleMeta:
    """Where a trajectory of a step came from: its record's meta, in this key order, after which the question's own
    (data/userdata.question_meta) and, for a flagged record, the scanners' findings."""

    run: str
    stage: str
    step: int
    sample: int
    group: int
    question: dict[str, Any]

    def json(self, scan: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        out = {
            "run": self.run,
            "stage": self.stage,
            "step": self.step,
            "sample": self.sample,
            "group": self.group,
            **self.question,
        }
        return out if scan is None else {**out, "scan": scan}


class UpdateSums(BaseModel):
    """What the stage reads back of a step's all-reduced sums (rollout/metrics.StepSums reads the agent metrics'):
    the update's (policy_updates), the rollout's timings and the stage's own seconds. The dict's other keys — the
    scanners' counts, the log-prob histogram's bins — are read by their generated names."""

    model_config = ConfigDict(frozen=True, extra="ignore")
    count: float
    loss_sum: float
    kl_sum: float
    entropy_sum: float
    clip_sum: float
    ratio_sum: float
    gen_tokens: float
    train_tokens: float
    generate: float  # the rollout's generation seconds (rollout.loop's `timings`)
    tools: float  # the rollout's search seconds
    grade_s: float
    train_s: float


class RlCheckpointExtra(BaseModel):
    """What an RL checkpoint carries besides the weights: the env server's OTC running minima, the alert baselines,
    and where the rollouts / flagged files stood (a key absent from an older checkpoint reads as None / empty)."""

    otc_state: dict[str, Any] | None = None
    alerts: dict[str, Any] = {}
    rollouts_offset: int | None = None
    flagged_offset: int | None = None


def _connect_env(target: EnvTarget, config: RunConfig, run_dir: Path, di: DistInfo) -> tuple[Any, bool]:
    """(client, whether we started it). Rank 0 opens the env session (base/options.EnvTarget: the server given, or
    one of its own); the other ranks connect to the server rank 0 has."""
    from ..env.session import connect_env, open_env, started_here

    if target.url:
        return connect_env(target), False
    env, addr = None, list[str | None]([None, None])  # rank 0 fills in the url and token of its server
    if di.rank == 0:
        env = open_env(target, config, run_dir)
        addr[:] = [env.url, env.token]
    if di.active:
        import torch.distributed as dist

        dist.broadcast_object_list(addr, src=0)
    return (env, started_here(env)) if env is not None else (connect_env(EnvTarget(addr[0], addr[1] or "")), False)


def _grade_run_id(run: str, label: str) -> str:
    """The env server's OTC state key: <run>.<label> (both valid names), shortened with a hash past the length limit."""
    from ..base.names import is_valid_name

    key = f"{run}.{label}"
    return key if is_valid_name(key) else f"run-{zlib.crc32(key.encode()):08x}"


FLAGGED_PER_RULE = 2  # examples kept per scanner rule and step (the counts are the metrics)


def flagged_examples(flagged: list[FlaggedItem], per_rule: int = FLAGGED_PER_RULE) -> list[FlaggedItem]:
    """The scanners' flagged records kept as examples, in order: a record is kept while one of its rules has fewer
    than `per_rule` examples so far (every rule that fires gets its first ones, a record firing several counts for
    each)."""
    seen: dict[str, int] = {}
    out = []
    for f in flagged:
        rules = {x.rule for x in f.findings}
        if all(seen.get(r, 0) >= per_rule for r in rules):
            continue
        for r in rules:
            seen[r] = seen.get(r, 0) + 1
        out.append(f)
    return out


def _record(
    tok: TextTokenizer,
    q: Question | UserQuestion,
    tr: RlTrajectory,
    advantage: float,
    breakdown: RewardBreakdown | None,
    meta: SampleMeta,
    dialect: str,
    scan: list[dict[str, Any]] | None = None,
) -> JsonRecord:
    response = tok.decode(tr.ids, skip_special_tokens=False)
    tokens = RecordTokens(
        tr.ids,
        tr.loss_mask,
        tr.logprobs,
        [advantage if m else 0.0 for m in tr.loss_mask],
        token_offsets(tok, tr.ids, response),
    )
    return trajectory_record(
        f"{q.id}-{meta.step}-{meta.sample}",
        q.question,
        response,
        golden_answers=golden(q),
        dialect=dialect,
        tokens=tokens,
        meta=meta.json(scan),
        reward=breakdown,
    )


def mini_batch_slices(n_samples: int, group_size: int, mini_batches: int) -> list[slice]:
    """`mini_batches` consecutive runs of whole groups, sizes differing by at most one group. Every rank has the
    same number of groups, so every rank makes the same number of updates (each one all-reduces under DDP)."""
    n_groups = n_samples // group_size
    if mini_batches > n_groups:
        raise ValueError(f"{mini_batches} mini-batches of whole groups out of {n_groups} groups")
    q, r = divmod(n_groups, mini_batches)
    out, start = [], 0
    for i in range(mini_batches):
        end = start + (q + (i < r)) * group_size
        out.append(slice(start, end))
        start = end
    return out


def policy_updates(
    model: torch.nn.Module,
    ref: torch.nn.Module | None,
    opt: torch.optim.Optimizer,
    params: list[Any],
    samples: list[Sample],
    group_size: int,
    scfg: RlStage,
    pad_id: int,
    device: torch.device,
    dtype: torch.dtype | None,
    di: DistInfo,
) -> tuple[dict[str, float], float]:
    """PPO-style reuse of one rollout batch: `ppo_epochs` passes, each split into `mini_batches` optimiser updates.
    The old log-probs are the sampler's (in `samples`), fixed for the whole step, so the ratio departs from 1 from
    the second update on and the clipping becomes active. mini_batches = ppo_epochs = 1 is a single on-policy
    update. Returns the loss/kl/entropy/clip/ratio sums and the token count over all updates (rank-local, for the
    caller's all-reduce) and the mean pre-clip gradient norm. The first update, made before any weight changed, also
    measures the sampler's log-probs against the trainer's (`lpd_*`: algos/grpo.logprob_diff_parts) over its
    mini-batch — the whole batch when mini_batches = 1."""
    from ..algos.microbatch import accumulate, clip_grad_norm

    slices = mini_batch_slices(len(samples), group_size, scfg.mini_batches)
    count, loss_sum, extras = 0.0, 0.0, dict[str, float]()
    norms: list[float] = []

    edges = histogram_edges("logprob_diff")
    first = [True]

    def loss_fn(m: torch.nn.Module, part: list[Sample]) -> Any:
        return grpo_loss_parts(
            m,
            ref,
            part,
            pad_id,
            device,
            dtype,
            scfg.clip_eps,
            scfg.kl_coef,
            scfg.temperature,
            scfg.packing,
            lpd_edges=edges if first[0] else None,
        )

    for _ in range(scfg.ppo_epochs):
        for sl in slices:
            part = samples[sl]
            opt.zero_grad(set_to_none=True)
            # micro-batches by token budget, each loss ÷ the mini-batch's global token count (algos/microbatch.py)
            acc = accumulate(
                model, part, grpo_lengths(part), grpo_count(part), loss_fn, scfg.micro_batch_tokens, scfg.packing, di
            )
            first[0] = False
            norms.append(clip_grad_norm(params, scfg.grad_clip))
            opt.step()
            count += acc.count
            loss_sum += acc.loss_sum
            for k, v in acc.extras.items():
                extras[k] = extras.get(k, 0.0) + v
    return {"count": count, "loss_sum": loss_sum, **extras}, sum(norms) / len(norms)


def check_rl_config(scfg: RlStage, stage: str, di: DistInfo) -> None:
    """What must hold before any model is loaded: every rank takes whole groups."""
    P = scfg.prompts_per_step
    if P % di.world_size:
        raise StageError(
            f"stages.{stage}.prompts_per_step {P} is not divisible by the {di.world_size} processes "
            "(each process takes whole groups)",
            "bad_config",
        )
    if scfg.mini_batches > P // di.world_size:
        raise StageError(
            f"stages.{stage}.mini_batches {scfg.mini_batches} is more than the "
            f"{P // di.world_size} groups each of the {di.world_size} processes gets per step "
            "(mini-batches are whole groups)",
            "bad_config",
        )


class GrpoSteps:
    """RL-1 / RL-2 for the one loop (stages/loop.py): a step samples G rollouts for each of its questions (its own
    observations for the first `simulated_fraction` of the steps, then the environment server's search), has the
    server grade them, and makes the GRPO updates; the OTC-GRPO minimum and the alert baselines ride in checkpoints."""

    def __init__(self, run: StageRun):
        from ..evaluation.agent import agent_eval
        from ..model.load import load_for_config

        self.run, self.agent_eval = run, agent_eval
        config, scfg, label = run.config, run.schedule.scfg, run.label
        assert isinstance(scfg, RlStage)
        self.scfg, self.config, self.label = scfg, config, label
        self.scheme, self.rparams = scfg.reward.scheme, dict(scfg.reward.params)
        self.ref = None
        if scfg.kl_coef > 0:
            self.ref, _ = load_for_config(run.model.init, run.rt, config, trainable=False, lora=False)
            self.ref.requires_grad_(False)
        self.source = run.data.source
        train_qs = self.source.split(scfg.question_split)
        if not train_qs:  # the sampler would stop later with "empty training set": say which setting to change
            hint = "set benchmark.rl_fraction above 0" if scfg.question_split == "rl" else "check the data section"
            raise StageError(
                f"stages.{run.stage}.question_split is {scfg.question_split!r} but that split has no "
                f"questions ({hint})",
                "bad_config",
            )
        self.has_dev = bool(self.source.split("dev"))
        # the search boundary meter's fixed sample: the same dev questions at every measured step
        self.boundary_qs = (
            fixed_sample(self.source.split("dev"), scfg.boundary_sample, config.seed) if scfg.boundary_every else []
        )
        self.max_len = resolve_max_len(scfg.max_len, None, model_context(run.model.policy))
        every = -(-len(train_qs) // 2000)  # a large question set is measured on an even sample of 2,000 prompts
        measured = train_qs[::every]
        self.room = rollout_report(
            f"{label} questions" + (f" (every {every}th of {len(train_qs)})" if every > 1 else ""),
            [len(prompt_ids(run.model.tok, config, q.question)) for q in measured],
            self.max_len,
            scfg.max_len is None,
            scfg.max_new_tokens,
        )
        self.room.require_tokens(label)  # no question leaves room to generate: stop now, not after empty rollouts

        def epoch(e: int) -> list[Any]:
            qs = list(train_qs)
            random.Random(f"{config.seed}/{run.stage}/{e}").shuffle(qs)
            return qs

        self.stream = Stream(epoch)
        self.env, self.own_env = _connect_env(run.opts.env, config, run.io.run_dir, run.di)
        self.grade_run = _grade_run_id(run.io.writer.run, label)
        self.monitor = AlertMonitor(scfg.alerts.model_dump(), self.env)  # rules in src/core/alerts.ts, via the server
        self.sdir = stage_dir(run.io.run_dir, label)
        self.sim_steps = round(scfg.simulated_fraction * run.schedule.total)
        self.gen = torch.Generator(device=run.rt.device)
        self.cursor = 0
        self.otc_before_step: tuple[dict | None] | None = None  # the OTC minimum before the grading of a step in flight
        self.last: list[tuple] = []  # the last step's (question, trajectory, advantage, breakdown, meta), for samples
        self.scan_off = False

    def describe(self) -> str:
        s = self.scfg
        return (
            f"GRPO, {s.prompts_per_step} questions × G={s.group_size} per step, reward {self.scheme}, "
            f"{self.sim_steps} of {self.run.schedule.total} steps with simulated observations, max_len {self.max_len}"
        )

    def notes(self) -> list[str]:
        return [line] if (line := self.room.line()) is not None else []

    def resume(self, extra: dict) -> None:
        state = RlCheckpointExtra.model_validate(extra)
        self.monitor.load_state_dict(state.alerts)
        if self.run.di.rank != 0:
            return
        for name, offset in (
            ("rollouts.coa.jsonl", state.rollouts_offset),
            ("flagged.coa.jsonl", state.flagged_offset),
        ):
            if offset is not None:
                # the records of the steps about to be redone were written after the checkpoint: exactly once
                line_index.truncate(self.sdir / name, offset)
        if state.otc_state is not None:
            self.env.import_otc_state(self.grade_run, state.otc_state)

    def fresh(self) -> None:
        if self.run.di.rank == 0 and self.scheme == "otc-grpo":  # a fresh stage starts with no running minimum
            self.env.import_otc_state(self.grade_run, {"version": 1, "min_tool_calls": {}})

    def tool(self, queries: list[str]) -> list[str | None]:
        return self.env.observations(queries, self.scfg.top_k, self.config.dialect)

    def probe_update(self) -> None:
        """An update as large as a step can make, without the optimiser step, the gradients dropped
        (model/activations.py measures it): the largest mini-batch of whole groups, each trajectory its longest
        prompt plus every turn's sampled and observation tokens (at most max_len), every response token trained."""
        from ..algos.microbatch import accumulate
        from ..model.activations import drop_gradients

        run, scfg, di = self.run, self.scfg, self.run.di
        n = -(-(scfg.prompts_per_step // di.world_size) // scfg.mini_batches) * scfg.group_size
        prompt = max(self.room.prompt_max, 1)
        length = min(self.max_len, prompt + scfg.max_turns * (scfg.max_new_tokens + scfg.max_obs_tokens))
        pad = run.model.tok.pad_token_id
        token = 2 if pad == 1 else 1
        new = max(length - prompt, 1)
        samples = [Sample([token] * prompt, [token] * new, [1] * new, [0.0] * new, 1.0) for _ in range(n)]

        def loss_fn(m: torch.nn.Module, part: list[Sample]) -> Any:
            return grpo_loss_parts(
                m,
                self.ref,
                part,
                pad,
                run.rt.device,
                run.rt.autocast_dtype,
                scfg.clip_eps,
                scfg.kl_coef,
                scfg.temperature,
                scfg.packing,
            )

        accumulate(
            run.model.trained,
            samples,
            grpo_lengths(samples),
            grpo_count(samples),
            loss_fn,
            scfg.micro_batch_tokens,
            scfg.packing,
            di,
        )
        drop_gradients(run.model.trained, run.schedule.opt)

    def step(self, step: int) -> dict[str, float | None]:
        run, scfg, config, di, tok = self.run, self.scfg, self.config, self.run.di, self.run.model.tok
        P, G = scfg.prompts_per_step, scfg.group_size
        t0 = time.time()
        # seeded per (step, rank): a resumed run samples exactly what the uninterrupted one would have
        self.gen.manual_seed(zlib.crc32(f"{config.seed}/{run.stage}/{step}/{di.rank}".encode()))
        P_local = P // di.world_size
        qs = self.stream.take(step * P + di.rank * P_local, P_local)
        simulated = step < self.sim_steps
        prompts = [prompt_ids(tok, config, q.question) for q in qs for _ in range(G)]
        timings: dict[str, float] = {"generate": 0.0, "tools": 0.0}
        run.phase("rollout", step + 1)
        with run.gathered():  # FSDP2: full (bf16) parameters for the rollout, freed again before training
            trajs = rollout(
                run.model.policy,
                tok,
                prompts,
                run.model.tags,
                None if simulated else self.tool,
                max_turns=scfg.max_turns,
                max_new_tokens=scfg.max_new_tokens,
                max_obs_tokens=scfg.max_obs_tokens,
                max_len=self.max_len,
                device=run.rt.device,
                dtype=run.rt.autocast_dtype,
                temperature=scfg.temperature,
                generator=self.gen,
                timings=timings,
                io=run.model.agent_io,
            )
        # the engine's KV caches, graphs and packed weights freed before the training forward, allocated again after
        release_cached_memory(run.rt.device, run.model.policy)
        owners = [q for q in qs for _ in range(G)]
        meta = [
            SampleMeta(run.io.writer.run, self.label, step + 1, i, i // G, question_meta(q))
            for i, q in enumerate(owners)
        ]
        # graded by the server (rewards and format rules live in TypeScript only); OTC-GRPO keys on the question
        to_grade = [
            {
                "id": f"{q.id}-{m.sample}",
                "question": q.question,
                "golden_answers": golden(q),
                "response": tok.decode(tr.ids, skip_special_tokens=False),
                "dialect": config.dialect,
            }
            for q, tr, m in zip(owners, trajs, meta)
        ]
        run.phase("grade", step + 1)
        if self.scheme == "otc-grpo" and run.stop.raises:
            # grading moves the server's running minimum; a stop before this step's update drops the step, and its
            # checkpoint must hold the minimum from before it (checkpoint_extra)
            self.otc_before_step = (self.env.export_otc_state(self.grade_run),)
        tg = time.time()
        breakdowns = self.env.grade(to_grade, scheme=self.scheme, params=self.rparams, run=self.grade_run)
        grade_s = time.time() - tg
        scan = self.scan_step(to_grade, breakdowns)
        adv = group_advantages([b.total for b in breakdowns], G, scfg.std_normalize)
        samples = [Sample(tr.prompt_ids, tr.ids, tr.loss_mask, tr.logprobs, a) for tr, a in zip(trajs, adv)]

        run.phase("update", step + 1)
        tt = time.time()
        extras, grad_norm = policy_updates(
            run.model.trained,
            self.ref,
            run.schedule.opt,
            run.schedule.params,
            samples,
            G,
            scfg,
            tok.pad_token_id,
            run.rt.device,
            run.rt.autocast_dtype,
            di,
        )
        # The cache comes back at its size now; the graphs are captured again at the next rollout, and must be: a CUDA
        # graph replays fixed addresses — the freed cache, packed weights and pool — so none survives the release.
        # What is kept is the compiled step (torch.compile's code, dynamic shapes): no compilation again.
        restore_engine_memory(run.model.policy)
        run.schedule.sched.step()  # the schedule counts RL steps, not optimiser updates
        done = step + 1
        self.cursor = done
        self.otc_before_step = None
        train_s = time.time() - tt
        retok = [retok_mismatch(tr) for tr in trajs]
        drift = [retok_drift(tok, tr.ids) for tr in trajs]
        sums = step_sums(trajs, breakdowns, G, run.model.agent_io, retok, drift)
        sums.update(extras)
        sums.update(timings)
        sums.update({"grade_s": grade_s, "train_s": train_s})
        sums.update(scan.metrics if scan else {})
        s = di.all_reduce_dict(sums)  # lpd_max: the largest over the ranks (all_reduce_dict's `_max` rule)
        u = UpdateSums.model_validate(s)
        ws, count = di.world_size, max(u.count, 1.0)
        tools_s = u.tools + u.grade_s  # the search during the rollout and the grading
        values = {
            **step_values(s),
            "loss": u.loss_sum / count,
            "kl": u.kl_sum / count,
            "entropy": u.entropy_sum / count,
            "clip_frac": u.clip_sum / count,
            "ratio_mean": u.ratio_sum / count,
            "grad_norm": grad_norm,
            "lr": run.schedule.sched.get_last_lr()[0],
            "simulated": float(simulated),
            "gen_tokens_per_s": u.gen_tokens / max(u.generate / ws, 1e-9),
            "train_tokens_per_s": u.train_tokens / max(u.train_s / ws, 1e-9),
            "generate_s": u.generate / ws,
            "tools_s": tools_s / ws,
            "train_s": u.train_s / ws,
            "step_s": time.time() - t0,
            **({k: s[k] for k in scan.metrics} if scan else {}),
            # each sample is in one mini-batch per epoch: the tokens that carried loss in this step, once each
            "trained_tokens": u.count / max(scfg.ppo_epochs, 1),
        }
        lpd_counts = logprob_diff_counts(s)
        if sum(lpd_counts) and (
            done % scfg.log_every == 0 or done == run.schedule.total
        ):  # beside the step's metrics event
            run.io.writer.emit(
                HistogramEvent(
                    stage=self.label,
                    step=done,
                    name="logprob_diff",
                    edges=histogram_edges("logprob_diff"),
                    counts=lpd_counts,
                )
            )
        values.update(self.measurements(done))
        self.last = list(zip(owners, trajs, adv, breakdowns, meta))
        if scan and di.rank == 0:
            self.write_flagged(scan, owners, trajs, adv, breakdowns, meta)
        return values

    def measurements(self, done: int) -> dict[str, float | None]:
        """The metrics measured after the step's update, each on its own schedule: the held-out dev EM (the
        reward-hacking alert's reference) and the search boundary meter. A stop drops only the measurement in
        flight (the step itself is done), so its metrics are missing from the step's."""
        run, scfg, di, tok = self.run, self.scfg, self.run.di, self.run.model.tok
        out: dict[str, float | None] = {}
        if self.has_dev and scfg.heldout_every and done % scfg.heldout_every == 0:
            run.phase("heldout", done)
            with run.gathered():
                if di.rank == 0:
                    hcfg = self.config.model_copy(
                        update={"eval": self.config.eval.model_copy(update={"limit": scfg.heldout_limit})}
                    )
                    try:
                        with run.stop.interruptible():
                            hm, _ = self.agent_eval(
                                run.model.policy,
                                tok,
                                self.source,
                                hcfg,
                                "dev",
                                run.rt,
                                self.env,
                                run=run.io.writer.run,
                                stage=self.label,
                                io=run.model.agent_io,
                            )
                        em = hm[AgentMetric.em.value]
                        out = {"heldout_em": em}
                        self.monitor.observe_heldout(float(em or 0.0))
                    except StageCancelled:
                        pass
        if self.boundary_qs and done % scfg.boundary_every == 0:
            run.phase("boundary", done)
            try:
                with run.stop.interruptible():
                    out = {**out, **self.boundary(tok)}
            except StageCancelled:
                pass
        return out

    def scan_step(self, records: list[JsonRecord], breakdowns: list[RewardBreakdown]) -> ScanResponse | None:
        """The core's reward-hacking scanners over this rank's graded rollouts (POST /v1/scan): {"metrics":
        {"scan_<rule>": count}, "flagged": [{index, findings}]}. A server that cannot scan (another build) is said
        once and training goes on without the counts."""
        from ..env.client import EnvError

        if self.scan_off:
            return None
        try:
            return self.env.scan(
                [{**r, "reward": reward_json(b)} for r, b in zip(records, breakdowns)], params=self.rparams
            )
        except EnvError as e:
            self.scan_off = True
            self.run.io.writer.emit(
                LogEvent(level="warning", message=f"{self.label}: reward-hacking scanners off: {e}")
            )
            return None

    def write_flagged(
        self,
        scan: ScanResponse,
        owners: list[Any],
        trajs: list[RlTrajectory],
        adv: list[float],
        breakdowns: list[RewardBreakdown],
        meta: list[SampleMeta],
    ) -> None:
        """Examples of what the scanners flagged, FLAGGED_PER_RULE per rule and step, appended to the stage's
        flagged.coa.jsonl with their findings in meta.scan: every step's, not only the sampled steps' (the live
        panel lists a step's from there and opens them in the record view)."""
        out = []
        for f in flagged_examples(scan.flagged):
            i = f.index
            findings = [x.model_dump(mode="json", exclude_unset=True) for x in f.findings]
            out.append(
                _record(
                    self.run.model.tok,
                    owners[i],
                    trajs[i],
                    adv[i],
                    breakdowns[i],
                    meta[i],
                    self.config.dialect,
                    scan=findings,
                )
            )
        if out:
            line_index.append_step(self.sdir / "flagged.coa.jsonl", out)

    def boundary(self, tok: TextTokenizer) -> dict[str, float | None]:
        """The search boundary meter on the fixed dev sample (greedy: it draws nothing from any generator, so the
        training that follows is the same with or without it); rank 0 measures, as the held-out check does."""
        run = self.run
        with run.gathered():
            if run.di.rank != 0:
                return {}
            t0 = time.time()
            meter = Meter(run.model.policy, tok, self.config, run.rt, self.env, io=run.model.agent_io)
            values = live_metrics(summarise(meter.measure(self.boundary_qs)))
            return {**values, BoundaryMetric.boundary_s.value: time.time() - t0}

    def alerts(self, step: int, values: dict) -> list[Any]:
        return self.monitor.update(step, values)

    def sample(self, step: int) -> None:
        tok, dialect = self.run.model.tok, self.config.dialect
        full = [_record(tok, q, tr, a, b, m, dialect) for q, tr, a, b, m in self.last]
        line_index.append_step(self.sdir / "rollouts.coa.jsonl", full)
        self.run.io.writer.emit(
            SampleEvent(stage=self.label, step=step, record=TrajectoryRecord.model_validate(full[0]))
        )

    def checkpoint_extra(self) -> dict:
        """The OTC running minima from the env server, the alert baselines, and where the rollouts file stood."""

        def size(name: str) -> int:
            return (self.sdir / name).stat().st_size if (self.sdir / name).is_file() else 0

        if self.scheme != "otc-grpo":
            otc = None
        elif self.otc_before_step is not None:  # a step stopped after its grading: the minimum from before it
            otc = self.otc_before_step[0]
        else:
            otc = self.env.export_otc_state(self.grade_run)
        return RlCheckpointExtra(
            otc_state=otc,
            alerts=self.monitor.state_dict(),
            rollouts_offset=size("rollouts.coa.jsonl"),
            flagged_offset=size("flagged.coa.jsonl"),
        ).model_dump()

    def evaluate(self) -> dict[str, dict]:
        if not self.has_dev:
            return {}
        run = self.run
        metrics, _ = self.agent_eval(
            run.model.policy,
            run.model.tok,
            self.source,
            self.config,
            "dev",
            run.rt,
            self.env,
            run=run.io.writer.run,
            stage=self.label,
            io=run.model.agent_io,
        )
        return {"dev": metrics}

    def close(self) -> None:
        if self.own_env:
            self.env.stop()


def release_cached_memory(device: torch.device, model: torch.nn.Module | None = None) -> None:
    """Free what `model`'s rollout engines hold between calls (KV caches, captured graphs, packed weights:
    generate.release_engine_memory) and hand the allocator's cached blocks back, so the training step's activations
    and the next rollout's cache are not fragmented around them."""
    if model is not None:
        release_engine_memory(model)
    if device.type == "cuda":
        torch.cuda.empty_cache()
