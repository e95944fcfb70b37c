"""`pipeline --seeds N`: the whole pipeline once per seed S … S+N-1 (S: the run config's seed), one after another,
each in <run-dir>/seed-<s>/ with its own run config (pipeline/seed-<s>.run.json: only `seed` differs), its own
environment server, knowledge base (benchmark.seed null follows the run seed), question split and models — the
seeds share nothing but code. Then results.md / results.json in <run-dir> as mean ± sd per row, the per-seed rows
and seed-level verdicts (evaluation/seed_results.py).

Each seed is `python -m coa_trainer pipeline` in a child process (its own session); its events go to its own
seed-<s>/events.jsonl and are echoed on the shared stdout. This process writes `seeds` events to <run-dir>/events.jsonl
(run_started, a progress per seed, stage_finished). SIGTERM/SIGINT go to the running seed's pipeline as SIGTERM (its
stage checkpoints), then this exits 130; `--resume` skips seeds whose results are written for the same split and
resumes the interrupted one."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

from ..base.config import ConfigError, config_dict
from ..base.events import EventWriter
from ..base.lifecycle import on_stop_signals
from ..base.options import PipelineOptions
from ..base.runstart import run_started
from ..pipeline.pipeline import Cancelled, PipelineError, RunOutcome, child_pythonpath, run_child
from ..contracts.run_config import RunConfig
from ..contracts.events import LogEvent, ProgressEvent


def seed_config(config: RunConfig, seed: int, run_dir: Path) -> Path:
    """The run config of one seed: the loaded config (data paths already absolute) with `seed` replaced."""
    logging, wandb = config.logging, config.logging.wandb
    if wandb is not None:
        # The seeds' stages in one W&B group, each seed's runs named apart (a seed's run id alone is seed-N)
        here = run_dir.resolve().name
        wandb = wandb.model_copy(update={"group": wandb.group or here, "name": f"{wandb.name or here}-seed-{seed}"})
        logging = logging.model_copy(update={"wandb": wandb})
    derived = config.model_copy(update={"seed": seed, "logging": logging})
    path = run_dir / "pipeline" / f"seed-{seed}.run.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config_dict(derived), indent=2) + "\n", encoding="utf-8")
    return path


def seed_dir(run_dir: Path, seed: int) -> Path:
    return run_dir / f"seed-{seed}"


def seed_done(run_dir: Path, seed: int, split: str) -> bool:
    path = seed_dir(run_dir, seed) / "results.json"
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("split") == split
    except (OSError, ValueError):
        return False


class SeedRunner:
    def __init__(self, opts: PipelineOptions, config: RunConfig, writer: EventWriter):
        self.opts, self.config, self.writer = opts, config, writer
        self.run_dir = opts.run_dir
        self.split = opts.split
        self.child: subprocess.Popen | None = None
        self.cancelled = False

    def on_signal(self, signum: int, _frame: FrameType | None) -> None:
        self.cancelled = True
        child = self.child
        if child is not None and child.poll() is None:
            child.send_signal(signal.SIGTERM)  # that seed's pipeline stops its stage (checkpoint) and its server
        else:
            raise Cancelled(signal.Signals(signum).name)

    def argv(self, seed: int) -> list[str]:
        a = self.opts
        argv = [
            sys.executable,
            "-m",
            "coa_trainer",
            "pipeline",
            "--config",
            str(seed_config(self.config, seed, self.run_dir)),
            "--run-dir",
            str(seed_dir(self.run_dir, seed)),
            "--split",
            self.split,
        ]
        if a.stages:
            argv += ["--stages", a.stages]
        if a.resume:
            argv.append("--resume")
        if a.nproc_per_node > 1:
            argv += ["--nproc-per-node", str(a.nproc_per_node)]
        if a.env.url:
            argv.append(f"--env-url={a.env.url}")  # the token: COA_ENV_TOKEN, inherited (never on a command line)
        return argv

    def run_seed(self, seed: int) -> None:
        from ..base.lifecycle import child_env

        # COA_PARENT_PID: a seed's pipeline dies with this runner, as a stage dies with its pipeline (base/lifecycle.py)
        code = run_child(self, self.argv(seed), child_env({"PYTHONPATH": child_pythonpath()}))
        if code != 0:
            raise PipelineError(
                f"seed {seed} failed (exit {code}); see {seed_dir(self.run_dir, seed)}/events.jsonl", "stage_failed"
            )

    def run(self, seeds: list[int], steps: list[str]) -> int:
        from ..evaluation.seed_results import load_seed_results, seed_verdicts, write_seed_results

        w = self.writer
        started = time.time()
        run_started(w, "seeds", self.config, len(seeds))
        w.emit(
            LogEvent(
                level="info",
                message=f"seeds: {len(seeds)} whole pipelines (seeds {seeds[0]}…{seeds[-1]}), one "
                f"after another, so about {len(seeds)}× the time of one (the demo: 4–13 min each on 2 shared cores)",
            )
        )
        outcome = RunOutcome(w, "seeds")

        def every_seed() -> None:
            for seed in seeds:
                if self.cancelled:
                    raise Cancelled("SIGTERM")
                t0 = time.time()
                if self.opts.resume and "results" in steps and seed_done(self.run_dir, seed, self.split):
                    w.emit(LogEvent(level="info", message=f"seeds: seed {seed} already has its results, skipped"))
                else:
                    w.emit(
                        LogEvent(
                            level="info",
                            message=f"seeds: seed {seed} ({outcome.done + 1}/{len(seeds)}) → "
                            f"{seed_dir(self.run_dir, seed)}",
                        )
                    )
                    self.run_seed(seed)
                    w.emit(LogEvent(level="info", message=f"seeds: seed {seed} took {time.time() - t0:.0f} s"))
                outcome.done += 1
                elapsed = time.time() - started
                w.emit(
                    ProgressEvent(
                        stage="seeds",
                        step=outcome.done,
                        total=len(seeds),
                        elapsed_s=elapsed,
                        eta_s=elapsed / outcome.done * (len(seeds) - outcome.done),
                    )
                )
            if "results" in steps:
                per_seed = [load_seed_results(seed_dir(self.run_dir, s), s) for s in seeds]
                json_path, md_path = write_seed_results(self.run_dir, per_seed, self.split, self.config.eval.limit)
                verdicts = seed_verdicts(per_seed)  # what results.json says
                w.emit(
                    LogEvent(
                        level="info",
                        message=f"seeds: results over {len(seeds)} seeds in {md_path} and "
                        f"{json_path}\n" + "\n".join(verdicts),
                    )
                )

        return outcome.run(every_seed)


def run_seeds(opts: PipelineOptions, config: RunConfig, writer: EventWriter, steps: list[str]) -> int:
    """Called by pipeline_command for --seeds N > 1 (it restores the signal handlers set here)."""
    n = opts.seeds
    if config.data is None and opts.env.url:
        raise ConfigError(
            "--seeds with --env-url: every seed of the embedded benchmark has its own knowledge base "
            "and corpus, so each seed's pipeline starts its own environment server (leave --env-url out)"
        )
    seeds = [config.seed + i for i in range(n)]
    runner = SeedRunner(opts, config, writer)
    on_stop_signals(runner.on_signal)
    return runner.run(seeds, steps)
