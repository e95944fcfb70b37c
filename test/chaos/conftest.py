"""The chaos suite's summary line: `chaos: N kills survived, …` (read by people; scripts/test.mjs counts junit)."""

import os
import sys
from pathlib import Path

from chaos_stats import STATS

# Under CI a skipped test fails unless test/skip-allowlist.json lists it (test/skip_policy.py): the chaos drills skip
# when the environment server bundle is missing, which must not pass as a skip.
sys.path.append(str(Path(__file__).resolve().parents[1]))
from skip_policy import pytest_runtest_makereport  # noqa: E402,F401


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    seed = os.environ.get("COA_CHAOS_SEED", "18")
    terminalreporter.write_line(
        f"chaos: {STATS['kills_survived']} of {STATS['kills']} SIGKILLs survived (seed {seed}), {STATS['resumes']} "
        f"resumes, {STATS['runs_compared']} final models equal to the uninterrupted run, "
        f"{STATS['left_processes']} processes left, {STATS['duplicates']} duplicate step events"
    )
