"""bench/boundary: the search boundary meter (coa_trainer/evaluation/boundary.py) against the embedded benchmark's
ground truth — each fact of a question asked alone, closed-book, of the same checkpoint — on the demo pipeline's RL-2
and RL-2-OTC checkpoints of several seeds, and what the meter costs inside RL-2.

    .venv/bin/python bench/boundary/run.py [--runs runs/<fidelity>/threads-1] [--seeds 5] [--split test]
        [--config examples/embedded-demo.run.json] [--overhead-seed 0] [--no-overhead] [--write]

Without --runs it first trains the seeds as bench/fidelity does (`python -m coa_trainer pipeline --seeds N` at one
thread, OMP_WAIT_POLICY=PASSIVE; ~5–15 min a seed on 2 shared cores); with it, it reuses those runs (a bench/fidelity
run's `threads-1` directory). For each seed, `python -m coa_trainer boundary` on the two checkpoints writes
`seed-<s>/eval/boundary-<stage>-<split>.json`. The cost: that seed's RL-2 trained again from its RL-1 result in a copy
of the run, once with the meter off and once at its defaults (every 16 steps on 32 dev questions); the meter's own
seconds (its `boundary_s` metric) against the stage's time, and whether both trainings logged the same numbers step
for step (the greedy meter draws nothing from the training's generators). --write replaces the `## bench/boundary`
section of bench/RESULTS.md."""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STAGES = ("rl2", "rl2-otc")
TUNING = ROOT / "bench" / "boundary" / "tuning.md"
AGREE, MIN_TC = 0.90, 0.10  # the targets: classes agree on ≥ 90 % of the questions, minimum TC within ±0.1
ENV = {"OMP_WAIT_POLICY": "PASSIVE", **os.environ, "PYTHONPATH": str(ROOT / "src" / "trainer"), "PYTHONUNBUFFERED": "1"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--runs",
        default=None,
        help="a directory holding seed-<s>/ pipeline runs (bench/fidelity's threads-1); default: train them",
    )
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--config", default="examples/embedded-demo.run.json")
    ap.add_argument("--split", choices=("test", "dev"), default="test")
    ap.add_argument("--overhead-seed", type=int, default=0)
    ap.add_argument("--no-overhead", action="store_true")
    ap.add_argument(
        "--reuse-cost",
        action="store_true",
        help="take the cost measured by an earlier run from "
        "<runs>/../boundary-cost-seed-<s>/cost.json instead of training RL-2 twice again",
    )
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    started = time.time()
    runs = Path(args.runs) if args.runs else train(args)
    base = json.loads((ROOT / args.config).read_text())
    first = base.get("seed", 0)
    rows = []
    for s in range(first, first + args.seeds):
        for stage in STAGES:
            rows.append(measure(runs, s, stage, args.split))
            r = rows[-1]
            print(
                f"bench/boundary: seed {s} {stage}: classes agree {r['agree']:.3f}, minimum TC {r['min_meter']:.3f} "
                f"vs truth {r['min_truth']:.3f}, over-search {r['over']:.3f}",
                flush=True,
            )
    saved = runs.parent / f"boundary-cost-seed-{args.overhead_seed}" / "cost.json"
    cost = (
        None
        if args.no_overhead
        else json.loads(saved.read_text())
        if args.reuse_cost and saved.is_file()
        else overhead(runs, args.overhead_seed)
    )
    result = {
        "runs": str(runs),
        "split": args.split,
        "rows": rows,
        "cost": cost,
        "seeds": args.seeds,
        "wall_s": round(time.time() - started),
        "load_average": os.getloadavg(),
        "config": args.config,
    }
    (runs / "boundary.json").write_text(json.dumps(result, indent=2) + "\n")
    print("\n".join(verdicts(rows, cost)))
    if args.write:
        write_section(result, args)
    return 0


def run(argv: list[str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "coa_trainer", *argv],
        cwd=ROOT,
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(
            f"bench/boundary: `coa_trainer {' '.join(argv)}` failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}"
        )


def train(args: argparse.Namespace) -> Path:
    """The seeds' pipelines, as bench/fidelity trains them at one thread."""
    out = ROOT / "runs" / time.strftime("boundary-%Y%m%d-%H%M%S")
    cfg = out / "threads-1.run.json"
    cfg.parent.mkdir(parents=True)
    cfg.write_text(json.dumps({**json.loads((ROOT / args.config).read_text()), "threads": 1}, indent=2) + "\n")
    print(f"bench/boundary: training {args.seeds} seeds → {out / 'threads-1'}", flush=True)
    run(["pipeline", "--config", str(cfg), "--run-dir", str(out / "threads-1"), "--seeds", str(args.seeds)])
    return out / "threads-1"


def seed_config(runs: Path, seed: int) -> Path:
    """The seed's own run config (`pipeline --seeds` writes pipeline/seed-<s>.run.json); one seed: the stage's."""
    own = runs / "pipeline" / f"seed-{seed}.run.json"
    return own if own.is_file() else runs / f"seed-{seed}" / "pipeline" / "rl2-otc.run.json"


def measure(runs: Path, seed: int, stage: str, split: str) -> dict:
    where = runs / f"seed-{seed}"
    report = where / "eval" / f"boundary-{stage}-{split}.json"
    t0 = time.time()
    run(
        [
            "boundary",
            "--config",
            str(seed_config(runs, seed)),
            "--run-dir",
            str(where),
            "--stage",
            stage,
            "--split",
            split,
            "-o",
            str(report),
        ]
    )
    doc = json.loads(report.read_text())
    s, t = doc["summary"], doc["truth"]
    return {
        "seed": seed,
        "stage": stage,
        "agree": t["class_agreement"],
        "min_meter": t["min_tc_meter"],
        "min_truth": t["min_tc_truth"],
        "min_questions": s["min_tc_questions"],
        "questions": s["questions"],
        "truth_all": t["min_tc_truth_all"],
        "optimal": t["optimal_tc"],
        "optimal_same": t["optimal_tc_same"],
        "optimal_agree": t.get("optimal_agreement"),
        "over": s["over_search_rate"],
        "under": s["under_search_rate"],
        "em_closed_book": s["em_closed_book"],
        "em": s["em"],
        "tc": s["tc"],
        "seconds": round(time.time() - t0, 1),
    }


TIMING = re.compile(r"(_s|_per_s)$|^lr$")


def overhead(runs: Path, seed: int) -> dict:
    """RL-2 of `seed` again from its RL-1 result, meter off and at its defaults, in copies of the run."""
    src = runs / f"seed-{seed}"
    cfg = json.loads(seed_config(runs, seed).read_text())
    work = runs.parent / f"boundary-cost-seed-{seed}"
    shutil.rmtree(work, ignore_errors=True)
    out = {}
    for name, every in (("off", 0), ("on", None)):
        d = work / name
        shutil.copytree(src / "data", d / "data")
        shutil.copytree(src / "stages" / "rl1" / "final", d / "stages" / "rl1" / "final")
        c = json.loads(json.dumps(cfg))
        c.setdefault("stages", {}).setdefault("rl2", {})
        if every is not None:
            c["stages"]["rl2"]["boundary_every"] = every
        (d / "run.json").write_text(json.dumps(c, indent=2) + "\n")
        print(f"bench/boundary: RL-2 of seed {seed} with the meter {name} → {d}", flush=True)
        run(["train", "--stage", "rl2", "--config", str(d / "run.json"), "--run-dir", str(d)])
        events = [json.loads(x) for x in (d / "events.jsonl").read_text().splitlines()]
        stage = [e for e in events if e.get("stage") == "rl2"]
        wall = next(e["time"] for e in stage if e["type"] == "stage_finished") - next(
            e["time"] for e in stage if e["type"] == "run_started"
        )
        steps = [e["values"] for e in stage if e["type"] == "metrics"]
        out[name] = {"wall_s": round(wall, 1), "steps": steps, "load": os.getloadavg()}
    on, off = out["on"], out["off"]
    meter_s = sum(v.get("boundary_s", 0.0) for v in on["steps"])
    probes = sum(1 for v in on["steps"] if "boundary_s" in v)
    same, first_diff = True, None
    for i, (a, b) in enumerate(zip(off["steps"], on["steps"])):
        keys = [k for k in a if not TIMING.search(k) and not k.startswith("boundary_")]
        diff = [k for k in keys if a.get(k) != b.get(k)]
        if diff:
            same, first_diff = False, f"step {i + 1}: {', '.join(diff[:4])}"
            break
    cost = {
        "seed": seed,
        "wall_off_s": off["wall_s"],
        "wall_on_s": on["wall_s"],
        "meter_s": round(meter_s, 1),
        "probes": probes,
        "steps": len(on["steps"]),
        "share": meter_s / max(on["wall_s"] - meter_s, 1e-9),
        "same_training": same and len(off["steps"]) == len(on["steps"]),
        "first_diff": first_diff,
        "load": [round(x, 1) for x in on["load"]],
        "date": time.strftime("%Y-%m-%d"),
        "commit": commit(),
    }
    (work / "cost.json").write_text(json.dumps(cost, indent=2) + "\n")
    return cost


def verdicts(rows: list[dict], cost: dict | None) -> list[str]:
    out = []
    for stage in STAGES:
        rs = [r for r in rows if r["stage"] == stage]
        a = sum(r["agree"] >= AGREE for r in rs)
        m = sum(abs(r["min_meter"] - r["min_truth"]) <= MIN_TC for r in rs)
        out.append(
            f"{stage}: classes agree on ≥ {AGREE:.0%} of the questions on {a}/{len(rs)} seeds; minimum TC "
            f"within ±{MIN_TC} of the truth on {m}/{len(rs)}"
        )
    by = {(r["seed"], r["stage"]): r for r in rows}
    seeds = sorted({r["seed"] for r in rows})
    higher = sum(by[(s, "rl2")]["over"] > by[(s, "rl2-otc")]["over"] for s in seeds)
    out.append(f"over-search rate higher for RL-2 than for RL-2-OTC on {higher}/{len(seeds)} seeds")
    if cost:
        out.append(
            f"inside RL-2 (every 16 steps, 32 dev questions): the meter took {cost['meter_s']:.1f} s in "
            f"{cost['probes']} runs, {cost['share']:.1%} of the stage's own time; the training "
            f"{'logged the same numbers at every step' if cost['same_training'] else 'differed: ' + str(cost['first_diff'])}"
        )
    return out


def machine() -> str:
    model = (
        next(
            (
                ln.split(":", 1)[1].strip()
                for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")
            ),
            platform.processor(),
        )
        if Path("/proc/cpuinfo").is_file()
        else ""
    )
    return f"{platform.system().lower()} {platform.machine()}, {model}, {os.cpu_count()} cores"


def commit() -> str:
    r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return r.stdout.strip() or "unknown"


def num(v: float | None) -> str:
    return "—" if v is None else f"{v:.3f}"


def table(rows: list[dict]) -> list[str]:
    head = [
        "| seed | checkpoint | classes agree | min TC: meter · truth (Δ) | questions with a minimum | truth, all "
        "questions | benchmark optimum: all · same questions · = meter's minimum | over-search | under-search | "
        "EM closed-book · with search | TC |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    return head + [
        f"| {r['seed']} | {r['stage']} | {r['agree']:.3f} | {num(r['min_meter'])} · {num(r['min_truth'])} "
        f"({r['min_meter'] - r['min_truth']:+.3f}) | {r['min_questions']}/{r['questions']} | "
        f"{num(r['truth_all'])} | {num(r['optimal'])} · {num(r['optimal_same'])} · "
        f"{num(r.get('optimal_agree'))} | {num(r['over'])} | {num(r['under'])} | "
        f"{num(r['em_closed_book'])} · {num(r['em'])} | {num(r['tc'])} |"
        for r in rows
    ]


def write_section(r: dict, args: argparse.Namespace) -> None:
    path = ROOT / "bench" / "RESULTS.md"
    text = path.read_text() if path.is_file() else "# Benchmarks\n"
    cmd = f".venv/bin/python bench/boundary/run.py --runs {Path(r['runs']).relative_to(ROOT) if Path(r['runs']).is_relative_to(ROOT) else r['runs']} --seeds {r['seeds']} --split {r['split']}{' --reuse-cost' if args.reuse_cost else ''} --write"
    load = ", ".join(f"{x:.1f}" for x in r["load_average"])
    c = r["cost"]
    cost = (
        "(not measured: --no-overhead)"
        if not c
        else (
            f"{'(measured ' + c['date'] + ' at ' + c['commit'] + ', reused with --reuse-cost) ' if c.get('commit') else ''}"
            f"RL-2 of seed {c['seed']} trained again from its RL-1 result, the meter off and at its defaults "
            f"(`stages.rl2.boundary_every` 16, `boundary_sample` 32 dev questions): {c['probes']} meter runs in "
            f"{c['steps']} steps took {c['meter_s']:.1f} s by its own clock (`boundary_s`), **{c['share']:.1%}** of the "
            f"stage's time without them; the stage took {c['wall_off_s']:.0f} s off and {c['wall_on_s']:.0f} s on "
            f"(load {', '.join(map(str, c['load']))}: wall times on this shared machine move more than that between "
            f"runs). Training numbers step for step: "
            f"{'identical (every metric but times and the meter’s own)' if c['same_training'] else 'differ at ' + str(c['first_diff'])}."
        )
    )
    tuning = TUNING.read_text().strip() if TUNING.is_file() else "(no tuning table: bench/boundary/tuning.md)"
    tuning = re.sub(r"^# .*\n+", "", tuning)
    tuning = re.sub(r"^## ", "#### ", tuning, flags=re.M)  # inside this section (a `## ` would end it)
    section = f"""## bench/boundary

_Last run: {time.strftime("%Y-%m-%d")}, commit {commit()}_

Command: `{cmd}` (the runs of bench/fidelity's settings: `{r["config"]}`, one thread).
Machine: {machine()} (shared; load average at the end {load}). Time: {r["wall_s"] / 60:.1f} min.

The search boundary meter on each seed's RL-2 and RL-2-OTC checkpoints ({r["split"]} split), against the ground truth
the embedded benchmark can compute: each fact of a question asked alone, closed-book, of the same checkpoint; a
question's true minimum is the facts it does not answer, its true class follows from that and its own search run
(evaluation/boundary_truth.py). "Benchmark optimum": the benchmark's own optimum (facts not in the pretraining
text) — what a model that remembered exactly its pretraining would need, not this checkpoint.

{chr(10).join(verdicts(r["rows"], r["cost"]))}

{chr(10).join(table(r["rows"]))}

Cost inside RL: {cost}

### Chosen on dev

{tuning}
"""
    pattern = re.compile(r"^## bench/boundary\n.*?(?=^## |\Z)", re.S | re.M)
    text = pattern.sub(section + "\n", text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


if __name__ == "__main__":
    sys.exit(main())
