"""One set-up for every training stage (SFT and RL): runtime and process group, the data source (the embedded
benchmark, or the user's data through the core's importers), init resolution, model + tokenizer with the run
config's model choices, optimiser and schedule, DDP wrapping, the SIGTERM flag, resume, run_started, and the final
save. The loops (train.run_lm_stage, rl.run_rl_stage) only differ in what one step does."""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.config import StageConfig, rl_stage, stage_config
from ..base.errors import StageError
from ..base.lifecycle import STOP, StopControl
from ..contracts.schemas import stage_info
from ..base.runlayout import STAGE_ORDER, data_dir, final_dir, stage_dir
from ..model.optim import lr_lambda
from ..contracts.run_config import RunConfig
from ..base.options import TrainOptions
from ..base.runstart import run_started
from ..contracts.events import CheckpointEvent, LogEvent

if TYPE_CHECKING:
    from ..model.checkpoint import CheckpointState
    import torch

    from ..base.distributed import DistInfo
    from ..model.load import Runtime
    from ..base.events import EventWriter
    from ..data.benchmark import Benchmark
    from ..data.dialects import Tags
    from ..data.userdata import UserData
    from ..model.scoring import TokenScorer
    from ..rollout.agentio import AgentIO


@dataclass(frozen=True)
class StageModel:
    """What the stage trains, built once from its starting point."""

    init: Path  # where it started (init_from, an earlier stage's final, model.path or the embedded default)
    trained: torch.nn.Module  # the model the update runs: DDP- or FSDP2-wrapped when distributed
    policy: Any  # the plain model (generation, evaluation, saving): a transformers causal LM
    tok: Any  # a transformers tokenizer (its own annotations are too loose to narrow: pad_token_id may be a list)
    tags: Tags  # the dialect's tags
    agent_io: AgentIO  # the tags as token ids for the tool loop
    fast_path: dict[str, str]  # what each part of the training step runs (run_started; the loop adds checkpointing)


@dataclass(frozen=True)
class StageData:
    """What the stage's questions and samples come from: the embedded benchmark, or the user's data."""

    bench: Benchmark | None
    user: UserData | None

    @property
    def source(self) -> Any:
        """What questions come from: bench.split / data.split."""
        return self.user if self.user is not None else self.bench


@dataclass(frozen=True)
class StageSchedule:
    """How long and how the stage learns: its config section, its steps, and the optimiser and schedule."""

    scfg: StageConfig
    total: int
    params: list[Any]  # the trainable parameters (after sharding: FSDP2 swaps in DTensors)
    opt: torch.optim.Optimizer
    sched: torch.optim.lr_scheduler.LambdaLR


@dataclass(frozen=True)
class StageIO:
    """Where the stage writes: its run directory, events and checkpoints."""

    run_dir: Path
    writer: EventWriter
    ckpt_dir: Path
    trace: bool = False  # COA_TRACE_PHASES: a debug `log` event as each phase of a step begins


@dataclass
class StageRun:
    """One stage run: what it was asked (config, options), where it runs (processes, device) and its parts."""

    config: RunConfig
    opts: TrainOptions
    di: DistInfo
    rt: Runtime
    model: StageModel
    data: StageData
    schedule: StageSchedule
    io: StageIO
    stop: StopControl = field(default_factory=lambda: STOP)

    @property
    def stage(self) -> str:
        """The stage kind (sft2, rl2 …)."""
        return self.opts.stage

    @property
    def label(self) -> str:
        """The name events and directories carry (rl2-otc)."""
        return self.opts.name

    @property
    def cancelled(self) -> bool:
        return self.stop.requested is not None

    def phase(self, what: str, step: int) -> None:
        """The stage is now doing `what` (rollout, grade, update, heldout, checkpoint, eval, final) for `step`: said
        in the stop's log line, and as a debug event under COA_TRACE_PHASES (where a slow or stuck stage is)."""
        self.stop.phase = (what, step)
        if self.io.trace and self.di.rank == 0:
            self.io.writer.emit(LogEvent(level="debug", message=f"{self.label}: {what} of step {step}"))

    def latest_state(self) -> CheckpointState | None:
        """The newest usable checkpoint loaded into model/optimiser/schedule/RNG when --resume, else None. A damaged
        one is skipped for the one before it (a warning names it and why; it is moved aside as `….corrupt`); an
        older pickle checkpoint stops the resume with what to do (model/checkpoint.py). The events of the steps after
        the checkpoint (written before a kill) are dropped: they are about to be done again (base/events.py)."""
        from ..model.checkpoint import load_checkpoint, resume, set_aside

        if not self.opts.resume:
            return None

        def load(path: Path) -> CheckpointState:
            if self.sharded:
                from ..model.fsdp import load_sharded

                return load_sharded(path, self.model.trained, self.schedule.opt, self.schedule.sched)
            if path.is_dir():
                raise StageError(
                    f"{path} is a sharded (FSDP) checkpoint; resume it with distributed.strategy fsdp "
                    "and the same number of processes",
                    "bad_config",
                )
            return load_checkpoint(path, self.model.trained, self.schedule.opt, self.schedule.sched)

        def warn(message: str) -> None:
            self.io.writer.emit(LogEvent(level="warning", message=f"{self.label}: {message}"))

        state, skipped = resume(self.io.ckpt_dir, load, lambda ok: not self.di.any(not ok), warn)
        if skipped:
            self.di.barrier()  # every rank is done reading them
            if self.di.rank == 0:
                for path in skipped:
                    warn(f"{path.name} moved aside as {set_aside(path).name}")
        if state is None:  # killed before its first checkpoint: it starts over, so its earlier step events go
            if self.di.rank == 0:
                self.io.writer.supersede(self.label, 0, None)
            return None
        if self.di.rank == 0:
            self.io.writer.supersede(self.label, state.step, state.extra.get("events_offset"))
        return state

    @property
    def sharded(self) -> bool:
        from ..model.fsdp import is_sharded

        return is_sharded(self.model.trained)

    def gathered(self) -> Any:
        """Context for generation / evaluation on `policy`: FSDP2's full parameters (every rank must enter it);
        nothing to do otherwise."""
        from ..model.fsdp import gathered

        return gathered(self.model.trained)

    def save_checkpoint(self, step: int, cursor: int, extra: dict | None = None, prune: bool = True) -> Path | None:
        """Every rank calls this. DDP / one process: rank 0 writes one file; FSDP2: every rank writes its shards
        (fsdp.save_sharded). Returns the path on rank 0 (None elsewhere); the caller emits the event."""
        from ..model.checkpoint import prune_checkpoints, save_checkpoint

        # where events.jsonl stood: a resume from this checkpoint drops the step events written after it (base/events.py)
        extra = {**(extra or {}), **self.io.writer.resume_marks()}
        path = None
        if self.sharded:
            from ..model.fsdp import save_sharded

            path = save_sharded(
                self.io.ckpt_dir,
                step,
                cursor,
                self.model.trained,
                self.schedule.opt,
                self.schedule.sched,
                self.label,
                extra,
            )
        elif self.di.rank == 0:
            path = save_checkpoint(
                self.io.ckpt_dir,
                step,
                cursor,
                self.model.trained,
                self.schedule.opt,
                self.schedule.sched,
                self.label,
                extra,
            )
        if self.di.rank == 0 and prune:
            prune_checkpoints(self.io.ckpt_dir, keep=2)
        self.di.barrier()
        return path if self.di.rank == 0 else None

    def started(self, resumed_from: int | None, describe: str) -> None:
        from ..model.load import count_parameters

        run_started(
            self.io.writer,
            self.label,
            self.config,
            self.schedule.total,
            device=str(self.rt.device),
            world_size=self.di.world_size,
            resumed_from=resumed_from,
            fast_path=self.model.fast_path,
        )
        mode = "tags as special tokens" if self.model.agent_io.special else "tags as text"
        self.io.writer.emit(
            LogEvent(
                level="info",
                message=f"{self.label}: {count_parameters(self.model.trained):,} parameters "
                f"from {self.model.init} ({mode}); {describe}",
            )
        )
        self.io.writer.emit(
            LogEvent(
                level="info",
                message=f"{self.label}: fast path — " + "; ".join(f"{k}: {v}" for k, v in self.model.fast_path.items()),
            )
        )

    def save_final(self, step: int) -> Path:
        """Rank 0 writes stages/<label>/final (HF directory + coa_stage.json) and says so."""
        from ..model.load import save_model_dir

        out = final_dir(self.io.run_dir, self.label)
        info = {"stage": self.label, "step": step}
        if self.sharded:  # every rank: the weights are gathered to rank 0's CPU, for this export only
            from ..model.fsdp import full_state_dict

            state = full_state_dict(self.model.trained)
            if self.di.rank == 0:
                save_model_dir(self._plain_copy(state), self.model.tok, out, info)
        elif self.di.rank == 0:
            save_model_dir(self.model.trained, self.model.tok, out, info)
        if self.di.rank == 0:
            self.io.writer.emit(CheckpointEvent(stage=self.label, step=step, path=str(out)))
        return out

    def _plain_copy(self, state: dict) -> Any:
        """An unsharded CPU model (LoRA-wrapped like the trained one) holding the gathered weights, in the
        dtype the config asked for."""
        import torch

        from ..model.load import Runtime, load_for_config

        cpu = self.config.model_copy(
            update={
                "distributed": self.config.distributed.model_copy(update={"strategy": "ddp"}),
                "model": self.config.model.model_copy(
                    update={"gradient_checkpointing": False, "attn_implementation": "sdpa"}
                ),
            }
        )
        plain, _ = load_for_config(self.model.init, Runtime(torch.device("cpu"), None), cpu, trainable=False)
        inner = {k.removeprefix("lm."): v for k, v in state.items()}
        missing = plain.load_state_dict(inner, strict=False)
        if missing.unexpected_keys or missing.missing_keys:
            raise RuntimeError(f"gathered weights do not match the model: {missing}")
        return plain


def _warm_data(data: UserData, stage: str, scfg: StageConfig) -> None:
    """Run the core's importers for what this stage reads, before any training (bad data fails here)."""
    info = stage_info(stage)
    if info.loss == "pairwise":
        data.pairs()
    elif info.kind == "sft":
        data.sft_records()
    elif info.kind == "rl":
        split = rl_stage(scfg, stage).question_split
        if not data.has_questions(split):
            raise StageError(f"{stage} needs data.questions.{split}", "bad_config")
        data.split(split)
        if data.has_questions("dev"):
            data.split("dev")
        data.check_corpus()


def _wrap(scorer: TokenScorer, config: RunConfig, di: DistInfo) -> torch.nn.Module:
    """DDP, FSDP2 (distributed.strategy) or nothing (one process) around the trainer's TokenScorer."""
    if di.active and config.distributed.strategy == "fsdp":
        import torch

        from ..model.fsdp import shard

        return shard(scorer, torch.bfloat16 if config.model.dtype == "bfloat16" else None)
    return di.wrap(scorer)


def setup_stage(config: RunConfig, opts: TrainOptions, run_dir: Path, writer: EventWriter, di: DistInfo) -> StageRun:
    """The stage's parts, each built once: its data, its model (from the start resolve_init finds), its schedule and
    where it writes; then the stop signals' handlers."""
    import torch

    from ..model.load import setup_runtime

    stage, label = opts.stage, opts.name
    info = stage_info(stage)
    scfg = stage_config(config, stage)
    own_data = config.data is not None
    if not own_data and config.dialect != "coa":
        raise StageError(
            "the embedded benchmark's trajectories are written in the coa dialect; set dialect to coa "
            "(or train on your own data: run config `data`)",
            "bad_config",
        )
    if own_data and info.kind == "pretrain":
        raise StageError(
            "pretrain trains the embedded default on the embedded benchmark; with your own data set "
            "model.path and start at sft1",
            "bad_config",
        )
    rt = setup_runtime(config, di.world_size, di.local_rank)
    di.init(rt.device)
    if di.rank == 0:  # how the CPU is shared: a slow stage beside other work starts its diagnosis here
        threads = torch.get_num_threads()
        writer.emit(
            LogEvent(
                level="info",
                message=f"{label}: {threads} torch thread{'s' if threads != 1 else ''}, OpenMP wait "
                f"policy {os.environ.get('OMP_WAIT_POLICY', 'unset (libgomp spins at barriers)')}",
            )
        )
    data, init = _stage_data_and_start(config, stage, label, scfg, run_dir, writer, di)
    total = opts.max_steps or scfg.steps
    model, schedule = _stage_model_and_schedule(config, init, rt, di, scfg, total, info.loss)
    run = StageRun(
        config,
        opts,
        di,
        rt,
        model,
        data,
        schedule,
        StageIO(
            run_dir,
            writer,
            stage_dir(run_dir, label) / "checkpoints",
            trace=os.environ.get("COA_TRACE_PHASES", "") not in ("", "0"),
        ),
    )
    # TERM, INT, HUP: at once in a step before its first update or in an evaluation, else at the next check; then
    # the last completed step is checkpointed and the stage ends `cancelled` (stages/loop.py)
    STOP.install(raises=di.world_size == 1)
    schedule.opt.register_step_pre_hook(lambda *_: STOP.commit())
    return run


def _stage_data_and_start(
    config: RunConfig, stage: str, label: str, scfg: StageConfig, run_dir: Path, writer: EventWriter, di: DistInfo
) -> tuple[StageData, Path]:
    """The stage's data (a finished collection, the user's data or the embedded benchmark, prepared by rank 0) and
    where its model starts (resolve_init: rank 0 writes the embedded default from the benchmark)."""
    from ..data.benchmark import benchmark_from_config, ensure_benchmark_files
    from ..data.userdata import UserData

    own_data = config.data is not None
    user = None
    collected = None
    if stage_info(stage).kind == "sft":  # a run with a finished collection trains on it (collect.use_for_sft)
        from ..stages.collect import collected_data

        collected = collected_data(config, run_dir, prepare=di.rank == 0)
    if own_data or collected is not None:
        user = collected or UserData(config, data_dir(config, run_dir) / "prepared", prepare=di.rank == 0)
        if di.rank == 0:
            _warm_data(user, stage, scfg)
            for note in getattr(user, "notes", []):
                writer.emit(LogEvent(level="warning", message=f"{label}: {note}"))
    if collected is not None:
        writer.emit(
            LogEvent(
                level="info",
                message=f"{label}: SFT data from this run's collection "
                f"({run_dir / 'stages' / 'collect'}; collect.use_for_sft)",
            )
        )
    bench = None
    if not own_data:
        bench = (
            ensure_benchmark_files(config, data_dir(config, run_dir)) if di.rank == 0 else benchmark_from_config(config)
        )
    init = resolve_init(config, run_dir, stage, bench, di.rank == 0)
    di.barrier()
    if bench is not None and bench.observations is None:  # other ranks: the observations rank 0 fetched and cached
        bench = benchmark_from_config(config, data_dir(config, run_dir))
    return StageData(bench, user), init


def _stage_model_and_schedule(
    config: RunConfig, init: Path, rt: Runtime, di: DistInfo, scfg: StageConfig, total: int, loss: str | None
) -> tuple[StageModel, StageSchedule]:
    """The model from `init` (seeded), wrapped for the processes, with its optimiser and learning-rate schedule, and
    what each part of the step runs (said by the stage's first event)."""
    import torch

    from ..data.dialects import tags
    from ..model.load import load_for_config, unwrap
    from ..model.optim import make_optimizer
    from ..model.scoring import TokenScorer
    from ..rollout.agentio import AgentIO
    from ..rollout.generate import engine_path

    torch.manual_seed(config.seed)
    random.seed(config.seed)
    model, tok = load_for_config(init, rt, config)
    t = tags(config.dialect)
    scorer = TokenScorer(model)
    # before sharding: what this model runs for each part of the step (the stage's first event says it)
    fast_path = scorer.fast_path(rt.autocast_dtype, scfg.packing, loss)
    wrapped = _wrap(scorer, config, di)
    params = [p for p in wrapped.parameters() if p.requires_grad]  # after sharding: FSDP2 swaps in DTensors
    opt = make_optimizer(params, scfg.lr, scfg.weight_decay)
    fast_path["AdamW"] = str(opt.coa_adamw)  # pyright: ignore[reportAttributeAccessIssue] — set by make_optimizer
    # after sharding: an FSDP-sharded model rolls out through the reference loop
    fast_path.update(engine_path(unwrap(wrapped), rt.device, rt.autocast_dtype))
    # "activation checkpointing": decided by the first update's measured peak before run_started (stages/loop.py)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda(scfg.warmup_steps, total))
    return (
        StageModel(init, wrapped, unwrap(wrapped), tok, t, AgentIO.make(tok, t), fast_path),
        StageSchedule(scfg, total, params, opt, sched),
    )


def resolve_init(config: RunConfig, run_dir: Path, stage: str, bench: Benchmark | None, is_main: bool) -> Path:
    """Where a stage starts: init_from, else the latest earlier stage of this run, else model.path / the embedded
    default (pretrain, or any stage when model.path is a real model)."""
    from ..data.benchmark import vocabulary_texts
    from ..model.load import ModelDirError, check_model_dir, write_embedded_model

    init_from = stage_config(config, stage).init_from
    if init_from:
        return check_model_dir(init_from)
    for prev in reversed(STAGE_ORDER[: STAGE_ORDER.index(stage)]):
        if (final_dir(run_dir, prev) / "config.json").is_file():
            return final_dir(run_dir, prev)
    if config.model.path:
        return check_model_dir(config.model.path)
    if stage_info(stage).kind != "pretrain":
        raise ModelDirError(
            f"stage {stage} needs a model: run the earlier stages into {run_dir}, or set "
            f"model.path or stages.{stage}.init_from"
        )
    if bench is None:
        raise ModelDirError(
            "pretrain builds the embedded default from the embedded benchmark; with your own data "
            "set model.path and start at sft1"
        )
    target = run_dir / "model-init"
    if is_main:
        write_embedded_model(config, vocabulary_texts(bench, config), target, config.seed)
    return target
