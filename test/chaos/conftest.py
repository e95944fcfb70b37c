"""The chaos suite's summary line: `chaos: N kills survived, …` (read by people; scripts/test.mjs counts junit)."""

import os

from chaos_stats import STATS


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    seed = os.environ.get("COA_CHAOS_SEED", "18")
    terminalreporter.write_line(
        f"chaos: {STATS['kills_survived']} of {STATS['kills']} SIGKILLs survived (seed {seed}), {STATS['resumes']} "
        f"resumes, {STATS['runs_compared']} final models equal to the uninterrupted run, "
        f"{STATS['left_processes']} processes left, {STATS['duplicates']} duplicate step events")
