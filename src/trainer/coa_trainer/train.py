"""`python -m coa_trainer train --stage … --config run.json --run-dir runs/<id> [--resume]`.

Run directory layout:
  events.jsonl                       the event stream (all stages append)
  data/                              the embedded benchmark (unless benchmark.data_dir is set)
  model-init/                        the embedded default before training (an ordinary HF model directory)
  stages/<stage>/checkpoints/*.pt    resumable state: weights, optimiser, scheduler, RNG, data cursor
  stages/<stage>/final/              the stage's result (HF directory; the next stage starts from it)
  stages/<label>/rollouts.coa.jsonl  RL stages: the rollouts of every sample step (rl.py; label = --label or stage)
"""

from __future__ import annotations

import math
import os
import random
import signal
import time
import traceback
from pathlib import Path
from typing import Any

from . import quiet  # noqa: F401  (silences library progress bars before they are imported)
from .config import ConfigError, load_config
from .events import EventWriter

STAGE_ORDER = ("pretrain", "sft1", "sft2", "sft3", "rl1", "rl2")


class StageError(RuntimeError):
    def __init__(self, message: str, code: str):
        super().__init__(message)
        self.code = code


def stage_dir(run_dir: Path, stage: str) -> Path:
    return run_dir / "stages" / stage


def final_dir(run_dir: Path, stage: str) -> Path:
    return stage_dir(run_dir, stage) / "final"


def data_dir(config: dict, run_dir: Path) -> Path:
    return Path(config["benchmark"]["data_dir"]) if config["benchmark"]["data_dir"] else run_dir / "data"


def vocabulary_texts(bench: Any, config: dict) -> list[str]:
    from .benchmark import join_segments
    from .dialects import tags

    t = tags("coa")
    texts = bench.pretrain_lines() + [d["contents"] for d in bench.corpus]
    texts += [q.question for q in bench.questions] + [join_segments(bench.oracle(q, t)) for q in bench.questions]
    return texts + [config["prompt_template"], "answer :"]


def resolve_init(config: dict, run_dir: Path, stage: str, bench: Any, is_main: bool) -> Path:
    """Where a stage starts: init_from, else the latest earlier stage of this run, else model.path / the embedded
    default (pretrain, or any stage when model.path is a real model)."""
    from .model import ModelDirError, check_model_dir, write_embedded_model

    init_from = config["stages"][stage]["init_from"]
    if init_from:
        return check_model_dir(init_from)
    for prev in reversed(STAGE_ORDER[: STAGE_ORDER.index(stage)]):
        if (final_dir(run_dir, prev) / "config.json").is_file():
            return final_dir(run_dir, prev)
    if config["model"]["path"]:
        return check_model_dir(config["model"]["path"])
    if stage != "pretrain":
        raise ModelDirError(f"stage {stage} needs a model: run the earlier stages into {run_dir}, or set "
                            f"model.path or stages.{stage}.init_from")
    target = run_dir / "model-init"
    if is_main:
        write_embedded_model(config, vocabulary_texts(bench, config), target, config["seed"])
    return target


def lr_lambda(warmup: int, total: int):
    def f(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        progress = (step - warmup) / max(1, total - warmup)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))
    return f


def train_command(args: Any) -> int:
    run_dir = Path(args.run_dir)
    from .distributed import DistInfo

    dist_info = DistInfo.from_env()
    try:
        writer = EventWriter(run_dir, enabled=dist_info.rank == 0)
    except OSError as e:
        print(f'{{"type": "error", "message": "cannot create run directory {run_dir}: {e.strerror}"}}')
        return 2
    stage = getattr(args, "label", None) or args.stage  # the name events carry (rl2 --label rl2-otc)
    try:
        config = load_config(args.config)
        return run_stage(config, args, run_dir, writer, dist_info)
    except ConfigError as e:
        writer.emit("error", message=str(e), code="bad_config", stage=stage)
        return 2
    except Exception as e:  # noqa: BLE001 — every failure becomes one error event and a non-zero exit
        from .model import ModelDirError

        if isinstance(e, ModelDirError):
            writer.emit("error", message=str(e), code="missing_model", stage=stage)
            return 2
        if isinstance(e, StageError):
            writer.emit("error", message=str(e), code=e.code, stage=stage)
            return 2
        writer.emit("error", message=f"{type(e).__name__}: {e}" or type(e).__name__, code="internal", stage=stage,
                    detail=traceback.format_exc())
        return 1
    finally:
        writer.close()
        dist_info.shutdown()


def run_stage(config: dict, args: Any, run_dir: Path, writer: EventWriter, di: Any) -> int:
    import torch

    from .benchmark import ensure_benchmark_files, benchmark_from_config
    from .checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint, prune_checkpoints
    from .dialects import tags
    from .model import load_model, save_model_dir, setup_runtime, count_parameters, unwrap
    from .stages import make_stage

    stage = args.stage
    if stage in ("rl1", "rl2"):  # GRPO with rollouts: its own loop (rl.py)
        from .rl import run_rl_stage

        return run_rl_stage(config, args, run_dir, writer, di)
    scfg = config["stages"][stage]
    total = args.max_steps or scfg["steps"]
    if scfg["batch_size"] % di.world_size:
        raise StageError(f"stages.{stage}.batch_size {scfg['batch_size']} is not divisible by the "
                         f"{di.world_size} processes", "bad_config")
    if config["dialect"] != "coa":
        raise StageError("the embedded benchmark's oracle trajectories are written in the coa dialect; set "
                         "dialect to coa", "bad_config")
    rt = setup_runtime(config, di.world_size, di.local_rank)
    di.init(rt.device)
    bench = ensure_benchmark_files(config, data_dir(config, run_dir)) if di.rank == 0 else benchmark_from_config(config)
    init = resolve_init(config, run_dir, stage, bench, di.rank == 0)
    di.barrier()

    torch.manual_seed(config["seed"])
    random.seed(config["seed"])
    model, tok = load_model(init, rt, config["model"]["lora"])
    impl = make_stage(stage, config, bench, tok, tags("coa"), rt)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=scfg["lr"], weight_decay=scfg["weight_decay"], betas=(0.9, 0.95))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda(scfg["warmup_steps"], total))
    model = di.wrap(model)

    step, cursor, resumed_from = 0, 0, None
    ckpt_dir = stage_dir(run_dir, stage) / "checkpoints"
    if args.resume:
        path = latest_checkpoint(ckpt_dir)
        if path is not None:
            state = load_checkpoint(path, model, opt, sched)
            step, cursor, resumed_from = state["step"], state["cursor"], state["step"]
    writer.emit("run_started", stage=stage, config=config, total_steps=total, device=str(rt.device),
                world_size=di.world_size, pid=os.getpid(), resumed_from=resumed_from)
    writer.emit("log", level="info", message=f"{stage}: {count_parameters(model):,} parameters from {init}; "
                f"{impl.describe()}")

    cancelled = {"flag": False}
    signal.signal(signal.SIGTERM, lambda *_: cancelled.__setitem__("flag", True))
    started = time.time()
    saved_at = resumed_from  # the step of the newest checkpoint on disk: a cancel right after it need not save again
    window: dict[str, float] = {}
    B_local = scfg["batch_size"] // di.world_size
    model.train()
    while step < total and not cancelled["flag"]:
        t0 = time.time()
        batch = impl.stream.take(cursor + di.rank * B_local, B_local)
        loss_sum, count, extras = impl.loss_parts(model, batch)
        global_count = di.all_reduce_sum(count)
        # DDP averages gradients over ranks, so scale by world size: the gradient equals one process's on the
        # global batch, normalised by the global count.
        loss = loss_sum / max(global_count, 1.0) * di.world_size
        opt.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(params, scfg["grad_clip"])
        opt.step()
        sched.step()
        step += 1
        cursor += scfg["batch_size"]
        stats = di.all_reduce_dict({"loss_sum": float(loss_sum.detach()), **extras})
        dt = time.time() - t0
        window["tokens_per_s"] = stats.get("tokens", 0.0) / max(dt, 1e-9)
        values = {"loss": stats["loss_sum"] / max(global_count, 1.0), "lr": sched.get_last_lr()[0],
                  "grad_norm": float(grad_norm), "tokens_per_s": window["tokens_per_s"],
                  **impl.metrics(stats, global_count)}
        if not math.isfinite(values["loss"]):
            writer.emit("alert", stage=stage, step=step, kind="nan_loss", severity="error",
                        message=f"loss is {values['loss']} at step {step}")
        if step % scfg["log_every"] == 0 or step == total:
            writer.emit("metrics", stage=stage, step=step, values=values)
            elapsed = time.time() - started
            done = step - (resumed_from or 0)
            writer.emit("progress", stage=stage, step=step, total=total, elapsed_s=elapsed,
                        eta_s=elapsed / done * (total - step) if done else None)
        if scfg["sample_every"] and step % scfg["sample_every"] == 0 and di.rank == 0:
            writer.emit("sample", stage=stage, step=step, record=impl.sample_record(batch[0], writer.run, step))
        if scfg["checkpoint_every"] and step % scfg["checkpoint_every"] == 0 and step < total:
            if di.rank == 0:
                path = save_checkpoint(ckpt_dir, step, cursor, model, opt, sched, stage)
                prune_checkpoints(ckpt_dir, keep=2)
                writer.emit("checkpoint", stage=stage, step=step, path=str(path))
            saved_at = step
            di.barrier()

    if cancelled["flag"]:
        if di.rank == 0 and saved_at != step:
            path = save_checkpoint(ckpt_dir, step, cursor, model, opt, sched, stage)
            writer.emit("checkpoint", stage=stage, step=step, path=str(path))
        writer.emit("stage_finished", stage=stage, step=step, status="cancelled", checkpoint=None)
        return 130
    out = final_dir(run_dir, stage)
    if di.rank == 0:
        save_model_dir(model, tok, out, {"stage": stage, "step": step})
        writer.emit("checkpoint", stage=stage, step=step, path=str(out))
        plain = unwrap(model)  # not through DDP: its forward would wait for collectives from the other ranks
        plain.eval()
        for split, metrics in impl.evaluate(plain).items():
            writer.emit("eval", stage=stage, step=step, split=split, metrics=metrics)
    di.barrier()
    writer.emit("stage_finished", stage=stage, step=step, status="ok", checkpoint=str(out))
    return 0
