"""`python -m coa_trainer pipeline`: one pipeline, or one per seed (--seeds N), started as every command that writes a
run directory is (base/runstart.py: the run lock, the signal handlers put back, one error event for whatever stops
it)."""

from __future__ import annotations

from ..base.config import ConfigError
from ..base.lifecycle import on_stop_signals
from ..base.options import PipelineOptions
from ..base.runstart import RunStart, run_in_directory
from .pipeline import Cancelled, Pipeline, parse_steps
from .seeds import run_seeds


def pipeline_command(opts: PipelineOptions) -> int:
    def body(start: RunStart) -> int:
        steps = parse_steps(opts.stages)
        if opts.seeds < 1:
            raise ConfigError(f"--seeds {opts.seeds}: give at least 1")
        if opts.seeds > 1:  # a whole pipeline per seed, then the mean ± sd table (pipeline/seeds.py)
            return run_seeds(opts, start.config, start.writer, steps)
        pipe = Pipeline(opts, start.config, start.writer, start.lock)
        on_stop_signals(pipe.on_signal)
        return pipe.run(steps)

    return run_in_directory(
        opts.run_dir,
        "pipeline",
        opts.config,
        opts.overrides,
        body,
        lock_as="pipeline",
        cancel_on=(Cancelled,),
        on_cancel=lambda _writer: 130,
    )
