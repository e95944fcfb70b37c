"""Chaos drills: SIGKILL the pipeline, an SFT stage and an RL stage at seeded random points — while they
import, load, train, checkpoint or evaluate — then resume until done. After every kill no process of the run may be
left (pid scan: any process whose command line names the run directory: the pipeline, its stage, an environment
server on the run's corpus); every resume must succeed; the final models must equal an uninterrupted run's byte for
byte; events.jsonl must hold each (type, stage, step) step event once. Tiny configs (src/trainer/tests/conftest.py).

COA_CHAOS_SEED picks the kill points (default 18). Counts go to the summary line (conftest.py)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from chaos_stats import STATS

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "src" / "trainer"))
_spec = importlib.util.spec_from_file_location("trainer_tests_conftest", REPO / "src/trainer/tests/conftest.py")
trainer_tests = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(trainer_tests)  # the tiny configs and the schema set-up of the trainer's own tests

from coa_trainer.base.events import STEP_EVENTS, validate_event  # noqa: E402 (after the path set-up above)

UNAVAILABLE = trainer_tests.env_server_available()
if UNAVAILABLE is not None and os.environ.get("CI"):
    raise RuntimeError(f"environment server unavailable under CI: {UNAVAILABLE}")
pytestmark = pytest.mark.skipif(UNAVAILABLE is not None, reason=f"environment server: {UNAVAILABLE}")

SEED = int(os.environ.get("COA_CHAOS_SEED", "18"))
PY = sys.executable
ENV = {**os.environ, "PYTHONPATH": str(REPO / "src" / "trainer"), "OMP_NUM_THREADS": "1"}
# RL must move the weights, or "the same RL model after a resume" proves nothing (with 12 + 8 steps of pretraining and
# SFT every reward was 0 and RL-1's result was SFT-2's, byte for byte): enough training for some right answers, groups
# of 4 so rewards differ inside a group. The reference run asserts RL changed the model.
RL = {
    "steps": 4,
    "prompts_per_step": 2,
    "group_size": 4,
    "heldout_every": 0,
    "sample_every": 1,
    "max_new_tokens": 16,
    "max_turns": 2,
    "log_every": 1,
    "checkpoint_every": 1,
}
CONFIG = trainer_tests.merge(
    trainer_tests.TINY,
    {
        "stages": {
            "pretrain": {"steps": 80, "lr": 0.01, "checkpoint_every": 10},
            "sft2": {"steps": 60, "lr": 0.01, "checkpoint_every": 10},
            "rl1": RL,
        },
        "eval": {"limit": 4},
    },
)
STAGES = ("pretrain", "sft2", "rl1")


# ---------------------------------------------------------------- processes


def run_processes(run_dir: Path) -> list[tuple[int, str]]:
    """Live processes (zombies excluded) whose command line names `run_dir`."""
    needle = str(run_dir).encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read()
            with open(f"/proc/{entry}/stat", encoding="utf-8") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in cmd and state != "Z":
            found.append((int(entry), cmd.replace(b"\0", b" ").decode(errors="replace")[:200]))
    return found


def assert_nothing_left(run_dir: Path, within_s: float = 120) -> None:
    """Every process of the run ends by itself (a killed pipeline's stage checkpoints first): nothing is killed
    for it here except as clean-up after a failure."""
    deadline = time.time() + within_s
    while (left := run_processes(run_dir)) and time.time() < deadline:
        time.sleep(0.2)
    if left:
        STATS["left_processes"] += len(left)
        for pid, _ in left:
            os.kill(pid, signal.SIGKILL)
        pytest.fail(f"processes of {run_dir.name} still alive {within_s:.0f}s after the kill: {left}")


def drive(argv: list[str], run_dir: Path, kill: tuple[int, float] | None) -> int | None:
    """Run the trainer; with kill = (lines, delay): SIGKILL it `delay` seconds after its `lines`-th stdout line (0:
    after `delay` seconds from the start). Returns its exit code, or None when it was killed."""
    log = open(run_dir.parent / f"{run_dir.name}.stderr.log", "a", encoding="utf-8")  # noqa: SIM115 — closed below
    proc = subprocess.Popen(
        [PY, "-m", "coa_trainer", *argv], cwd=REPO, env=ENV, stdout=subprocess.PIPE, stderr=log, text=True
    )
    assert proc.stdout is not None
    try:
        if kill is None:
            proc.stdout.read()
            return proc.wait(timeout=600)
        lines, delay = kill
        seen = 0
        if lines > 0:
            for _ in proc.stdout:
                seen += 1
                if seen >= lines:
                    break
        time.sleep(delay)
        if proc.poll() is not None:  # it finished before the kill point
            proc.stdout.read()
            return proc.wait()
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        proc.stdout.read()
        STATS["kills"] += 1
        return None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()


def kill_point(rnd: random.Random, max_lines: int) -> tuple[int, float]:
    """A third of the kills land while starting (imports, data, model load, the server coming up), the rest after a
    random number of events (training, checkpointing, evaluating), a random fraction of a step later."""
    if rnd.random() < 1 / 3:
        return 0, rnd.uniform(0.2, 3.0)
    return rnd.randint(1, max_lines), rnd.uniform(0.0, 0.5)


def drill(argv: list[str], run_dir: Path, rnd: random.Random, kills: int, max_lines: int) -> int:
    """`kills` seeded SIGKILLs (each followed by the no-orphan check), resuming each time, then a last resume to
    the end. Returns the number of kills that landed."""
    landed = 0
    for i in range(kills):
        code = drive(argv + (["--resume"] if i else []), run_dir, kill_point(rnd, max_lines))
        assert_nothing_left(run_dir)
        if code is not None:  # finished before the kill point: the drill is over
            assert code == 0, (run_dir / "events.jsonl").read_text()[-3000:]
            return landed
        landed += 1
        STATS["kills_survived"] += 1  # counted once the resume below succeeds; undone on failure
        STATS["resumes"] += 1
    code = drive(argv + ["--resume"], run_dir, None)
    assert_nothing_left(run_dir)
    if code != 0:
        STATS["kills_survived"] -= landed
        pytest.fail(f"resume failed with {code}: {(run_dir.parent / f'{run_dir.name}.stderr.log').read_text()[-3000:]}")
    return landed


# ---------------------------------------------------------------- checks


def model_hash(run_dir: Path, stage: str) -> str:
    return hashlib.sha256((run_dir / "stages" / stage / "final" / "model.safetensors").read_bytes()).hexdigest()


def check_events(run_dir: Path) -> None:
    events = [
        json.loads(line) for line in (run_dir / "events.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    for e in events:
        validate_event(e)
    keys = Counter(
        (e["type"], e["stage"], e["step"], e.get("split"), e.get("kind")) for e in events if e["type"] in STEP_EVENTS
    )
    dup = {k: n for k, n in keys.items() if n > 1}
    STATS["duplicates"] += sum(n - 1 for n in dup.values())
    assert not dup, f"step events written more than once: {sorted(dup)[:10]}"


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> tuple[Path, Path]:
    """The uninterrupted pipeline: pretrain → sft2 → rl1 (its own environment server)."""
    root = tmp_path_factory.mktemp("chaos")
    cfg = root / "run.json"
    cfg.write_text(json.dumps(CONFIG))
    ref = root / "ref"
    code = drive(["pipeline", "--config", str(cfg), "--run-dir", str(ref), "--stages", ",".join(STAGES)], ref, None)
    assert code == 0, (root / "ref.stderr.log").read_text()[-3000:]
    assert_nothing_left(ref, within_s=30)
    check_events(ref)
    assert model_hash(ref, "rl1") != model_hash(ref, "sft2"), "RL-1 left SFT-2's weights as they were"
    return cfg, ref


def test_pipeline_sigkilled_at_random_points_resumes_to_the_same_models(reference):
    cfg, ref = reference
    run = ref.parent / "pipe"
    rnd = random.Random(f"{SEED}/pipeline")
    drill(
        ["pipeline", "--config", str(cfg), "--run-dir", str(run), "--stages", ",".join(STAGES)],
        run,
        rnd,
        kills=3,
        max_lines=320,
    )
    for stage in STAGES:
        assert model_hash(run, stage) == model_hash(ref, stage), stage
        STATS["runs_compared"] += 1
    check_events(run)


def test_sft_and_rl_stages_sigkilled_at_random_points_resume_to_the_same_models(reference):
    cfg, ref = reference
    run = ref.parent / "stages"
    # both start from the same pretrain (a copy: a link leading out of a run directory is refused)
    shutil.copytree(ref / "stages" / "pretrain" / "final", run / "stages" / "pretrain" / "final")
    rnd = random.Random(f"{SEED}/stages")
    for stage, max_lines in (("sft2", 90), ("rl1", 12)):  # rl1 starts its own server: it must die with the stage
        drill(
            ["train", "--stage", stage, "--config", str(cfg), "--run-dir", str(run)],
            run,
            rnd,
            kills=2,
            max_lines=max_lines,
        )
        assert model_hash(run, stage) == model_hash(ref, stage), stage
        STATS["runs_compared"] += 1
    check_events(run)
