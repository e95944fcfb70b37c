"""bench/reliability/signals.py: how long a trainer stage takes to stop after a stop signal, in each phase — seconds
from the signal to the process's exit, the exit status, the stage's last event and the phase its stop line names —
for pretrain and SFT-2 (the supervised loop) and RL-1 (GRPO, against a real environment server).

    .venv/bin/python bench/reliability/signals.py [--repo PATH] [--json OUT] [--before RUN.json] [--write]
    .venv/bin/python bench/reliability/signals.py --rows RUN.json [--before RUN.json] [--write]   # no new runs

Each row is one `python -m coa_trainer train` run: the phase is read from the trainer's own events (COA_TRACE_PHASES=1:
a debug `log` as each phase of a step begins), the signal is sent as soon as that line arrives, and the clock stops
when the process has exited. `--repo` runs another checkout's trainer (its src/trainer) for before/after figures; a
trainer without phase events is signalled 0.3 s after the events that exist there: the `progress` of the step
before (into the update of a supervised stage, the rollout of an RL one) and the last step's `progress` (into the
final save and evaluation); the other phases cannot be found there and are left out. The environment server is this
checkout's (built: `node scripts/build.mjs`). Target: every phase stops within 5 s, `cancelled`, exit 130.

--json writes the run ({"commit", "load_before", "load_after", "rows": [one object per row]}) for bench/reliability's
table; --before puts an earlier run's rows (`--repo <older checkout> --json`) beside this run's; --rows renders a
saved run instead of running; --write replaces this script's section of bench/RESULTS.md."""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src" / "trainer"))
TARGET_S = 5.0
LIMIT_S = 600.0  # a run that has not exited this long after its signal is killed and reported as such
FALLBACK_DELAY_S = 0.3

MODEL = {
    "hidden_size": 256,
    "num_layers": 6,
    "num_heads": 4,
    "num_kv_heads": 2,
    "intermediate_size": 1024,
    "max_position": 512,
}  # ~6 M parameters: a supervised step ~1 s, a checkpoint (with AdamW's moments) 70 MB
RL_MODEL = {
    "hidden_size": 128,
    "num_layers": 4,
    "num_heads": 4,
    "num_kv_heads": 2,
    "intermediate_size": 256,
    "max_position": 512,
}
BASE = {
    "seed": 3,
    "threads": 1,
    "device": "cpu",
    "benchmark": {"persons": 24, "companies": 6, "cities": 6, "countries": 3, "famous_fraction": 0.5},
    "eval": {"limit": 16, "max_new_tokens": 32, "max_turns": 2},
}
SUPERVISED = {
    "steps": 3,
    "batch_size": 8,
    "log_every": 1,
    "warmup_steps": 1,
    "checkpoint_every": 1,
    "checkpoint_minutes": 0,
}
RL = {
    "steps": 3,
    "prompts_per_step": 2,
    "group_size": 8,
    "max_new_tokens": 48,
    "max_turns": 2,
    "max_obs_tokens": 24,
    "heldout_every": 2,
    "heldout_limit": 8,
    "warmup_steps": 1,
    "log_every": 1,
    "checkpoint_every": 1,
    "checkpoint_minutes": 0,
    "reward": {"scheme": "otc-grpo", "params": {}},
}

# (stage, phase, step of the phase, signal, the fallback trigger for a trainer without phase events)
CASES = [
    ("pretrain", "update", 2, "SIGINT", ("progress", 1)),
    ("pretrain", "checkpoint", 1, "SIGHUP", None),
    ("pretrain", "eval", 3, "SIGTERM", ("progress", 3)),
    ("sft2", "update", 2, "SIGTERM", ("progress", 1)),
    ("sft2", "eval", 3, "SIGINT", ("progress", 3)),
    ("rl1", "rollout", 2, "SIGINT", ("progress", 1)),
    ("rl1", "grade", 2, "SIGTERM", None),
    ("rl1", "update", 2, "SIGINT", None),
    ("rl1", "heldout", 2, "SIGHUP", None),
    ("rl1", "checkpoint", 2, "SIGINT", None),
    ("rl1", "eval", 3, "SIGTERM", ("progress", 3)),
]


def merge(base: dict, over: dict) -> dict:
    out = json.loads(json.dumps(base))
    for k, v in over.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def prepare(work: Path) -> tuple[dict[str, Path], Path]:
    """Run configs for the three stages: the benchmark files and two embedded models (written by this checkout),
    shared by every run."""
    from coa_trainer.base.config import validate_config
    from coa_trainer.data.benchmark import ensure_benchmark_files, vocabulary_texts
    from coa_trainer.model.load import write_embedded_model

    data = work / "data"
    configs = {}
    for name, model in (("sft", MODEL), ("rl", RL_MODEL)):
        config = validate_config(merge(BASE, {"model": {"embedded": model}}))
        bench = ensure_benchmark_files(config, data)
        write_embedded_model(config, vocabulary_texts(bench, config), work / f"model-{name}", 0)
    common = {"benchmark": {"data_dir": str(data)}}
    for stage, model, over in (
        ("pretrain", MODEL, SUPERVISED),
        ("sft2", MODEL, {**SUPERVISED, "init_from": str(work / "model-sft")}),
        ("rl1", RL_MODEL, {**RL, "init_from": str(work / "model-rl")}),
    ):
        path = work / f"{stage}.json"
        path.write_text(json.dumps(merge(BASE, {**common, "model": {"embedded": model}, "stages": {stage: over}})))
        configs[stage] = path
    return configs, data / "corpus.jsonl"


def stop_once(
    repo: Path,
    config: Path,
    run: Path,
    stage: str,
    phase: str,
    step: int,
    sig: str,
    fallback: tuple | None,
    env_url: str | None,
    token: str | None,
) -> dict | None:
    env = {
        **os.environ,
        "PYTHONPATH": str(repo / "src" / "trainer"),
        "OMP_NUM_THREADS": "1",
        "COA_TRACE_PHASES": "1",
        **({"COA_ENV_TOKEN": token} if token else {}),
    }
    argv = [
        sys.executable,
        "-m",
        "coa_trainer",
        "train",
        "--stage",
        stage,
        "--config",
        str(config),
        "--run-dir",
        str(run),
        *([f"--env-url={env_url}"] if env_url else []),
    ]
    proc = subprocess.Popen(argv, cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    traced, trigger, sent, ended = False, None, None, None
    for line in proc.stdout:
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if e["type"] == "log" and e.get("level") == "debug" and " of step " in e.get("message", ""):
            traced = True
            if e["message"].endswith(f": {phase} of step {step}"):
                trigger = f"`{phase}` of step {step} began"
        elif not traced and fallback and e["type"] == fallback[0] and e.get("step") == fallback[1]:
            time.sleep(FALLBACK_DELAY_S)  # into the phase that follows the event (each lasts ~1 s or more here)
            trigger = f"{FALLBACK_DELAY_S:g} s after `{fallback[0]}` of step {fallback[1]} (no phase events)"
        if trigger:
            proc.send_signal(getattr(signal, sig))
            sent = time.time()
            break
        if e["type"] in ("stage_finished", "error"):
            ended = e
            break
    if sent is None:
        proc.kill()
        proc.wait()
        if ended is None or (not traced and fallback is None):  # a trainer without phase events, no fallback for it
            return None
        why = ended.get("message") or ended.get("status")  # the run ended before the phase: say so, never drop it
        return {
            "stage": stage,
            "phase": phase,
            "signal": sig,
            "trigger": f"never: the run ended first ({why[:80]})",
            "seconds_to_exit": None,
            "exit": proc.returncode,
            "final_event": f"{ended['type']}",
            "stopped_in": None,
            "event_after_s": None,
        }
    try:  # keep reading: a trainer blocked on a full pipe would never exit
        for _ in proc.stdout:
            if time.time() - sent > LIMIT_S:
                break
        code = proc.wait(timeout=max(1.0, LIMIT_S - (time.time() - sent)))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        code = None
    seconds = time.time() - sent
    events = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines() if x.strip()]
    last = next((e for e in reversed(events) if e["type"] in ("stage_finished", "error")), None)
    stopped = next((e["message"] for e in events if e["type"] == "log" and "stopped by" in e.get("message", "")), "")
    m = re.search(r"during (\w+) of step (\d+)", stopped)
    return {
        "stage": stage,
        "phase": phase,
        "signal": sig,
        "trigger": trigger,
        "seconds_to_exit": round(seconds, 2) if code is not None else None,
        "exit": code,
        "final_event": (f"{last['type']} {last.get('status', last.get('code'))}" if last else "none"),
        "stopped_in": f"{m.group(1)} {m.group(2)}" if m else None,
        "event_after_s": round(last["time"] - sent, 2) if last else None,
    }


def cell(r: dict | None) -> str:
    if r is None:
        return "— (no event for the phase)"
    if r["trigger"].startswith("never"):
        return f"not signalled: {r['trigger']}"
    secs = "did not exit" if r["seconds_to_exit"] is None else f"{r['seconds_to_exit']:.2f} s"
    return f"{secs}, exit {r['exit']}, {r['final_event']}"


def table(rows: list[dict], before: list[dict] | None = None) -> str:
    """One row per (stage, phase); with `before` (another checkout's rows), its figure beside this one's."""
    old = {(r["stage"], r["phase"]): r for r in before or []}
    head = (
        "| stage | phase | signal | sent when | "
        + ("before: to exit, status, last event | " if before else "")
        + "to exit, status, last event | stop line says |"
    )
    body = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        b = old.get((r["stage"], r["phase"]))
        was = (
            f"{cell(b)}{'' if b is None or b['trigger'] == r['trigger'] else ' (sent at ' + b['trigger'] + ')'} | "
            if before
            else ""
        )
        body.append(
            f"| {r['stage']} | {r['phase']} | {r['signal']} | {r['trigger']} | {was}{cell(r)} | "
            f"{r['stopped_in'] or '—'} |"
        )
    return "\n".join(body)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", type=Path, default=ROOT, help="the checkout whose trainer runs (default: this one)")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--only", default=None, help="comma list of stage:phase (e.g. rl1:update)")
    ap.add_argument("--before", type=Path, default=None, help="a run (--json) with --repo <older checkout>")
    ap.add_argument("--rows", type=Path, default=None, help="a saved run (--json) to render instead of running")
    args = ap.parse_args()

    if args.rows:
        run = json.loads(args.rows.read_text())
    else:
        run = measure(args)
    before = json.loads(args.before.read_text()) if args.before else None
    text = table(run["rows"], before["rows"] if before else None)
    print(text)
    if args.json and not args.rows:
        args.json.write_text(json.dumps(run, indent=2) + "\n")
    if args.write:
        write_section(run, before, text, args)


def commit_of(repo: Path) -> str:
    r = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(
        ["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True
    ).stdout.strip()
    return (r.stdout.strip() or "unknown") + (" (with uncommitted changes)" if dirty else "")


def measure(args: argparse.Namespace) -> dict:
    from coa_trainer.env.client import EnvClient

    load_before = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory(prefix="coa-signals-") as d:
        work = Path(d)
        configs, corpus = prepare(work)
        with EnvClient.start(corpus, "coa") as env:
            for i, (stage, phase, step, sig, fallback) in enumerate(CASES):
                if args.only and f"{stage}:{phase}" not in args.only.split(","):
                    continue
                rl = stage == "rl1"
                row = stop_once(
                    args.repo.resolve(),
                    configs[stage],
                    work / f"run-{i}",
                    stage,
                    phase,
                    step,
                    sig,
                    fallback,
                    env.url if rl else None,
                    env.token if rl else None,
                )
                if row is not None:
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    return {
        "commit": commit_of(args.repo.resolve()),
        "date": time.strftime("%Y-%m-%d"),
        "load_before": [round(x, 1) for x in load_before],
        "load_after": [round(x, 1) for x in os.getloadavg()],
        "rows": rows,
    }


def load(run: dict) -> str:
    return (
        f"load average {' / '.join(f'{x:.1f}' for x in run['load_before'])} at its start, "
        f"{' / '.join(f'{x:.1f}' for x in run['load_after'])} at its end"
    )


def write_section(run: dict, before: dict | None, text: str, args: argparse.Namespace) -> None:
    path = ROOT / "bench" / "RESULTS.md"
    rows = run["rows"]
    met = [
        r
        for r in rows
        if r["seconds_to_exit"] is not None
        and r["seconds_to_exit"] <= TARGET_S
        and r["exit"] == 130
        and r["final_event"] == "stage_finished cancelled"
    ]
    was = (
        f"\nBefore: the trainer at {before['commit']} (`--repo <that checkout> --json before.json`, {before['date']}; "
        f"{load(before)}), signalled as the script's doc says for a trainer without phase events."
        if before
        else ""
    )
    section = f"""## bench/reliability/signals

_Last run: {run["date"]}_

Command: `.venv/bin/python bench/reliability/signals.py{" --before before.json" if before else ""} --write` (the
trainer at {run["commit"]}).
Machine: {platform.system().lower()} {platform.machine()}, {os.cpu_count()} cores (shared), CPU; {load(run)}.{was}
Models: embedded, {MODEL["hidden_size"]}×{MODEL["num_layers"]} (~6 M parameters) for pretrain and SFT-2,
{RL_MODEL["hidden_size"]}×{RL_MODEL["num_layers"]} (~0.6 M) for RL-1 (OTC-GRPO, 2 questions × G=8, its own
environment server). One run per row; the signal goes as soon as the trainer's event for the phase arrives.

{text}

Target: exit 130 with `stage_finished` cancelled within {TARGET_S:g} s of the signal in every phase — met in
{len(met)} of {len(rows)}. A stopped trainer now also skips the interpreter's teardown of torch (0.7–0.8 s of CPU,
3–8 s of wall time at this load), which the before figures include. GPU: unmeasured.
"""
    current = path.read_text() if path.is_file() else "# Benchmarks\n"
    pattern = re.compile(r"^## bench/reliability/signals\n.*?(?=^## |\Z)", re.S | re.M)
    current = (
        pattern.sub(section + "\n", current) if pattern.search(current) else current.rstrip("\n") + "\n\n" + section
    )
    path.write_text(current)


if __name__ == "__main__":
    main()
