"""`python -m coa_trainer pipeline`: one pipeline, or one per seed (--seeds N), with the run lock, the signal handlers
and one error event for whatever stops it."""

from __future__ import annotations

import signal
import sys

from ..base.config import ConfigError, load_config
from ..base.events import EventWriter
from ..base.lifecycle import STOP_SIGNALS, RunLock, RunLockBusy, on_stop_signals
from ..base.names import name_error
from ..base.options import PipelineOptions
from ..base.rundir import RunDirError, check_run_dir
from .pipeline import Cancelled, Pipeline, parse_steps
from .seeds import run_seeds
from ..base.errors import report_failure


def pipeline_command(opts: PipelineOptions) -> int:
    run_dir = opts.run_dir
    if err := name_error(run_dir.resolve().name, "run id (the run directory's name)"):
        print(f"coa_trainer: {err}", file=sys.stderr)
        return 2
    try:
        lock = RunLock.acquire(run_dir, "pipeline")
        writer = EventWriter(run_dir)
    except RunLockBusy as e:
        print(f"coa_trainer: {e}", file=sys.stderr)  # not an event: events.jsonl belongs to the trainer holding it
        return 2
    except RunDirError as e:  # the lock or events.jsonl leads out of the run (base/rundir.py): nowhere safe to write
        print(f"coa_trainer: {e}", file=sys.stderr)
        return e.exit_status
    except OSError as e:
        print(f'{{"type": "error", "message": "cannot create run directory {run_dir}: {e.strerror}"}}')
        return 2
    pipe = None
    old = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    try:
        check_run_dir(run_dir)
        config = load_config(opts.config, list(opts.overrides))
        writer.attach_logging(config)
        steps = parse_steps(opts.stages)
        seeds = opts.seeds
        if seeds is not None and seeds < 1:
            raise ConfigError(f"--seeds {seeds}: give at least 1")
        if seeds and seeds > 1:  # a whole pipeline per seed, then the mean ± sd table (pipeline/seeds.py)
            return run_seeds(opts, config, writer, steps)
        pipe = Pipeline(opts, config, writer, lock)
        on_stop_signals(pipe.on_signal)
        return pipe.run(steps)
    except Cancelled:
        return 130
    except Exception as e:  # noqa: BLE001 — one error event and the code's exit status, never a bare traceback
        return report_failure(writer, "pipeline", e)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        writer.close()
        lock.release()
