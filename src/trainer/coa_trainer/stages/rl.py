"""The RL stages rl1 / rl2 (GRPO) as a training loop: sample G rollouts per question (simulated observations for
the first `simulated_fraction` of the steps, then the env server's search), grade them with the env server's
/v1/grade, GRPO updates (`ppo_epochs` × `mini_batches` per step), metrics / alerts / samples as events,
checkpoints with the OTC-GRPO state.

Under torchrun every rank takes whole groups (prompts_per_step / world_size questions × G samples); sums are
all-reduced so the logged numbers and the loss normalisation are global. Rank 0 starts the env server (unless
--env-url is given) and passes its address to the others."""

from __future__ import annotations

import json
import os
import random
import time
import zlib
from pathlib import Path
from typing import Any

import torch

from ..rollout.metrics import step_sums, step_values
from ..env.alerts import AlertMonitor
from ..data.samples import Stream
from ..algos.grpo import Sample, group_advantages, grpo_count, grpo_lengths, grpo_loss_parts
from ..data.lengths import resolve_max_len, rollout_report
from ..model.load import model_context
from ..data.prompts import prompt_ids
from ..rollout.loop import RlTrajectory, retok_drift, retok_mismatch, rollout, token_offsets
from ..base.errors import StageError
from ..base.runlayout import corpus_path, stage_dir
from ..data.userdata import golden

def _connect_env(args: Any, config: dict, run_dir: Path, di: Any) -> tuple[Any, bool]:
    """(client, whether we started it). Rank 0 starts the server; the other ranks get its url and token."""
    from ..env.client import EnvClient

    if getattr(args, "env_url", None):
        return EnvClient(args.env_url, args.env_token or ""), False
    env, addr = None, [None, None]
    if di.rank == 0:
        env = EnvClient.start(corpus_path(config, run_dir), config["dialect"], config["env"]["node"], config["env"]["cli"],
                              config["env"]["startup_timeout_s"])
        addr = [env.url, env.token]
    if di.active:
        import torch.distributed as dist

        dist.broadcast_object_list(addr, src=0)
    return (env, True) if env is not None else (EnvClient(addr[0], addr[1]), False)


def _grade_run_id(run: str, label: str) -> str:
    """The env server's OTC state key: <run>.<label> (both valid names), shortened with a hash past the length limit."""
    from ..base.names import is_valid_name

    key = f"{run}.{label}"
    return key if is_valid_name(key) else f"run-{zlib.crc32(key.encode()):08x}"


def _record(tok: Any, q: Any, tr: RlTrajectory, advantage: float, breakdown: dict | None, meta: dict,
            dialect: str) -> dict:
    response = tok.decode(tr.ids, skip_special_tokens=False)
    tokens: dict[str, Any] = {"ids": tr.ids, "loss_mask": tr.loss_mask, "logprobs": tr.logprobs,
                              "advantages": [advantage if m else 0.0 for m in tr.loss_mask]}
    offsets = token_offsets(tok, tr.ids, response)
    if offsets is not None:
        tokens["offsets"] = offsets
    rec = {"id": f"{q.id}-{meta['step']}-{meta['sample']}", "question": q.question, "golden_answers": golden(q),
           "response": response, "dialect": dialect, "tokens": tokens, "meta": meta}
    if breakdown is not None:
        rec["reward"] = breakdown
    return rec


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


def policy_updates(model: Any, ref: Any, opt: Any, params: list[Any], samples: list[Sample], group_size: int,
                   scfg: dict, pad_id: int, device: torch.device, dtype: torch.dtype | None, di: Any
                   ) -> tuple[dict[str, float], float]:
    """PPO-style reuse of one rollout batch: `ppo_epochs` passes, each split into `mini_batches` optimiser updates.
    The old log-probs are the sampler's (in `samples`), fixed for the whole step, so the ratio departs from 1 from
    the second update on and the clipping becomes active. mini_batches = ppo_epochs = 1 is a single on-policy
    update. Returns the loss/kl/entropy/clip/ratio sums and the token count over all updates (rank-local, for the
    caller's all-reduce) and the mean pre-clip gradient norm."""
    from ..algos.microbatch import accumulate, clip_grad_norm

    slices = mini_batch_slices(len(samples), group_size, scfg["mini_batches"])
    totals: dict[str, float] = {"count": 0.0, "loss_sum": 0.0}
    norms: list[float] = []

    def loss_fn(m: Any, part: list[Sample]) -> Any:
        return grpo_loss_parts(m, ref, part, pad_id, device, dtype, scfg["clip_eps"], scfg["kl_coef"],
                               scfg["temperature"], scfg["packing"])

    for _ in range(scfg["ppo_epochs"]):
        for sl in slices:
            part = samples[sl]
            opt.zero_grad(set_to_none=True)
            # micro-batches by token budget, each loss ÷ the mini-batch's global token count (algos/microbatch.py)
            acc = accumulate(model, part, grpo_lengths(part), grpo_count(part), loss_fn,
                             scfg["micro_batch_tokens"], scfg["packing"], di)
            norms.append(clip_grad_norm(params, scfg["grad_clip"]))
            opt.step()
            totals["count"] += acc.count
            totals["loss_sum"] += acc.loss_sum
            for k, v in acc.extras.items():
                totals[k] = totals.get(k, 0.0) + v
    return totals, sum(norms) / len(norms)


def run_rl_stage(config: dict, args: Any, run_dir: Path, writer: Any, di: Any) -> int:
    from ..evaluation.agent import agent_eval
    from ..model.load import load_for_config
    from ..stages.setup import setup_stage

    stage = args.stage
    scfg = config["stages"][stage]
    scheme, rparams = scfg["reward"]["scheme"], dict(scfg["reward"]["params"])
    P, G = scfg["prompts_per_step"], scfg["group_size"]
    if P % di.world_size:
        raise StageError(f"stages.{stage}.prompts_per_step {P} is not divisible by the {di.world_size} processes "
                         "(each process takes whole groups)", "bad_config")
    if scfg["mini_batches"] > P // di.world_size:
        raise StageError(f"stages.{stage}.mini_batches {scfg['mini_batches']} is more than the "
                         f"{P // di.world_size} groups each of the {di.world_size} processes gets per step "
                         "(mini-batches are whole groups)", "bad_config")
    run = setup_stage(config, args, run_dir, writer, di)
    label, total, rt, tok, t, io = run.label, run.total, run.rt, run.tok, run.t, run.io
    model, opt, sched, params, policy = run.model, run.opt, run.sched, run.params, run.policy
    dialect = config["dialect"]
    ref = None
    if scfg["kl_coef"] > 0:
        ref, _ = load_for_config(run.init, rt, config, trainable=False, lora=False)
        ref.requires_grad_(False)
    source = run.source
    train_qs = source.split(scfg["question_split"])
    if not train_qs:  # the sampler would stop later with "empty training set": say which setting to change
        hint = "set benchmark.rl_fraction above 0" if scfg["question_split"] == "rl" else "check the data section"
        raise StageError(f"stages.{stage}.question_split is {scfg['question_split']!r} but that split has no "
                         f"questions ({hint})", "bad_config")
    has_dev = bool(source.split("dev"))
    max_len = resolve_max_len(scfg["max_len"], None, model_context(policy))
    every = -(-len(train_qs) // 2000)  # a large question set is measured on an even sample of 2,000 prompts
    measured = train_qs[::every]
    room = rollout_report(f"{label} questions" + (f" (every {every}th of {len(train_qs)})" if every > 1 else ""),
                          [len(prompt_ids(tok, config, q.question)) for q in measured], max_len,
                          scfg["max_len"] is None, scfg["max_new_tokens"])
    room.require_tokens(label)  # no question leaves room to generate: stop now, not after empty rollouts

    def epoch(e: int) -> list[Any]:
        qs = list(train_qs)
        random.Random(f"{config['seed']}/{stage}/{e}").shuffle(qs)
        return qs

    stream = Stream(epoch)
    env, own_env = _connect_env(args, config, run_dir, di)
    grade_run = _grade_run_id(writer.run, label)
    monitor = AlertMonitor(dict(scfg["alerts"]), env)  # rules in src/core/alerts.ts, via the server
    sdir = stage_dir(run_dir, label)
    step, resumed_from = 0, None
    try:
        if (state := run.latest_state()) is not None:
            step = resumed_from = state["step"]
            extra = state.get("extra", {})
            monitor.load_state_dict(extra.get("alerts", {}))
            rollouts = sdir / "rollouts.coa.jsonl"
            if di.rank == 0 and extra.get("rollouts_offset") is not None and rollouts.is_file():
                # the rollouts of the steps about to be redone were written after the checkpoint: exactly once
                with open(rollouts, "r+b") as f:
                    f.truncate(min(extra["rollouts_offset"], os.fstat(f.fileno()).st_size))
            if di.rank == 0 and extra.get("otc_state") is not None:
                env.import_otc_state(grade_run, extra["otc_state"])
        elif di.rank == 0 and scheme == "otc-grpo":  # a fresh stage starts with no running minimum
            env.import_otc_state(grade_run, {"version": 1, "min_tool_calls": {}})
        di.barrier()
        sim_steps = round(scfg["simulated_fraction"] * total)
        run.started(resumed_from, f"GRPO, {P} questions × G={G} per step, reward {scheme}, {sim_steps} of {total} "
                    f"steps with simulated observations, max_len {max_len}")
        if (note := room.line()) is not None:
            writer.emit("log", level="warning", message=f"{label}: {note}")

        def tool(queries: list[str]) -> list[str | None]:
            try:
                return list(env.search(queries, top_k=scfg["top_k"], dialect=dialect)["observations"])
            except Exception:  # noqa: BLE001 — a failed call is an empty observation, counted as a tool failure
                return [None] * len(queries)

        started = time.time()
        saved_at = resumed_from  # step of the newest checkpoint on disk
        P_local = P // di.world_size
        gen = torch.Generator(device=rt.device)
        while step < total and not run.cancelled:
            t0 = time.time()
            # seeded per (step, rank): a resumed run samples exactly what the uninterrupted one would have
            gen.manual_seed(zlib.crc32(f"{config['seed']}/{stage}/{step}/{di.rank}".encode()))
            qs = stream.take(step * P + di.rank * P_local, P_local)
            simulated = step < sim_steps
            prompts = [prompt_ids(tok, config, q.question) for q in qs for _ in range(G)]
            timings: dict[str, float] = {"generate": 0.0, "tools": 0.0}
            with run.gathered():  # FSDP2: full (bf16) parameters for the rollout, freed again before training
                trajs = rollout(policy, tok, prompts, t, None if simulated else tool, max_turns=scfg["max_turns"],
                                max_new_tokens=scfg["max_new_tokens"], max_obs_tokens=scfg["max_obs_tokens"],
                                max_len=max_len, device=rt.device, dtype=rt.autocast_dtype,
                                temperature=scfg["temperature"], generator=gen, timings=timings, io=io)
            release_cached_memory(rt.device)  # the rollout's KV caches, before the training forward
            owners = [q for q in qs for _ in range(G)]
            meta = [{"run": writer.run, "stage": label, "step": step + 1, "sample": i, "group": i // G}
                    for i in range(len(trajs))]
            # graded by the server (rewards and format rules live in TypeScript only); OTC-GRPO keys on the question
            to_grade = [{"id": f"{q.id}-{m['sample']}", "question": q.question, "golden_answers": golden(q),
                         "response": tok.decode(tr.ids, skip_special_tokens=False), "dialect": dialect}
                        for q, tr, m in zip(owners, trajs, meta)]
            tg = time.time()
            breakdowns = env.grade(to_grade, scheme=scheme, params=rparams, run=grade_run)
            timings["tools"] += time.time() - tg
            adv = group_advantages([float(b["total"]) for b in breakdowns], G, scfg["std_normalize"])
            samples = [Sample(tr.prompt_ids, tr.ids, tr.loss_mask, tr.logprobs, a) for tr, a in zip(trajs, adv)]

            tt = time.time()
            extras, grad_norm = policy_updates(model, ref, opt, params, samples, G, scfg, tok.pad_token_id,
                                               rt.device, rt.autocast_dtype, di)
            sched.step()  # the schedule counts RL steps, not optimiser updates
            step += 1
            train_s = time.time() - tt
            retok = [retok_mismatch(tr) for tr in trajs]
            drift = [retok_drift(tok, tr.ids) for tr in trajs]
            sums = step_sums(trajs, breakdowns, G, io, retok, drift)
            sums.update(extras)
            sums.update({"generate_s": timings["generate"], "tools_s": timings["tools"], "train_s": train_s})
            s = di.all_reduce_dict(sums)
            ws = di.world_size
            values = {
                **step_values(s), "loss": s["loss_sum"] / max(s["count"], 1.0), "kl": s["kl_sum"] / max(s["count"], 1.0),
                "entropy": s["entropy_sum"] / max(s["count"], 1.0), "clip_frac": s["clip_sum"] / max(s["count"], 1.0),
                "ratio_mean": s["ratio_sum"] / max(s["count"], 1.0), "grad_norm": grad_norm,
                "lr": sched.get_last_lr()[0], "simulated": float(simulated),
                "gen_tokens_per_s": s["gen_tokens"] / max(s["generate_s"] / ws, 1e-9),
                "train_tokens_per_s": s["train_tokens"] / max(s["train_s"] / ws, 1e-9),
                "generate_s": s["generate_s"] / ws, "tools_s": s["tools_s"] / ws, "train_s": s["train_s"] / ws,
                "step_s": time.time() - t0,
            }
            if has_dev and scfg["heldout_every"] and step % scfg["heldout_every"] == 0:
                with run.gathered():
                    if di.rank == 0:
                        hcfg = {**config, "eval": {**config["eval"], "limit": scfg["heldout_limit"]}}
                        hm, _ = agent_eval(policy, tok, source, hcfg, "dev", rt, env, run=writer.run, stage=label,
                                           io=io)
                        values["heldout_em"] = hm["em"]
                        monitor.observe_heldout(float(hm["em"] or 0.0))
            if step % scfg["log_every"] == 0 or step == total:
                writer.emit("metrics", stage=label, step=step, values=values)
                elapsed = time.time() - started
                done = step - (resumed_from or 0)
                writer.emit("progress", stage=label, step=step, total=total, elapsed_s=elapsed,
                            eta_s=elapsed / done * (total - step) if done else None)
            for a in monitor.update(step, values):
                writer.emit("alert", stage=label, step=step, kind=a.kind, severity=a.severity, message=a.message)
            if not all(map(lambda v: v is None or v == v, values.values())):
                writer.emit("alert", stage=label, step=step, kind="nan_loss", severity="error",
                            message=f"a metric is NaN at step {step}")
            if di.rank == 0 and scfg["sample_every"] and step % scfg["sample_every"] == 0:
                full = [_record(tok, q, tr, a, b, m, dialect)
                        for q, tr, a, b, m in zip(owners, trajs, adv, breakdowns, meta)]
                sdir.mkdir(parents=True, exist_ok=True)
                with open(sdir / "rollouts.coa.jsonl", "a", encoding="utf-8") as f:
                    for r in full:
                        f.write(json.dumps(r, ensure_ascii=False) + "\n")
                writer.emit("sample", stage=label, step=step, record=full[0])
            if scfg["checkpoint_every"] and step % scfg["checkpoint_every"] == 0 and step < total:
                saved_at = step
                _checkpoint(run, step, env, grade_run, scheme, monitor)

        if run.cancelled:
            if saved_at != step:  # a cancel right after a periodic checkpoint need not save the same step again
                _checkpoint(run, step, env, grade_run, scheme, monitor, prune=False)
            writer.emit("stage_finished", stage=label, step=step, status="cancelled", checkpoint=None)
            return 130
        out = run.save_final(step)
        with run.gathered():
            if di.rank == 0 and has_dev:
                policy.eval()
                metrics, _ = agent_eval(policy, tok, source, config, "dev", rt, env, run=writer.run, stage=label,
                                        io=io)
                writer.emit("eval", stage=label, step=step, split="dev", metrics=metrics)
        di.barrier()
        writer.emit("stage_finished", stage=label, step=step, status="ok", checkpoint=str(out))
        return 0
    finally:
        if own_env:
            env.stop()


def _checkpoint(run: Any, step: int, env: Any, grade_run: str, scheme: str, monitor: AlertMonitor,
                prune: bool = True) -> None:
    """Every rank: the RL state (OTC running minima from the env server, alert baselines) rides in `extra`."""
    extra = None
    if run.di.rank == 0:
        rollouts = run.ckpt_dir.parent / "rollouts.coa.jsonl"
        extra = {"otc_state": env.export_otc_state(grade_run) if scheme == "otc-grpo" else None,
                 "alerts": monitor.state_dict(),
                 "rollouts_offset": rollouts.stat().st_size if rollouts.is_file() else 0}
    if (path := run.save_checkpoint(step, step, extra, prune)) is not None:
        run.writer.emit("checkpoint", stage=run.label, step=step, path=str(path))


def release_cached_memory(device: torch.device) -> None:
    """Hand the allocator's cached blocks (the finished rollout's KV caches) back, so the training step's
    activations and the next rollout's cache are not fragmented around them. A no-op on CPU."""
    if device.type == "cuda":
        torch.cuda.empty_cache()
