"""bench/fidelity: do the papers' effects survive perturbation? Runs the whole demo pipeline for N seeds × each
thread count (`python -m coa_trainer pipeline --seeds N` once per thread count; each seed its own knowledge base,
question split and models; the thread count changes the order floats are summed in — a stand-in for another CPU, torch
build or batch split), then reports per claim on how many of the runs it holds, with the mean ± sd of its measure
(evaluation/claims.py), the per-run table and the time it took.

    .venv/bin/python bench/fidelity/run.py [--config examples/embedded-demo.run.json] [--seeds 5] [--threads 1,2]
        [--run-dir runs/fidelity-<stamp>] [--split test|dev] [--stages a,b,…] [--resume] [--write]

It takes about seeds × thread counts × one demo (5–8 min each on 2 cores). --split dev is for choosing settings (tune
on dev, report test). --write replaces the `## bench/fidelity` section of bench/RESULTS.md (with the dev-split tuning
table of bench/fidelity/tuning.md beside it) and writes bench/fidelity/spread.json, the spread `npm run demo` quotes
in its verdict."""

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
sys.path.insert(0, str(ROOT / "src" / "trainer"))

from coa_trainer.evaluation.claims import (  # noqa: E402
    RunTable,
    by_setting,
    fmt,
    gap_closed,
    run_claims,
    spread,
    verdict_lines,
)

SPREAD = ROOT / "bench" / "fidelity" / "spread.json"
TUNING = ROOT / "bench" / "fidelity" / "tuning.md"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="examples/embedded-demo.run.json")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--threads", default=None, help="comma-separated torch thread counts (default: the config's)")
    ap.add_argument("--run-dir", default=None)
    ap.add_argument("--split", choices=("test", "dev"), default="test")
    ap.add_argument("--stages", default=None, help="the pipeline's --stages (default: all of them)")
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    run_dir = Path(args.run_dir or ROOT / "runs" / time.strftime("fidelity-%Y%m%d-%H%M%S"))
    base = json.loads((ROOT / args.config).read_text())
    threads = [int(t) for t in args.threads.split(",")] if args.threads else [base.get("threads") or os.cpu_count()]
    # OMP_WAIT_POLICY=PASSIVE: on a shared machine OpenMP's spinning threads made a 2-thread run ~15× slower than
    # sleeping ones (a 300-step MLP loop at load 3: 101 s vs 6.6 s; 1 thread 8.8 s); it changes scheduling only,
    # never the numbers (bit-identical parameters after 50 AdamW steps)
    env = {
        "OMP_WAIT_POLICY": "PASSIVE",
        **os.environ,
        "PYTHONPATH": str(ROOT / "src" / "trainer"),
        "PYTHONUNBUFFERED": "1",
    }
    started = time.time()
    for t in threads:
        # one `pipeline --seeds N` per thread count, in its own directory with its own config (only `threads` differs)
        cfg = run_dir / f"threads-{t}.run.json"
        cfg.parent.mkdir(parents=True, exist_ok=True)
        cfg.write_text(json.dumps({**base, "threads": t}, indent=2) + "\n")
        argv = [
            sys.executable,
            "-m",
            "coa_trainer",
            "pipeline",
            "--config",
            str(cfg),
            "--run-dir",
            str(run_dir / f"threads-{t}"),
            "--seeds",
            str(args.seeds),
            "--split",
            args.split,
        ]
        if args.resume:
            argv.append("--resume")
        if args.stages:
            argv += ["--stages", args.stages]
        print(f"bench/fidelity: {args.seeds} seeds at {t} thread(s) → {run_dir / f'threads-{t}'}", flush=True)
        # the stages' events go to the run directory; the terminal gets only the pipelines' progress lines
        proc = subprocess.run(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
        if proc.returncode != 0:
            print(
                f"bench/fidelity: the pipeline failed (exit {proc.returncode}); see "
                f"{run_dir / f'threads-{t}'}/events.jsonl",
                file=sys.stderr,
            )
            return proc.returncode
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    runs = collect_runs(run_dir, threads, base.get("seed", 0), args.seeds)
    result = summarise(runs, args.split)
    result.update(
        {
            "run_dir": str(run_dir),
            "wall_s": round(time.time() - started),
            "cpu_s": round(usage.ru_utime + usage.ru_stime),
            "load_average": os.getloadavg(),
            "config": args.config,
            "seeds": args.seeds,
            "threads": threads,
            "resumed": args.resume,
        }
    )
    (run_dir / "fidelity.json").write_text(json.dumps(result, indent=2) + "\n")
    print("\n".join(result["verdicts"]))
    if args.write:
        write_spread(result)
        write_section(result, args)
    return 0


def collect_runs(run_dir: Path, threads: list[int], first_seed: int, n: int) -> list[dict]:
    """Every (seed, thread count) run's results table, label and minutes."""
    runs = []
    for t in threads:
        times = seed_times(run_dir / f"threads-{t}")
        for s in range(first_seed, first_seed + n):
            # `pipeline --seeds 1` is one pipeline in the run directory itself, several seeds one directory each
            where = run_dir / f"threads-{t}" / (f"seed-{s}" if n > 1 else "")
            doc = json.loads((where / "results.json").read_text())
            runs.append(
                {
                    "seed": s,
                    "threads": t,
                    "label": f"seed {s}·{t}t",
                    "rows": doc["rows"],
                    "tc_optimal": doc.get("tc_optimal"),
                    "minutes": times.get(str(s), 0) / 60,
                }
            )
    return runs


def seed_times(run_dir: Path) -> dict[str, float]:
    """Wall seconds per seed, from the `seeds: seed S took N s` log events (one seed: the whole pipeline's events)."""
    out, first, last, seed = {}, None, None, None
    for line in (run_dir / "events.jsonl").read_text().splitlines():
        e = json.loads(line)
        first, last = first if first is not None else e["time"], e["time"]
        if e["type"] == "run_started" and e.get("stage") == "pipeline":
            seed = e.get("config", {}).get("seed")
        m = re.match(r"seeds: seed (-?\d+) took (\d+) s", e.get("message", ""))
        if m:
            out[m.group(1)] = float(m.group(2))
    if not out and first is not None and seed is not None:
        out[str(seed)] = last - first
    return out


def summarise(runs: list[dict], split: str) -> dict:
    labels = [r["label"] for r in runs]
    tables = [RunTable.of(r) for r in runs]
    claims = spread([run_claims(t.rows, t.tc_optimal) for t in tables], labels)
    return {
        "split": split,
        "runs": runs,
        "claims": claims,
        "verdicts": verdict_lines(tables, labels, "runs"),
    }


def run_table(runs: list[dict]) -> list[str]:
    """One line per run: EM of every row, TC of RL-2 / OTC / the optimum, the gap closed, OTC's ΔEM and ΔTP."""
    head = [
        "| seed | threads | no-tool | workflow | SFT-1+2 | SFT+RL | OTC | TC RL-2 · OTC · optimal | gap closed | "
        "OTC ΔEM | OTC ΔTP | min |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    lines = []
    for r in runs:
        by = {x["setting"]: x for x in r["rows"]}
        em = [num(by.get(s, {}).get("em")) for s in ("no-tool", "workflow", "sft12", "sft-rl", "sft-rl-otc")]
        tc = " · ".join(
            num(v) for v in (by.get("sft-rl", {}).get("tc"), by.get("sft-rl-otc", {}).get("tc"), r["tc_optimal"])
        )
        t = RunTable.of(r)
        c = run_claims(t.rows, t.tc_optimal)
        lines.append(
            f"| {r['seed']} | {r['threads']} | {' | '.join(em)} | {tc} | "
            f"{fmt(gap_closed(by_setting(t.rows), t.tc_optimal), 'share')} | {fmt(c['otc_keeps_em']['value'], 'em')} | "
            f"{fmt(c['otc_raises_tp']['value'], 'em')} | {r['minutes']:.1f} |"
        )
    return head + lines


def num(v: float | None) -> str:
    return "—" if v is None else f"{v:.3f}"


def claim_table(claims: list[dict]) -> list[str]:
    lines = ["| claim | holds on | measure: mean ± sd |", "|---|---|---|"]
    lines += [f"| {c['text']} | {c['holds']}/{c['runs']} | {c['measure']} {c['spread']} |" for c in claims if c["runs"]]
    return lines


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


def write_spread(r: dict) -> None:
    """What `npm run demo` quotes next to its own run (scripts/demo-verdict.mjs)."""
    doc = {
        "date": time.strftime("%Y-%m-%d"),
        "commit": commit(),
        "machine": machine(),
        "config": r["config"],
        "split": r["split"],
        "seeds": r["seeds"],
        "threads": r["threads"],
        "runs": len(r["runs"]),
        "claims": [
            {k: c[k] for k in ("id", "text", "measure", "holds", "runs", "mean", "sd", "spread")} for c in r["claims"]
        ],
    }
    SPREAD.write_text(json.dumps(doc, indent=2) + "\n")


def time_line(r: dict) -> str:
    """This invocation's wall and CPU time, and the runs' own minutes (from each seed's log): after --resume the
    invocation only gathered what earlier ones trained, so its time alone would read as the runs' cost."""
    runs = f"{len(r['runs']) // max(len(r['threads']), 1)} seeds × thread counts {', '.join(map(str, r['threads']))}"
    own = sum(x["minutes"] for x in r["runs"])
    this = f"{r['wall_s'] / 60:.1f} min wall, {r['cpu_s'] / 60:.1f} min CPU"
    if r.get("resumed"):
        return (
            f"{own:.1f} min in all for the {len(r['runs'])} runs ({runs}; each run's minutes below, from its log); "
            f"this --resume invocation {this}."
        )
    return f"{this} for {len(r['runs'])} runs ({runs}; {own:.1f} min by the runs' own logs)."


def write_section(r: dict, args: argparse.Namespace) -> None:
    path = ROOT / "bench" / "RESULTS.md"
    text = path.read_text() if path.is_file() else "# Benchmarks\n"
    cmd = (
        f".venv/bin/python bench/fidelity/run.py --config {args.config} --seeds {args.seeds} "
        f"--threads {','.join(map(str, r['threads']))} --split {args.split}"
    )
    load = ", ".join(f"{x:.1f}" for x in r["load_average"])
    tuning = TUNING.read_text().strip() if TUNING.is_file() else "(no tuning table: bench/fidelity/tuning.md)"
    tuning = re.sub(r"^# .*\n+", "", tuning)
    tuning = re.sub(r"^## ", "#### ", tuning, flags=re.M)
    section = f"""## bench/fidelity

_Last run: {time.strftime("%Y-%m-%d")}, commit {commit()}_

Command: `{cmd} --write` (run directory `{Path(r["run_dir"]).name}`; each run's results.md under
`threads-<t>/seed-<s>/`).
Machine: {machine()} (shared; load average at the end {load}).
Time: {time_line(r)}

Split: {r["split"]}. Per claim, on how many of the {len(r["runs"])} runs it holds and the mean ± sample sd of its
measure (evaluation/claims.py); `npm run demo` quotes these next to its own run (bench/fidelity/spread.json).

{chr(10).join(claim_table(r["claims"]))}

{chr(10).join(r["verdicts"])}

#### Per run

{chr(10).join(run_table(r["runs"]))}

### Settings chosen on dev

{tuning}
"""
    pattern = re.compile(r"^## bench/fidelity\n.*?(?=^## |\Z)", re.S | re.M)
    text = pattern.sub(section + "\n", text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


if __name__ == "__main__":
    sys.exit(main())
