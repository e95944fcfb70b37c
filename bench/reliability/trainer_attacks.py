"""bench/reliability/trainer_attacks.py: the trainer attacks of the reliability bench, replayed on a checkout's trainer
(`--repo`, default this one) with a tiny embedded model's pretrain stage (4 steps, a checkpoint each step):

- a pickle that runs a command, planted as the checkpoint one step above the newest real one, then `--resume`;
- `"lr": 1e999` (Python reads infinity) and `"lr": 1e300` in the run config;
- `train … > /dev/full`;
- `--resume` of a finished stage;
- a damaged newest checkpoint, then `--resume`;
- `events.jsonl` a symbolic link to a file outside the run, then a stage.

    .venv/bin/python bench/reliability/trainer_attacks.py [--repo PATH] [--json OUT]

Prints one JSON object per attack (`attack`, `held`, `figures`) and writes the list to --json for bench/reliability's
table (bench/reliability/run.ts). Held means what the issue asks: no code runs, a config the trainer cannot train is
refused before training, a full stdout loses nothing, a finished stage is not rerun, a damaged checkpoint is skipped
for the previous one, and nothing outside the run directory is written through a link."""

from __future__ import annotations

import argparse
import json
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CONFIG = {
    "seed": 3,
    "threads": 1,
    "device": "cpu",
    "benchmark": {"persons": 24, "companies": 6, "cities": 6, "countries": 3, "famous_fraction": 0.5},
    "model": {
        "embedded": {
            "hidden_size": 32,
            "num_layers": 1,
            "num_heads": 2,
            "num_kv_heads": 1,
            "intermediate_size": 64,
            "max_position": 256,
        }
    },
    "eval": {"limit": 4, "max_new_tokens": 8, "max_turns": 1},
    "stages": {
        "pretrain": {
            "steps": 4,
            "batch_size": 4,
            "log_every": 1,
            "warmup_steps": 1,
            "checkpoint_every": 1,
            "checkpoint_minutes": 0,
            "max_len": 64,
        }
    },
}


class RunsCommand:
    """A pickle that, when loaded, runs a command (what a planted checkpoint can do)."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self):
        return (os.system, (self.command,))


def events(run: Path) -> list[dict]:
    f = run / "events.jsonl"
    if not f.is_file():
        return []
    out = []
    for line in f.read_text(errors="replace").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def finished(evs: list[dict]) -> list[str]:
    return [e.get("status", "") for e in evs if e.get("type") == "stage_finished"]


def last_error(evs: list[dict]) -> str | None:
    e = next((e for e in reversed(evs) if e.get("type") == "error"), None)
    return f"{e.get('code')}: {str(e.get('message', ''))[:160]}" if e else None


class Trainer:
    def __init__(self, repo: Path, work: Path) -> None:
        self.repo, self.work = repo, work
        self.env = {**os.environ, "PYTHONPATH": str(repo / "src" / "trainer"), "OMP_NUM_THREADS": "1"}
        self.python = (
            str(repo / ".venv" / "bin" / "python") if (repo / ".venv" / "bin" / "python").exists() else sys.executable
        )

    def config(self, name: str, stage_over: dict | None = None, raw: str | None = None) -> Path:
        cfg = json.loads(json.dumps(CONFIG))
        cfg["benchmark"]["data_dir"] = str(self.work / "data")
        if stage_over:
            cfg["stages"]["pretrain"].update(stage_over)
        path = self.work / f"{name}.json"
        text = json.dumps(cfg)
        if raw is not None:  # a number token JSON.dumps cannot write (1e999)
            text = text.replace('"lr": "RAW"', f'"lr": {raw}')
        path.write_text(text)
        return path

    def argv(self, config: Path, run: Path, *extra: str) -> list[str]:
        return [
            self.python,
            "-m",
            "coa_trainer",
            "train",
            "--stage",
            "pretrain",
            "--config",
            str(config),
            "--run-dir",
            str(run),
            *extra,
        ]

    def run(
        self, config: Path, run: Path, *extra: str, stdout=subprocess.DEVNULL, timeout: float = 900
    ) -> tuple[int | None, float]:
        t0 = time.time()
        p = subprocess.run(
            self.argv(config, run, *extra),
            cwd=self.repo,
            env=self.env,
            stdout=stdout,
            stderr=subprocess.DEVNULL,
            timeout=timeout,
        )
        return p.returncode, time.time() - t0

    def interrupted(self, config: Path, run: Path, after_checkpoint: int = 2) -> None:
        """A stage SIGKILLed right after its checkpoint of step `after_checkpoint` (a resumable, unfinished stage)."""
        p = subprocess.Popen(
            self.argv(config, run),
            cwd=self.repo,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert p.stdout is not None
        for line in p.stdout:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("type") == "checkpoint" and e.get("step") == after_checkpoint:
                break
        p.send_signal(signal.SIGKILL)
        p.wait()


def checkpoints(run: Path) -> list[Path]:
    d = run / "stages" / "pretrain" / "checkpoints"
    return sorted(d.iterdir()) if d.is_dir() else []


def attack_pickle(t: Trainer) -> dict:
    run = t.work / "pickle"
    config = t.config("pickle")
    t.interrupted(config, run)
    marker = t.work / "pickle-ran-code"
    planted = run / "stages" / "pretrain" / "checkpoints" / "step-000003.pt"
    planted.write_bytes(pickle.dumps(RunsCommand(f"touch {marker}")))
    code, secs = t.run(config, run, "--resume")
    ran = marker.exists()
    evs = events(run)
    return {
        "attack": "a pickle planted as the newest checkpoint, then --resume",
        "held": not ran,
        "figures": f"code ran: {'yes' if ran else 'no'}; resume exit {code}, {finished(evs)[-1:] or ['no stage_finished']}"
        f"{'; ' + last_error(evs) if last_error(evs) else ''}",
    }


def attack_lr(t: Trainer, token: str) -> dict:
    run = t.work / f"lr-{token}"
    config = t.config(f"lr-{token}", {"lr": "RAW"}, raw=token)
    code, secs = t.run(config, run)
    evs = events(run)
    status = finished(evs)
    refused = code == 2 and not status and (last_error(evs) or "").startswith("bad_config")
    return {
        "attack": f'`"lr": {token}` in the run config',
        "held": refused,
        "figures": f"exit {code} after {secs:.1f} s; {'stage_finished ' + status[-1] if status else last_error(evs) or 'no event'}",
    }


def attack_full_stdout(t: Trainer) -> dict:
    run = t.work / "full"
    config = t.config("full")
    with open("/dev/full", "w") as full:
        code, secs = t.run(config, run, stdout=full)
    evs = events(run)
    status = finished(evs)
    return {
        "attack": "`train … > /dev/full`",
        "held": code == 0 and status == ["ok"],
        "figures": f"exit {code} after {secs:.1f} s; {'stage_finished ' + status[-1] if status else last_error(evs) or 'no event'}",
    }


def attack_resume_finished(t: Trainer) -> dict:
    run = t.work / "finished"
    config = t.config("finished")
    t.run(config, run)
    final = run / "stages" / "pretrain" / "final"
    before = {p.name: p.stat().st_mtime_ns for p in final.iterdir()} if final.is_dir() else {}
    n_before = len(finished(events(run)))
    code, secs = t.run(config, run, "--resume")
    after = {p.name: p.stat().st_mtime_ns for p in final.iterdir()} if final.is_dir() else {}
    added = len(finished(events(run))) - n_before
    rewritten = before != after
    return {
        "attack": "`--resume` of a finished stage",
        "held": code == 0 and not rewritten and added == 0,
        "figures": f"exit {code} after {secs:.1f} s; final/ {'rewritten' if rewritten else 'untouched'}; "
        f"{added} more stage_finished",
    }


def attack_damaged_checkpoint(t: Trainer) -> dict:
    run = t.work / "cut"
    config = t.config("cut")
    t.interrupted(config, run)
    newest = checkpoints(run)[-1]
    target = (
        max((p for p in newest.rglob("*") if p.is_file()), key=lambda p: p.stat().st_size)
        if newest.is_dir()
        else newest
    )
    target.write_bytes(target.read_bytes()[: max(1, target.stat().st_size // 3)])
    code, secs = t.run(config, run, "--resume")
    evs = events(run)
    status = finished(evs)
    # A warning that names the damaged file (the trainer's word for what it did with it).
    said = next(
        (
            e.get("message", "")
            for e in evs
            if e.get("type") == "log" and e.get("level") == "warning" and newest.name in str(e.get("message", ""))
        ),
        None,
    )
    return {
        "attack": "the newest checkpoint damaged (cut to a third), then --resume",
        "held": code == 0 and status[-1:] == ["ok"] and said is not None,
        "figures": f"{newest.name} cut; exit {code}; {'stage_finished ' + status[-1] if status else last_error(evs) or 'no event'}"
        f"; {'said: ' + said[:120] if said else 'no event names the damaged checkpoint'}",
    }


def attack_events_link(t: Trainer) -> dict:
    run = t.work / "linked"
    run.mkdir(parents=True)
    outside = t.work / "outside.txt"
    outside.write_text("not the run's\n")
    (run / "events.jsonl").symlink_to(outside)
    config = t.config("linked")
    code, secs = t.run(config, run)
    grew = outside.read_text() != "not the run's\n"
    return {
        "attack": "`events.jsonl` a symbolic link to a file outside the run",
        "held": not grew,
        "figures": f"the outside file {'was appended to' if grew else 'untouched'}; exit {code}",
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", type=Path, default=ROOT)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--only", default=None, help="comma list of: pickle, lr, full, resume, damaged, link")
    args = ap.parse_args()
    wanted = set(args.only.split(",")) if args.only else None
    rows = []
    with tempfile.TemporaryDirectory(prefix="coa-trainer-attacks-") as d:
        t = Trainer(args.repo.resolve(), Path(d))
        plan = [
            ("pickle", lambda: attack_pickle(t)),
            ("lr", lambda: attack_lr(t, "1e999")),
            ("lr", lambda: attack_lr(t, "1e300")),
            ("full", lambda: attack_full_stdout(t)),
            ("resume", lambda: attack_resume_finished(t)),
            ("damaged", lambda: attack_damaged_checkpoint(t)),
            ("link", lambda: attack_events_link(t)),
        ]
        for name, fn in plan:
            if wanted and name not in wanted:
                continue
            try:
                row = fn()
            except Exception as e:  # noqa: BLE001 — the bench reports an attack it could not replay, and goes on
                row = {"attack": name, "held": False, "figures": f"could not replay: {type(e).__name__}: {e}"[:300]}
            row["figures"] = row["figures"].replace(f"{t.work}/", "").replace(str(t.work), "")
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
