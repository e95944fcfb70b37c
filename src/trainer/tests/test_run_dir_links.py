"""Symbolic links in a run directory (base/rundir.py): a link that leads out of the run directory is refused by
every command that writes into it — where it would write through the link (events.jsonl, the lock, checkpoints,
final/, data/, eval/, the pipeline's files, a collection) — with a clear error naming the link, and its target is
left as it was; a link that stays inside the run directory is followed."""

from __future__ import annotations

import json
import os

import pytest

from coa_trainer.base.rundir import RunDirError, check_run_dir
from coa_trainer.cli import parse_command, run_command as handle
from conftest import TINY, read_events

OUTSIDE_TEXT = "export PATH=/usr/bin\n"


def run_command(argv: list[str]) -> int:
    """The command's handler in this process (its exit status), as `python -m coa_trainer` would call it."""
    return handle(parse_command(argv))


# (command, link inside the run directory, the link's target is a file (else a directory))
CASES = [
    ("train", "events.jsonl", True),
    ("train", ".coa-lock", True),
    ("train", "stages/pretrain/checkpoints", False),
    ("train", "stages/pretrain/final", False),
    ("train", "stages/pretrain", False),
    ("train", "data", False),
    ("pipeline", "pipeline", False),
    ("pipeline", "events.jsonl", True),
    ("eval", "eval", False),
    ("collect", "stages/collect", False),
]


@pytest.mark.parametrize(("command", "link", "is_file"), CASES, ids=[f"{c}-{n}" for c, n, _ in CASES])
def test_a_link_leading_out_of_the_run_directory_is_refused(tmp_path, capsys, command, link, is_file):
    outside = tmp_path / "elsewhere" / ("bashrc" if is_file else "dir")
    if is_file:
        outside.parent.mkdir()
        outside.write_text(OUTSIDE_TEXT)
    else:
        outside.mkdir(parents=True)
    run = tmp_path / "run"
    (run / link).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(outside, run / link)
    cfg = tmp_path / "run.json"
    cfg.write_text(json.dumps(TINY))
    argv = {
        "train": ["train", "--stage", "pretrain"],
        "pipeline": ["pipeline", "--stages", "pretrain"],
        "eval": ["eval", "--mode", "plain"],
        "collect": ["collect"],
    }[command]

    status = run_command([*argv, "--config", str(cfg), "--run-dir", str(run)])

    out, err = capsys.readouterr()
    assert status == 2
    said = err if link == "events.jsonl" else next(e["message"] for e in read_events(run) if e["type"] == "error")
    assert f"{run / link} is a symbolic link to {outside}" in said and "leads out of the run directory" in said, said
    if link != "events.jsonl":
        assert [e["code"] for e in read_events(run) if e["type"] == "error"] == ["bad_run_dir"]
    if is_file:
        assert outside.read_text() == OUTSIDE_TEXT, "written through the link"
    else:
        assert list(outside.iterdir()) == [], "written through the link"
    assert "Traceback" not in out + err


def test_links_that_stay_inside_are_followed_and_loops_are_refused(tmp_path):
    run = tmp_path / "run"
    (run / "stages" / "real").mkdir(parents=True)
    os.symlink(run / "stages" / "real", run / "stages" / "alias")
    os.symlink("real", run / "stages" / "relative")
    os.symlink(run / "not-yet", run / "dangling-inside")
    check_run_dir(run)
    os.symlink("loop", run / "loop")
    with pytest.raises(RunDirError, match="loops"):
        check_run_dir(run)


def test_a_wandb_folder_keeps_its_own_link_out_but_cannot_be_a_link_out(tmp_path):
    """W&B's offline run (logging.wandb, under the run directory by default) links logs/debug-core.log to W&B's own
    log in ~/.cache on purpose; the trainer never reads or writes that folder, so the link is W&B's business. The
    folder itself leading out of the run directory is still refused."""
    run = tmp_path / "run"
    logs = run / "wandb" / "offline-run-20261128_120000-run-pretrain" / "logs"
    logs.mkdir(parents=True)
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "core-debug.log").write_text("")
    os.symlink(tmp_path / "cache" / "core-debug.log", logs / "debug-core.log")
    check_run_dir(run)
    os.symlink(tmp_path / "cache", run / "stages")  # the same link where the trainer writes is refused
    with pytest.raises(RunDirError, match="leads out of the run directory"):
        check_run_dir(run)
    os.remove(run / "stages")
    elsewhere = tmp_path / "elsewhere-wandb"
    (run / "wandb").rename(elsewhere)
    os.symlink(elsewhere, run / "wandb")
    with pytest.raises(RunDirError, match="wandb is a symbolic link"):
        check_run_dir(run)
