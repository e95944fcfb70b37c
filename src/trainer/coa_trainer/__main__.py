"""`python -m coa_trainer …` entry point."""

# First of all, before anything imports torch: OpenMP's threads sleep instead of spinning (base/openmp.py).
from .base.openmp import passive_wait

passive_wait()

# Then, before any heavy import: SIGTERM cancels cleanly from here on, and a child of a pipeline dies with it.
from .base.lifecycle import (  # noqa: E402
    StartupCancelled,
    cancel_during_startup,
    die_with_parent,
    forgive_std_streams,
    run_and_exit,
)

cancel_during_startup()
forgive_std_streams()  # `> /dev/full`, a closed pipe: the run directory's events.jsonl is the record
cancelled = False
try:
    die_with_parent()
    from . import cli  # noqa: F401  (argparse only: the commands import what they need)
except StartupCancelled:  # SIGTERM while importing the command line: still a cancelled stage (cli.main says so)
    cancelled = True

if __name__ == "__main__":
    from .cli import main

    run_and_exit(lambda: main(cancelled=cancelled))
