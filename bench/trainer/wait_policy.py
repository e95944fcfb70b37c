"""bench/trainer/wait_policy.py: an embedded pretrain beside one busy process, as `python -m coa_trainer` runs it
(OpenMP's wait policy PASSIVE, set by the trainer before torch loads) and as it ran before (torch loaded first, so
libgomp starts with its default policy: threads spin at each barrier before they sleep). Both in turn, side by side,
at 1 and 2 torch threads; the trainer's default thread count is the machine's cores.

    .venv/bin/python bench/trainer/wait_policy.py [--steps 40] [--reps 2] [--threads 1,2] [--write]

No OMP_WAIT_POLICY in the environment of either (a user's own is what the trainer keeps). The figure is the median of
the stage's `tokens_per_s` metrics after the first; "busy" is one `while True: pass` process for the whole pair.
--write replaces the `## bench/trainer (wait policy)` section of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable

# The trainer as it ran before it chose the wait policy: torch (and its OpenMP runtime) loaded before its first line.
TORCH_FIRST = (
    "import sys, runpy, torch; sys.argv = ['coa_trainer', *sys.argv[1:]]; "
    "runpy.run_module('coa_trainer', run_name='__main__', alter_sys=True)"
)
VARIANTS = {
    "before (torch first, libgomp default)": ["-c", TORCH_FIRST],
    "now (python -m coa_trainer)": ["-m", "coa_trainer"],
}


def run_stage(how: list[str], config: Path, run_dir: Path, limit_s: float) -> dict:
    """One stage; stopped at `limit_s` (a spinning run on a busy machine can take many minutes): then its figures are
    those of the steps it logged, and `stopped` says so."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    env["PYTHONPATH"] = str(ROOT / "src" / "trainer")
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [PYTHON, *how, "train", "--stage", "pretrain", "--config", str(config), "--run-dir", str(run_dir)],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        stopped = False
        if proc.wait(timeout=limit_s) != 0:
            raise RuntimeError(f"the trainer failed (exit {proc.returncode}): {run_dir}")
    except subprocess.TimeoutExpired:
        stopped = True
        proc.kill()
        proc.wait()
    wall = time.perf_counter() - t0
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines() if line.strip()]
    rates = [e["values"]["tokens_per_s"] for e in events if e["type"] == "metrics" and "tokens_per_s" in e["values"]]
    started = next(e["time"] for e in events if e["type"] == "run_started")
    finished = next((e["time"] for e in events if e["type"] == "stage_finished"), None)
    return {
        "tokens_per_s": statistics.median(rates[1:] or rates) if rates else 0.0,
        "stage_s": (finished or time.time()) - started,
        "wall_s": wall,
        "stopped": stopped,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--limit", type=float, default=300, help="seconds a stage may run before it is stopped")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    results: dict[tuple[int, str], list[dict]] = {}
    with tempfile.TemporaryDirectory(prefix="coa-wait-policy-") as tmp:
        for t in threads:
            config = Path(tmp) / f"threads-{t}.run.json"
            config.write_text(json.dumps({"threads": t, "stages": {"pretrain": {"steps": args.steps, "log_every": 5}}}))
            for rep in range(args.reps):
                busy = subprocess.Popen([PYTHON, "-c", "while True: pass"])
                try:
                    # Alternate the order so neither variant always runs first.
                    order = list(VARIANTS.items()) if rep % 2 == 0 else list(reversed(VARIANTS.items()))
                    for name, how in order:
                        r = run_stage(how, config, Path(tmp) / f"t{t}-{rep}-{len(results)}-{name[:3]}", args.limit)
                        results.setdefault((t, name), []).append(r)
                        print(
                            f"threads {t} · {name}: {r['tokens_per_s']:,.0f} tokens/s, stage {r['stage_s']:.1f} s"
                            f"{' (stopped at the limit)' if r['stopped'] else ''}",
                            flush=True,
                        )
                finally:
                    busy.kill()
                    busy.wait()
    load_after = Path("/proc/loadavg").read_text().split()[:3]
    rows = []
    for t in threads:
        base = statistics.median(r["tokens_per_s"] for r in results[(t, next(iter(VARIANTS)))])
        for name in VARIANTS:
            rs = results[(t, name)]
            rate = statistics.median(r["tokens_per_s"] for r in rs)
            stage = statistics.median(r["stage_s"] for r in rs)
            stopped = sum(r["stopped"] for r in rs)
            each = " / ".join(f"{r['tokens_per_s']:,.0f}" for r in rs)
            note = f" ({stopped} stopped at {args.limit:.0f} s)" if stopped else ""
            rows.append(
                f"| {t} | {name} | {each} | {rate:,.0f} | {'> ' if stopped else ''}{stage:.1f}{note} | ×{rate / base:.2f} |"
            )
    print("\n".join(rows))
    if args.write:
        write_section(rows, args, load_before, load_after)


def write_section(rows: list[str], args: argparse.Namespace, load_before: list[str], load_after: list[str]) -> None:
    import torch

    path = ROOT / "bench" / "RESULTS.md"
    text = path.read_text()
    section = f"""## bench/trainer (wait policy)

An embedded pretrain ({args.steps} steps, the default model and data) beside one busy process (`while True: pass`), run
by `python -m coa_trainer` (it sets OMP_WAIT_POLICY=PASSIVE before torch loads) and as before that (torch loaded
first, libgomp's default policy: threads spin at barriers), in turn, {args.reps} pair(s) per thread count; no
OMP_WAIT_POLICY in either's environment. Median of the stage's `tokens_per_s` metrics after the first.

Command: `.venv/bin/python bench/trainer/wait_policy.py --steps {args.steps} --reps {args.reps} --threads {args.threads} --limit {args.limit:.0f} --write`

| torch threads | trainer | tokens/s per run | median tokens/s | stage s (median) | vs before |
|---|---|---|---|---|---|
{chr(10).join(rows)}

At 1 thread there is no barrier to spin at: both rows differ by the machine's noise only. At 2 threads (the default
on 2 cores) the spinning threads of the old runs fight the busy process and each other for the cores; on a machine
that other work loads as well, the loss is far worse than the 3.5× seen beside one busy process on an idle machine.

Machine: {os.cpu_count()} cores, shared with other work (load average {" ".join(load_before)} before, {" ".join(load_after)}
after, the busy process not counted); torch {torch.__version__}; {time.strftime("%Y-%m-%d")}.
"""
    pattern = re.compile(r"^## bench/trainer \(wait policy\)\n.*?(?=^## |\Z)", re.S | re.M)
    text = pattern.sub(section + "\n", text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


if __name__ == "__main__":
    main()
