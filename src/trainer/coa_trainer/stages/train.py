"""`python -m coa_trainer train --stage … --config run.json --run-dir runs/<id> [--resume]`: pretrain and the SFT
stages' loop (RL stages: stages/rl.py). Set-up is stage_setup.setup_stage, the run layout base/runlayout.py."""

from __future__ import annotations

import math
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from ..base import quiet  # noqa: F401  (silences library progress bars before they are imported)
from ..base.config import ConfigError, load_config
from ..base.events import EventWriter
from ..contracts.schemas import rl_stages

from ..base.errors import StageError


def train_command(args: Any) -> int:
    run_dir = Path(args.run_dir)
    from ..base.distributed import DistInfo
    from ..base.names import name_error

    if err := name_error(run_dir.resolve().name, "run id (the run directory's name)"):
        print(f"coa_trainer: {err}", file=sys.stderr)
        return 2

    dist_info = DistInfo.from_env()
    try:
        writer = EventWriter(run_dir, enabled=dist_info.rank == 0)
    except OSError as e:
        print(f'{{"type": "error", "message": "cannot create run directory {run_dir}: {e.strerror}"}}')
        return 2
    stage = getattr(args, "label", None) or args.stage  # the name events carry (rl2 --label rl2-otc)
    from ..base.lifecycle import RunLock, RunLockBusy, StartupCancelled, startup_step

    lock = None
    try:
        if dist_info.rank == 0:  # one trainer per run directory (a pipeline's stage runs under the pipeline's lock)
            lock = RunLock.acquire(run_dir, f"train --stage {args.stage}")
        config = load_config(args.config)
        return run_stage(config, args, run_dir, writer, dist_info)
    except RunLockBusy as e:
        print(f"coa_trainer: {e}", file=sys.stderr)  # not an event: events.jsonl belongs to the trainer holding it
        return 2
    except StartupCancelled:  # SIGTERM before the stage's own handler (imports, data, model load): nothing to save
        writer.emit("stage_finished", stage=stage, step=startup_step(run_dir, stage, getattr(args, "resume", False)),
                    status="cancelled", checkpoint=None)
        return 130
    except ConfigError as e:
        writer.emit("error", message=str(e), code="bad_config", stage=stage)
        return 2
    except Exception as e:  # noqa: BLE001 — every failure becomes one error event and a non-zero exit
        from ..model.load import ModelDirError

        if isinstance(e, ModelDirError):
            writer.emit("error", message=str(e), code="missing_model", stage=stage)
            return 2
        if isinstance(e, StageError):
            writer.emit("error", message=str(e), code=e.code, stage=stage)
            return 2
        from ..data.userdata import DataError

        if isinstance(e, DataError):
            writer.emit("error", message=str(e), code="bad_data", stage=stage)
            return 2
        from ..env.client import EnvError

        if isinstance(e, EnvError):  # RL tools and grading, the benchmark's oracle observations
            writer.emit("error", message=f"environment server: {e}", code="env_unreachable", stage=stage)
            return 3
        writer.emit("error", message=f"{type(e).__name__}: {e}" or type(e).__name__, code="internal", stage=stage,
                    detail=traceback.format_exc())
        return 1
    finally:
        writer.close()
        dist_info.shutdown()
        if lock is not None:
            lock.release()


def run_stage(config: dict, args: Any, run_dir: Path, writer: EventWriter, di: Any) -> int:
    from ..algos.microbatch import accumulate, clip_grad_norm
    from ..stages.setup import setup_stage
    from ..stages.sft import make_stage

    stage = args.stage
    if stage in rl_stages():  # GRPO with rollouts: its own loop (stages/rl.py)
        from ..stages.rl import run_rl_stage

        return run_rl_stage(config, args, run_dir, writer, di)
    scfg = config["stages"][stage]
    if scfg["batch_size"] % di.world_size:
        raise StageError(f"stages.{stage}.batch_size {scfg['batch_size']} is not divisible by the "
                         f"{di.world_size} processes", "bad_config")
    run = setup_stage(config, args, run_dir, writer, di)
    model, opt, sched, params, total = run.model, run.opt, run.sched, run.params, run.total
    impl = make_stage(run)
    stage = run.label  # --label names this run of the stage: stages/<label>/ and the events' stage (as in RL)

    step, cursor, resumed_from = 0, 0, None
    state = run.latest_state()
    if state is not None:
        step, cursor, resumed_from = state["step"], state["cursor"], state["step"]
    run.started(resumed_from, impl.describe())
    for note in getattr(impl, "notes", []):
        writer.emit("log", level="warning", message=f"{stage}: {note}")

    started = time.time()
    saved_at = resumed_from  # the step of the newest checkpoint on disk: a cancel right after it need not save again
    window: dict[str, float] = {}
    B_local = scfg["batch_size"] // di.world_size
    model.train()
    while step < total and not run.cancelled:
        t0 = time.time()
        batch = impl.stream.take(cursor + di.rank * B_local, B_local)
        opt.zero_grad(set_to_none=True)
        # micro-batches by token budget; each loss divided by the global count (algos/microbatch.py)
        acc = accumulate(model, batch, impl.lengths(batch), impl.count(batch), impl.loss_parts,
                         scfg["micro_batch_tokens"], scfg["packing"], di)
        global_count = acc.global_count
        grad_norm = clip_grad_norm(params, scfg["grad_clip"])
        opt.step()
        sched.step()
        step += 1
        cursor += scfg["batch_size"]
        stats = di.all_reduce_dict({"loss_sum": acc.loss_sum, **acc.extras})
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
            if (path := run.save_checkpoint(step, cursor)) is not None:
                writer.emit("checkpoint", stage=stage, step=step, path=str(path))
            saved_at = step

    if run.cancelled:
        if saved_at != step and (path := run.save_checkpoint(step, cursor, prune=False)) is not None:
            writer.emit("checkpoint", stage=stage, step=step, path=str(path))
        writer.emit("stage_finished", stage=stage, step=step, status="cancelled", checkpoint=None)
        return 130
    out = run.save_final(step)
    with run.gathered():  # FSDP2: full parameters on every rank, so rank 0 alone can run the plain model
        if di.rank == 0:
            plain = run.policy  # not through DDP: its forward would wait for collectives from the other ranks
            plain.eval()
            for split, metrics in impl.evaluate(plain).items():
                writer.emit("eval", stage=stage, step=step, split=split, metrics=metrics)
    di.barrier()
    writer.emit("stage_finished", stage=stage, step=step, status="ok", checkpoint=str(out))
    return 0
