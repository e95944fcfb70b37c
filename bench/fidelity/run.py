"""bench/fidelity: do the papers' effects hold across seeds? Runs the whole demo pipeline for N seeds
(`python -m coa_trainer pipeline --seeds N`, each seed its own knowledge base, question split and models), then
reports the table as mean ± sd, the per-seed rows, the OTC headroom and the seed-level verdicts (the multi-seed
results.md), with the time it took.

    .venv/bin/python bench/fidelity/run.py [--config examples/embedded-demo.run.json] [--seeds 3]
        [--run-dir runs/fidelity-<stamp>] [--split test|dev] [--resume] [--write]

It takes about N × one demo (4–13 min each on 2 shared cores). --split dev is for choosing settings (the issue's
rule: tune on dev, report test). --write replaces the `## bench/fidelity` section of bench/RESULTS.md."""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="examples/embedded-demo.run.json")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--run-dir", default=None)
    ap.add_argument("--split", choices=("test", "dev"), default="test")
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    run_dir = Path(args.run_dir or ROOT / "runs" / time.strftime("fidelity-%Y%m%d-%H%M%S"))
    argv = [sys.executable, "-m", "coa_trainer", "pipeline", "--config", args.config, "--run-dir", str(run_dir),
            "--seeds", str(args.seeds), "--split", args.split]
    if args.resume:
        argv.append("--resume")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src" / "trainer"), "PYTHONUNBUFFERED": "1"}
    started = time.time()
    # the stages' events go to the run directory; the terminal gets only the pipelines' progress lines
    proc = subprocess.run(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    wall = time.time() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        print(f"bench/fidelity: the pipeline failed (exit {proc.returncode}); see {run_dir}/events.jsonl",
              file=sys.stderr)
        return proc.returncode
    doc = json.loads((run_dir / "results.json").read_text())
    per_seed_s = seed_times(run_dir)
    result = {"run_dir": str(run_dir), "seeds": doc["seeds"], "split": doc["split"], "wall_s": round(wall),
              "cpu_s": round(usage.ru_utime + usage.ru_stime), "per_seed_s": per_seed_s,
              "load_average": os.getloadavg(), "verdicts": doc["verdicts"]}
    print(json.dumps(result))
    if args.write:
        write_section(run_dir, result, args)
    return 0


def seed_times(run_dir: Path) -> dict[str, float]:
    """Wall seconds per seed, from the `seeds: seed S took N s` log events."""
    out = {}
    for line in (run_dir / "events.jsonl").read_text().splitlines():
        m = re.match(r"seeds: seed (-?\d+) took (\d+) s", json.loads(line).get("message", ""))
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def write_section(run_dir: Path, r: dict, args: argparse.Namespace) -> None:
    path = ROOT / "bench" / "RESULTS.md"
    text = path.read_text() if path.is_file() else "# Benchmarks\n"
    md = (run_dir / "results.md").read_text()
    body = md.split("\n", 1)[1].split("\n## Per seed")[0].strip()  # table, verdicts, gap; per-seed rows stay in the run
    body = re.sub(r"^## ", "#### ", body, flags=re.M)
    cmd = f".venv/bin/python bench/fidelity/run.py --config {args.config} --seeds {args.seeds} --split {args.split}"
    per = ", ".join(f"seed {s}: {t / 60:.1f} min" for s, t in r["per_seed_s"].items())
    load = ", ".join(f"{x:.1f}" for x in r["load_average"])
    section = f"""## bench/fidelity

_Last run: {time.strftime('%Y-%m-%d')}_

Command: `{cmd} --write` (run directory `{Path(r['run_dir']).name}`; per-seed rows in its results.md).
Machine: {platform.system().lower()} {platform.machine()}, {os.cpu_count()} cores (shared; load average at the end {load}).
Time: {r['wall_s'] / 60:.1f} min wall, {r['cpu_s'] / 60:.1f} min CPU for {len(r['seeds'])} seeds ({per}).

{body}
"""
    pattern = re.compile(r"^## bench/fidelity\n.*?(?=^## |\Z)", re.S | re.M)
    text = pattern.sub(section + "\n", text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


if __name__ == "__main__":
    sys.exit(main())
