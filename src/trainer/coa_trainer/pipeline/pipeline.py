"""`python -m coa_trainer pipeline --config C --run-dir runs/<id> [--stages …] [--env-url U]` (token: COA_ENV_TOKEN).

The whole AutoCoA recipe into one run directory: pretrain → sft1 → sft2 → sft3 → rl1 → rl2, a second RL-2 with
OTC-GRPO from the same RL-1 result (label rl2-otc, into stages/rl2-otc/), then the results table on the test split
(evaluation/results.py). One environment server serves every stage and the evaluation: started here (127.0.0.1, per-run token)
unless --env-url is given, and stopped on success, error and SIGTERM.

Each stage is `python -m coa_trainer train --stage …` in a child process (its own session, so a terminal's Ctrl-C
reaches only this process): its events go to runs/<id>/events.jsonl and are echoed on the shared stdout. This
process adds `pipeline` events around them (run_started, progress per stage, stage_finished) and `eval` events per
results row. SIGTERM/SIGINT: forwarded to the running stage as SIGTERM (it checkpoints and exits), then the server is
stopped and the pipeline exits 130; `--resume` later skips finished stages and resumes the interrupted one.

Nothing outlives a SIGKILLed pipeline (base/lifecycle.py): the stage gets SIGTERM from the kernel (parent-death signal)
and checkpoints, the environment server stops itself (`--parent-pid`), and the run directory stays locked until the
stage has exited, so a `--resume` cannot start a second trainer beside it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any, Callable, Literal, Protocol

from ..base import quiet  # noqa: F401
from ..base.config import ConfigError, config_dict
from ..base.events import EventWriter
from ..base.lifecycle import RunLock
from ..base.options import PipelineOptions
from ..base.runstart import run_started
from ..contracts.schemas import stage_rows
from ..contracts.schemas import rl_stages
from ..contracts.run_config import RunConfig
from ..base.errors import CoaError
from ..base.errors import report_failure
from ..contracts.events import LogEvent, ProgressEvent, StageFinishedEvent

STEPS = (*(s.id for s in stage_rows()), "results")  # src/core/stages.ts, then the results table
RL_STEPS = rl_stages()
ENV_STEPS = (*RL_STEPS, "collect")  # steps that search or grade through the environment server
PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])


class Cancelled(BaseException):
    """A stop signal in the pipeline itself (between stages, the results table): a BaseException, so that no
    `except Exception` on its way (a tool call's, an evaluation's) takes it for a failure to carry on from."""


class PipelineError(CoaError):
    """The pipeline cannot go on (a stage failed, a config it derives cannot be written)."""


def child_pythonpath() -> str:
    """PYTHONPATH for a child trainer: this package first, then the caller's own."""
    return os.pathsep.join([PACKAGE_PARENT, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])


def run_child(owner: ChildOwner, argv: list[str], env: dict[str, str], pass_fds: tuple[int, ...] = ()) -> int:
    """Runs one child trainer (a stage, a seed's pipeline) in its own session to its exit status. While it runs it is
    owner.child, where owner's signal handler forwards a stop; a stop that came meanwhile raises Cancelled."""
    sys.stdout.flush()
    owner.child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, env=env, start_new_session=True, pass_fds=pass_fds)
    try:
        code = owner.child.wait()
    finally:
        owner.child = None
    if owner.cancelled:
        raise Cancelled("SIGTERM")
    return code


class ChildOwner(Protocol):
    """What runs child trainers one at a time (Pipeline, seeds.SeedRunner): the child now running, and whether a stop
    came meanwhile."""

    child: subprocess.Popen | None
    cancelled: bool


class RunOutcome:
    """How a whole-run command (the pipeline, several seeds) ends: one stage_finished event saying how many of its
    steps were done, and the exit status — 0, 130 cancelled, a PipelineError's own; any other exception is re-raised
    after the event, for pipeline_command to report."""

    def __init__(self, writer: EventWriter, stage: str) -> None:
        self.writer, self.stage, self.done = writer, stage, 0

    def run(self, body: Callable[[], None]) -> int:
        try:
            body()
        except Cancelled:
            return self.finish("cancelled", 130)
        except PipelineError as e:
            return self.finish("failed", report_failure(self.writer, self.stage, e))
        except Exception:
            self.finish("failed", 1)
            raise
        return self.finish("ok", 0)

    def finish(self, status: Literal["ok", "cancelled", "failed"], code: int) -> int:
        self.writer.emit(StageFinishedEvent(stage=self.stage, step=self.done, status=status, checkpoint=None))
        return code


def parse_steps(text: str | None) -> list[str]:
    if not text:  # collect only when asked: it needs a teacher, and the embedded recipe has the oracle
        return [s for s in STEPS if s != "collect"]
    wanted = [s.strip() for s in text.split(",") if s.strip()]
    unknown = [s for s in wanted if s not in STEPS]
    if unknown:
        raise ConfigError(f"--stages: unknown {', '.join(unknown)} (known: {', '.join(STEPS)})")
    return [s for s in STEPS if s in wanted]  # always in pipeline order


def otc_config(config: RunConfig, run_dir: Path) -> Path:
    """The run config of the OTC-GRPO RL-2: the same, with the reward scheme switched and RL-2's own start (RL-1's
    result in the embedded recipe; SFT-3's when a user's pipeline skips RL-1)."""
    from ..stages.setup import resolve_init

    rl2 = config.stages.rl2
    otc = rl2.model_copy(
        update={
            "reward": rl2.reward.model_copy(update={"scheme": "otc-grpo"}),
            "init_from": str(resolve_init(config, run_dir, "rl2", None, False)),
        }
    )
    derived = config.model_copy(update={"stages": config.stages.model_copy(update={"rl2": otc})})
    path = run_dir / "pipeline" / "rl2-otc.run.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config_dict(derived), indent=2) + "\n", encoding="utf-8")
    return path


class Pipeline:
    def __init__(self, opts: PipelineOptions, config: RunConfig, writer: EventWriter, lock: RunLock | None = None):
        self.opts, self.config, self.writer, self.lock = opts, config, writer, lock
        self.run_dir = opts.run_dir
        self.child: subprocess.Popen | None = None
        self.cancelled = False
        self.deferred = False  # True while a signal must not interrupt (see run)
        self.env: Any = None

    # ------------------------------------------------------------ signals
    def on_signal(self, signum: int, _frame: FrameType | None) -> None:
        self.cancelled = True
        child = self.child
        if child is not None and child.poll() is None:
            child.send_signal(signal.SIGTERM)  # the stage checkpoints and exits; run() sees its exit code
        elif not self.deferred:
            raise Cancelled(signal.Signals(signum).name)

    # ------------------------------------------------------------ stages
    def finished(self, label: str) -> bool:
        from ..base.runlayout import finished_step

        if label == "collect":  # a collection is data, not a model: its marker is stages/collect/collect.json
            from ..stages.collect import finished

            return finished(self.run_dir)
        return finished_step(self.run_dir, label) is not None  # the stage's own rule (train --resume says so too)

    def stage_argv(self, step: str) -> list[str]:
        stage = "rl2" if step == "rl2-otc" else step
        config_path = otc_config(self.config, self.run_dir) if step == "rl2-otc" else self.opts.config
        launcher = [sys.executable]
        nproc = self.opts.nproc_per_node
        if nproc > 1:  # DDP on this machine; multi-node: run the stages with torchrun yourself
            # torchrun's launcher runs through lifecycle's entry so that it too dies with the pipeline
            launcher += [
                "-m",
                "coa_trainer.base.lifecycle",
                "torch.distributed.run",
                "--standalone",
                f"--nproc_per_node={nproc}",
            ]
        argv = [
            *launcher,
            "-m",
            "coa_trainer",
            "train",
            "--stage",
            stage,
            "--config",
            str(config_path),
            "--run-dir",
            str(self.run_dir),
        ]
        if step == "collect":  # one process: sampling is the teacher's (a model directory or an endpoint)
            argv = [
                sys.executable,
                "-m",
                "coa_trainer",
                "collect",
                "--config",
                str(config_path),
                "--run-dir",
                str(self.run_dir),
            ]
        if step == "rl2-otc":
            argv += ["--label", "rl2-otc"]
        else:  # rl2-otc's derived config already holds them (and its reward scheme must stay otc-grpo)
            argv += list(self.opts.overrides)
        if step in ENV_STEPS and self.env is not None:
            argv.append(f"--env-url={self.env.url}")  # its token goes in COA_ENV_TOKEN (run_stage), never on argv
        if self.opts.resume:
            argv.append("--resume")
        return argv

    def run_stage(self, step: str) -> None:
        from ..base.lifecycle import child_env

        # the stage dies with us (COA_PARENT_PID) and runs under our run-directory lock (its descriptor inherited)
        # the server's token in the environment: a command line is visible to every local user (ps)
        token = {"COA_ENV_TOKEN": self.env.token} if step in ENV_STEPS and self.env is not None else {}
        env = child_env({"PYTHONPATH": child_pythonpath(), **(self.lock.child_env() if self.lock else {}), **token})
        code = run_child(self, self.stage_argv(step), env, pass_fds=(self.lock.fd,) if self.lock else ())
        if code != 0:
            raise PipelineError(f"stage {step} failed (exit {code}); its error event above says why", "stage_failed")

    def start_env(self) -> None:
        from ..data.benchmark import ensure_benchmark_files
        from ..env.session import open_env
        from ..base.runlayout import data_dir

        # a server of our own needs the corpus, which is part of the benchmark files: write them now (the pretrain
        # stage would otherwise)
        if not self.opts.env.url and self.config.data is None:
            ensure_benchmark_files(self.config, data_dir(self.config, self.run_dir))
        self.env = open_env(self.opts.env, self.config, self.run_dir, check=True)
        if self.opts.env.url:
            return
        self.writer.emit(LogEvent(level="info", message=f"pipeline: environment server at {self.env.url}"))

    def results(self) -> None:
        from ..evaluation.results import (
            compute_rows,
            detail_table,
            missing_split,
            optimal_tc,
            render_table,
            write_results,
        )

        split = self.opts.split
        from ..stages.collect import comparison_lines

        rows, details = compute_rows(self.run_dir, self.config, self.env, self.writer, split)
        json_path, md_path = write_results(
            self.run_dir,
            rows,
            split,
            self.config.eval.limit,
            [f"- **No questions**: {why}." for why in [missing_split(self.config, split)] if why]
            + detail_table(details)
            + comparison_lines(self.run_dir, rows),
            optimal_tc(details),
        )
        self.writer.emit(
            LogEvent(level="info", message=f"pipeline: results in {md_path} and {json_path}\n" + render_table(rows))
        )

    def run(self, steps: list[str]) -> int:
        w = self.writer
        started = time.time()
        if self.opts.resume:  # this run reports every step's progress again (finished ones as skipped): once each
            w.supersede("pipeline", 0, 0)
        run_started(w, "pipeline", self.config, len(steps))
        outcome = RunOutcome(w, "pipeline")

        def every_step() -> None:
            if any(s in ENV_STEPS or s == "results" for s in steps):
                # a signal while the server starts only sets the flag (checked below), so that self.env is set
                # and `finally` can stop the server (a mask would be inherited by the server process)
                self.deferred = True
                try:
                    self.start_env()
                finally:
                    self.deferred = False
            for step in steps:
                if self.cancelled:
                    raise Cancelled("SIGTERM")
                if step != "results" and self.opts.resume and self.finished(step):
                    w.emit(LogEvent(level="info", message=f"pipeline: {step} already finished, skipped"))
                else:
                    w.emit(LogEvent(level="info", message=f"pipeline: {step} ({outcome.done + 1}/{len(steps)})"))
                    self.run_stage(step) if step != "results" else self.results()
                outcome.done += 1
                elapsed = time.time() - started
                w.emit(
                    ProgressEvent(stage="pipeline", step=outcome.done, total=len(steps), elapsed_s=elapsed, eta_s=None)
                )

        try:
            return outcome.run(every_step)
        finally:
            if self.env is not None:
                self.env.stop()  # the server only when this pipeline started it (env/session.py)
