"""Symbolic links in a run directory. One rule: nothing in a run directory may be a symbolic link that leads out of
it (or nowhere: a loop). A link that stays inside is followed.

Why: the trainer appends to events.jsonl, truncates the lock file, replaces checkpoints and final/, cuts the rollouts
file back on resume — through a link each of those lands on the link's target, so a link planted in a shared or
copied run (events.jsonl → ~/.bashrc) would make the next `train --resume` write into any file the user can write.
Reading its own state through one (a checkpoint, events.jsonl) would let the link choose what the trainer resumes
from. Every command that writes into a run directory (train, pipeline, collect, eval) checks the whole directory when
it starts (`check_run_dir`) and refuses with `bad_run_dir`, naming the link and where it leads; the events file and
the lock are checked again where they are opened (`check_inside`). To share a model or data between runs, point the
run config at it (`stages.<stage>.init_from`, `model.path`, `benchmark.data_dir`) instead of linking it in."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from .errors import CoaError


class RunDirError(CoaError):
    """A symbolic link in the run directory leads out of it."""

    def __init__(self, message: str):
        super().__init__(message, "bad_run_dir")


def _inside(root: str, target: str) -> bool:
    return target == root or target.startswith(root.rstrip(os.sep) + os.sep)


def link_problem(root: str, link: Path) -> str | None:
    """Why the symbolic link `link` (inside the run directory whose real path is `root`) may not be followed."""
    try:
        os.stat(link)
    except OSError as e:
        if e.errno == errno.ELOOP:
            return f"{link} is a symbolic link that loops"
    target = os.path.realpath(link)
    if _inside(root, target):
        return None
    return (
        f"{link} is a symbolic link to {os.readlink(link)}, which leads out of the run directory {root}; the "
        "trainer reads its state and writes only inside it. Replace the link with the real file or directory "
        "(to share a model or data between runs, set stages.<stage>.init_from, model.path or benchmark.data_dir)"
    )


def check_inside(run_dir: Path, path: Path) -> None:
    """RunDirError if a link on the way from `run_dir` to `path` (the path itself included) leads out of it."""
    root = os.path.realpath(run_dir)
    try:
        parts = path.relative_to(run_dir).parts
    except ValueError:
        return  # not under the run directory at all: a path the run config chose (benchmark.data_dir …)
    cur = run_dir
    for part in parts:
        cur = cur / part
        if cur.is_symlink() and (why := link_problem(root, cur)):
            raise RunDirError(why)


# Folders another program owns and the trainer neither reads nor writes itself: W&B's offline runs (`<dir>/wandb`,
# logging.wandb), where W&B links `logs/debug-core.log` to its own log in ~/.cache/wandb on purpose.
FOREIGN_DIRS = frozenset({"wandb"})


def check_run_dir(run_dir: Path) -> None:
    """RunDirError for the first link anywhere in the run directory that leads out of it (not following links while
    walking: a link that stays inside is checked once, where it is), other programs' folders (FOREIGN_DIRS) aside."""
    if not run_dir.is_dir():
        return
    root = os.path.realpath(run_dir)
    for top, dirs, files in os.walk(run_dir, followlinks=False):
        dirs[:] = [d for d in dirs if d not in FOREIGN_DIRS or (Path(top) / d).is_symlink()]
        for name in sorted(dirs + files):
            p = Path(top) / name
            if p.is_symlink() and (why := link_problem(root, p)):
                raise RunDirError(why)
