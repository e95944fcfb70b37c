"""`python -m coa_trainer` chooses OpenMP's wait policy before torch loads (libgomp reads it only then): PASSIVE unless
the user set one, so a stage beside other work does not spin. Figures: bench/trainer/wait_policy.py."""

import os
import subprocess
import sys

from conftest import REPO

# What the entry point has done once its top level ran (the command line itself is not run: no __name__ guard here).
PROBE = "import os, sys, coa_trainer.__main__; print(os.environ.get('OMP_WAIT_POLICY'), 'torch' in sys.modules)"


def probe(policy: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    env["PYTHONPATH"] = str(REPO / "src" / "trainer")
    if policy is not None:
        env["OMP_WAIT_POLICY"] = policy
    return subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()


def test_passive_before_torch_loads():
    assert probe(None) == "PASSIVE False"


def test_a_users_own_policy_is_kept():
    assert probe("ACTIVE") == "ACTIVE False"
