"""bench/collect: the embedded default trained on a collection from its own SFT-3 teacher, against the same recipe
trained on the benchmark's oracle trajectories. Reads two finished pipeline runs — it trains nothing:

    # 1. the oracle-trained model (the teacher), with its results table
    .venv/bin/python -m coa_trainer pipeline --config examples/embedded-demo.run.json --run-dir runs/collect-oracle \\
        --stages pretrain,sft1,sft2,sft3,results
    # 2. a second model: collect from 1's SFT-3 model, then SFT-1/2/3 on the collection, then its results table
    .venv/bin/python -m coa_trainer pipeline --config examples/collect-embedded.run.json --run-dir runs/collect-student \\
        --stages pretrain,collect,sft1,sft2,sft3,results
    # 3. this summary
    .venv/bin/python bench/collect/run.py --oracle runs/collect-oracle --student runs/collect-student [--write]

Prints (and with --write puts into bench/RESULTS.md, section `## bench/collect`) the collection's throughput and
selection from the student run's events and report, and both results tables side by side."""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def events(run: Path) -> list[dict]:
    return [
        json.loads(line) for line in (run / "events.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def stage_seconds(evs: list[dict], stage: str) -> float | None:
    """Wall seconds of a stage's last run: its last run_started to its stage_finished."""
    start = [e["time"] for e in evs if e["type"] == "run_started" and e["stage"] == stage]
    end = [e["time"] for e in evs if e["type"] == "stage_finished" and e["stage"] == stage]
    return end[-1] - start[-1] if start and end else None


def cell(v: float | None) -> str:
    return "—" if v is None else f"{v:.3f}"


def section(oracle: Path, student: Path) -> str:
    evs = events(student)
    report = json.loads((student / "stages" / "collect" / "report.json").read_text(encoding="utf-8"))
    settings = json.loads((student / "stages" / "collect" / "settings.json").read_text(encoding="utf-8"))
    metrics = [e["values"] for e in evs if e["type"] == "metrics" and e["stage"] == "collect"]
    secs = stage_seconds(evs, "collect")
    gen = [m["gen_tokens_per_s"] for m in metrics]
    rate = [m["samples_per_s"] for m in metrics]
    ours = {r["setting"]: r for r in json.loads((student / "results.json").read_text())["rows"]}
    theirs = {r["setting"]: r for r in json.loads((oracle / "results.json").read_text())["rows"]}
    s = settings["sampling"]
    lines = [
        "## bench/collect",
        "",
        f"_Last run: {time.strftime('%Y-%m-%d')}_",
        "",
        "Commands: the oracle-trained teacher `pipeline --config examples/embedded-demo.run.json --run-dir "
        f"runs/{oracle.name} --stages pretrain,sft1,sft2,sft3,results`; the second model `pipeline --config "
        f"examples/collect-embedded.run.json --run-dir runs/{student.name} --stages pretrain,collect,sft1,sft2,sft3,"
        f"results`; this summary `.venv/bin/python bench/collect/run.py --oracle runs/{oracle.name} --student "
        f"runs/{student.name} --write`.",
        f"Machine: {platform.system().lower()} {platform.machine()}, {os.cpu_count()} cores shared with other work "
        "(1 torch thread); figures vary run to run.",
        "",
        f"Collection: teacher `{Path(settings['teacher']['path']).relative_to(ROOT) if settings['teacher'].get('path') else settings['teacher']}`"
        f", {report['questions']} train questions × {len(settings['modes'])} modes ({', '.join(settings['modes'])}) × "
        f"K = {settings['samples']}, temperature {s['temperature']}, ≤ {s['max_turns']} searches, "
        f"{s['max_new_tokens']} tokens per turn; graded by the environment server ({settings['reward']['scheme']}).",
        "",
        "| collected | wall (stage, with model load, grading, pairs) | samples/s overall | samples/s per batch (mean) | generated tokens/s per batch (mean) | kept | wrong | format | duplicate | SFT-1 pairs |",
        "|---|---|---|---|---|---|---|---|---|---|",
        f"| {report['collected']} | {secs:.0f} s | {report['collected'] / secs:.1f} | {sum(rate) / len(rate):.1f} | "
        f"{sum(gen) / len(gen):,.0f} | {report['kept']} | "
        f"{report['dropped']['incorrect']} | {report['dropped']['format']} | {report['dropped']['duplicate']} | "
        f"{report['pairs'].get('pairs', 0)} |",
        "",
        "Per mode: "
        + "; ".join(
            f"{m}: {v['correct']} of {v['collected']} correct, {v['kept']} kept" for m, v in report["by_mode"].items()
        )
        + f". SFT-2/3 mix: {report['sft_mix']['with_tools']} CoA + {report['sft_mix']['tool_free']} CoT trajectories.",
        "",
        f"Test split, greedy (results tables of both runs; `runs/{student.name}/results.md` has the comparison):",
        "",
        "| setting | EM (collection) | EM (oracle) | Δ EM | TC (collection) | TC (oracle) | TP (collection) | TP (oracle) | format errors (collection / oracle) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in ours.items():
        o = theirs.get(name, {})
        if r.get("em") is None or o.get("em") is None:
            continue
        lines.append(
            f"| {name} | {cell(r['em'])} | {cell(o['em'])} | {r['em'] - o['em']:+.3f} | {cell(r['tc'])} | "
            f"{cell(o['tc'])} | {cell(r['tp'])} | {cell(o['tp'])} | {cell(r['format_error_rate'])} / "
            f"{cell(o['format_error_rate'])} |"
        )
    return "\n".join(lines) + "\n"


def write(text: str) -> None:
    path = ROOT / "bench" / "RESULTS.md"
    old = path.read_text(encoding="utf-8")
    pattern = re.compile(r"^## bench/collect\n.*?(?=^## |\Z)", re.M | re.S)
    new = pattern.sub(lambda _: text + "\n", old) if pattern.search(old) else old.rstrip("\n") + "\n\n" + text
    path.write_text(new, encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--oracle", default="runs/collect-oracle")
    ap.add_argument("--student", default="runs/collect-student")
    ap.add_argument("--write", action="store_true", help="replace the ## bench/collect section of bench/RESULTS.md")
    args = ap.parse_args()
    text = section(Path(args.oracle).resolve(), Path(args.student).resolve())
    print(text)
    if args.write:
        write(text)


if __name__ == "__main__":
    main()
