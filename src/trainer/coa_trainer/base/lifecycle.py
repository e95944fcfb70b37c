"""Process lifecycle of the trainer: signals from the first line, children that die with their parent, and
one trainer per run directory. Standard library only — `__main__` imports this before anything heavy.

- `cancel_during_startup()`: from the first line of `python -m coa_trainer`, SIGTERM raises StartupCancelled (a
  BaseException, so no `except Exception` swallows it) until a command installs its own handler — a stage installs
  its StopControl once its model is loaded (stage_setup). So SIGTERM during imports, data preparation or model
  loading still ends in `stage_finished` (status cancelled) and exit 130, as the docs promise.
- `StopControl` (`STOP`): a running stage's stop — at once inside the sections that can be dropped (a step before its
  first optimiser update, an evaluation), at the next check elsewhere.
- `forgive_std_streams()`: stdout and stderr that no write error stops (a full disk, a closed pipe): events.jsonl in
  the run directory is the record.
- `die_with_parent()`: a child started with COA_PARENT_PID in its environment asks Linux for SIGTERM when its parent
  dies (prctl PR_SET_PDEATHSIG); a SIGKILLed pipeline no longer leaves its stage training on. The environment server
  (Node) gets the same through `--parent-pid` (src/cli/env.ts).
- `RunLock`: an exclusive `flock` on runs/<id>/.coa-lock. The kernel drops it when its holder dies, so a lock file left by
  a dead trainer is simply taken over (its recorded pid is only for the message). The pipeline passes its lock down to
  its stage (an inherited descriptor, COA_RUN_LOCK): a stage still finishing after its pipeline was killed keeps the
  directory locked until it exits, and a `--resume` started meanwhile is refused instead of racing it.
- `run_and_exit(main)`: a process that joined a torch process group ends with os._exit once its output is flushed
  (the interpreter's finalization is where gloo's worker threads can abort a rank that succeeded; see there).
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import re
import signal
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

LOCK_NAME = ".coa-lock"
CANCELLED_EXIT = 130  # a command stopped by TERM, INT or HUP (after its checkpoint)
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


class StartupCancelled(BaseException):
    """A stop signal (TERM, INT, HUP) before the command took over signal handling."""


class RunLockBusy(RuntimeError):
    """Another trainer holds the run directory."""


# ---------------------------------------------------------------- signals from the first line


def _raise_cancelled(signum: int, _frame: FrameType | None) -> None:
    raise StartupCancelled(signal.Signals(signum).name)


# What stops a trainer: kill/Cancel (TERM), Ctrl-C (INT), a closed terminal (HUP). Each one checkpoints and ends
# the stage `cancelled`; a second one while the checkpoint is written only asks again (the handler sets a flag).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def cancel_during_startup() -> None:
    for s in STOP_SIGNALS:
        signal.signal(s, _raise_cancelled)


def on_stop_signals(handler: Callable[[int, Any], None]) -> dict[signal.Signals, Any]:
    """Route every stop signal to `handler`; returns the handlers it replaced (to put back)."""
    old = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    for s in STOP_SIGNALS:
        signal.signal(s, handler)
    return old


# ---------------------------------------------------------------- a stage's stop: at once where nothing is lost


class StageCancelled(StartupCancelled):
    """A stop signal inside an interruptible section of a stage (StopControl): the section's work is dropped, and
    what the stage holds is still the last completed step's."""


class StopControl:
    """How a running stage takes TERM/INT/HUP. The signal is always recorded (`requested`); inside an interruptible
    section it also raises StageCancelled at once, so a stop never waits for a rollout, a forward/backward pass or an
    evaluation to end (the step's work is simply done again after --resume). A section is interruptible while losing
    it costs nothing: a step until its first optimiser update (`commit`, from the optimiser's step pre-hook), an
    evaluation. Elsewhere — an update in progress, a checkpoint being written, an event — the signal only sets the
    flag and the loop stops at its next check, a moment later.

    `shielded()` marks code that must not be cut even inside a section (a CUDA graph capture: cut, it leaves the
    stream unusable for the checkpoint that follows); a stop waits for its end. Only a single process raises: under
    torchrun a rank leaving a step early would leave the others waiting in a collective forever, so there the ranks
    agree at step boundaries (DistInfo.any). `phase` is what the stage is doing, for the stop's log line."""

    def __init__(self) -> None:
        self.reset()

    def reset(self, raises: bool = True) -> None:
        self.requested: str | None = None  # the first stop signal's name
        self.raises = raises
        self.phase: tuple[str, int] | None = None  # (what, step): what the stage is doing now
        self.stopped_in: tuple[str, int] | None = None  # the phase the first stop signal came in
        self._open = False  # inside an interruptible section that has not committed
        self._shield = 0
        self._raised = False  # this section raised already (a second signal while it unwinds only asks again)

    def install(self, raises: bool = True) -> None:
        self.reset(raises)
        on_stop_signals(self._on_signal)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.requested is None:
            self.requested, self.stopped_in = signal.Signals(signum).name, self.phase
        # Never out of our own bookkeeping (a section half entered or half left would stay open): the flag is set,
        # and the section's end or the loop's next check sees it.
        if frame is None or frame.f_code not in _OWN_CODE:
            self._raise_if_due()

    def _raise_if_due(self) -> None:
        if self.requested and self._open and not self._shield and not self._raised and self.raises:
            self._raised = True
            raise StageCancelled(self.requested)

    def interruptible(self) -> "_Section":
        """A section a stop ends at once with StageCancelled (raised out of it, also when one came before it)."""
        return _Section(self)

    def commit(self) -> None:
        """The state is about to change (an optimiser update): a stop asked for before this still drops the step;
        from here to the section's end it waits."""
        try:
            self._raise_if_due()
        finally:
            self._open = False

    def shielded(self) -> "_Shield":
        return _Shield(self)


class _Section:
    def __init__(self, ctl: StopControl) -> None:
        self.ctl, self.outer = ctl, (False, False)

    def __enter__(self) -> None:
        c = self.ctl
        self.outer = (c._open, c._raised)
        c._open, c._raised = True, False
        try:
            c._raise_if_due()
        except StageCancelled:
            c._open, c._raised = self.outer  # __exit__ is not called when __enter__ raises
            raise

    def __exit__(self, *exc: object) -> None:
        self.ctl._open, self.ctl._raised = self.outer


class _Shield:
    def __init__(self, ctl: StopControl) -> None:
        self.ctl = ctl

    def __enter__(self) -> None:
        self.ctl._shield += 1

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        self.ctl._shield -= 1
        if kind is None:
            self.ctl._raise_if_due()


_OWN_CODE = {
    f.__code__
    for f in (
        StopControl._raise_if_due,
        StopControl.commit,
        _Section.__enter__,
        _Section.__exit__,
        _Shield.__enter__,
        _Shield.__exit__,
    )
}


STOP = StopControl()  # the process's one stage (shielded() is reached from deep in the rollout engine)


# ---------------------------------------------------------------- a reader that went away


def stdout_gone() -> None:
    """Our stdout's reader is gone (the editor reloaded, `| tee` ended, the demo was interrupted): what we print
    from now on goes nowhere instead of failing. Events still reach the run's events.jsonl, so training goes on
    and nothing a reader could want is lost."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


class _ForgivingStream:
    """sys.stdout or sys.stderr that no write error can stop (a full disk, a closed pipe or descriptor): the stream
    is pointed at /dev/null from the first failure on and the write counts as done. What the trainer says there is
    an echo or a courtesy — events.jsonl in the run directory is the record — so losing it must not lose the stage.
    Everything else (fileno, isatty, encoding …) is the wrapped stream's."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except (OSError, ValueError):
            self._lost()
            return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except (OSError, ValueError):
            self._lost()

    def _lost(self) -> None:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
            self._stream.flush()  # what failed is still buffered: it goes to /dev/null now, not at exit (status 120)
        except (OSError, ValueError):  # closed: nothing is written to it any more anyway
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def forgive_std_streams() -> None:
    """From here on a write error on stdout or stderr is not fatal (see _ForgivingStream)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name, None)
        if stream is not None and not isinstance(stream, _ForgivingStream):
            setattr(sys, name, _ForgivingStream(stream))


def startup_step(run_dir: Path, label: str, resume: bool) -> int:
    """The step a stage cancelled during start-up stands at: its newest checkpoint's when resuming, else 0."""
    if not resume:
        return 0
    ckpts = run_dir / "stages" / label / "checkpoints"
    steps = [
        int(m.group(1))
        for p in (ckpts.iterdir() if ckpts.is_dir() else ())
        if (m := re.match(r"^step-(\d{6,})\.(?:safetensors|sharded)$", p.name))
    ]  # model/checkpoint.py NAME
    return max(steps, default=0)


# ---------------------------------------------------------------- children die with their parent


def die_with_parent() -> None:
    """If COA_PARENT_PID is set: SIGTERM to us when our parent exits (Linux), and at once if it already has."""
    parent = os.environ.get("COA_PARENT_PID")
    if not parent or not parent.isdigit():
        return
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        except (OSError, AttributeError):  # no prctl: the parent's own cleanup is all there is
            pass
    # The parent may have died before prctl: then nobody will send the signal. Under torchrun our parent is the
    # launcher (not COA_PARENT_PID), which is fine as long as the pipeline is alive.
    if os.getppid() != int(parent) and not pid_alive(int(parent)):
        os.kill(os.getpid(), signal.SIGTERM)


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for a trainer child that must die with this process."""
    return {**os.environ, "COA_PARENT_PID": str(os.getpid()), **(extra or {})}


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (exited, not reaped yet) is gone for our purposes
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


# ---------------------------------------------------------------- one trainer per run directory


class RunLock:
    def __init__(self, path: Path, fd: int, inherited: bool = False):
        self.path, self.fd, self.inherited = path, fd, inherited

    @classmethod
    def acquire(cls, run_dir: Path, command: str) -> RunLock:
        """Lock `run_dir` for this process, or raise RunLockBusy naming the holder. A lock passed down by the
        pipeline (COA_RUN_LOCK naming this directory's lock file) is ours already."""
        import fcntl

        from .rundir import check_inside

        run_dir.mkdir(parents=True, exist_ok=True)
        check_inside(run_dir, run_dir / LOCK_NAME)  # a link to a file outside would be truncated (base/rundir.py)
        path = (run_dir / LOCK_NAME).resolve()
        if os.environ.get("COA_RUN_LOCK") == str(path):
            return cls(path, -1, inherited=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(fd)
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            raise RunLockBusy(_busy_message(run_dir, path)) from None
        # Ours now — whatever a dead holder left in the file is stale: replace it.
        info = json.dumps({"pid": os.getpid(), "command": command, "since": time.time()}).encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, info + b"\n", 0)
        return cls(path, fd)

    def child_env(self) -> dict[str, str]:
        """Environment entries telling a child that it runs under this lock (pass `self.fd` in pass_fds too)."""
        return {"COA_RUN_LOCK": str(self.path)}

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # closing the last descriptor drops the flock
            self.fd = -1


def _busy_message(run_dir: Path, path: Path) -> str:
    try:
        info = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        info = {}
    pid = info.get("pid")
    who = f"pid {pid}, `coa_trainer {info.get('command', '?')}`" if pid else "another process"
    if isinstance(pid, int) and not pid_alive(pid):
        who += " — it has exited, but a process it started (a stage saving its checkpoint) still holds the lock"
    return (
        f"run directory {run_dir} is in use by another trainer ({who}); wait for it to finish or stop it "
        f"(one trainer per run directory: two would write the same events.jsonl and checkpoints)"
    )


# ---------------------------------------------------------------- `python -m coa_trainer.base.lifecycle MODULE ARGS…`


def _run_module_dying_with_parent() -> None:
    """Runs MODULE as __main__ with ARGS after die_with_parent(): how the pipeline starts torchrun's launcher, which
    is not our code and so cannot ask for the parent-death signal itself."""
    import runpy

    die_with_parent()
    module, *rest = sys.argv[1:]
    sys.argv = [module, *rest]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


# Set by distributed.DistInfo.init once this process has joined a process group (see run_and_exit).
_skip_finalization = False


def skip_finalization_at_exit() -> None:
    global _skip_finalization
    _skip_finalization = True


def run_and_exit(main: Callable[[], None]) -> None:
    """Runs `main` and exits with its status. A process that joined a process group ends with os._exit once its output
    is flushed, skipping the interpreter's finalization.

    Why: gloo's worker threads release a finished collective's work object some time after the caller's wait() has
    returned, and destroy_process_group does not stop them while anything (an FSDP module's mesh) still holds the
    group. If that release drops the last reference to a tensor Python has let go of, the thread takes the GIL to free
    the Python object; once Py_FinalizeEx has begun, take_gil ends the thread with pthread_exit, whose unwinding through
    the work's noexcept destructor calls std::terminate: "terminate called without an active exception", SIGABRT, and
    torchrun reports the whole run failed after it succeeded. Seen in 3 of 94 two-rank runs of tests/fsdp_worker.py
    under OMP_NUM_THREADS=1 (core dump: ~AsyncAllgatherWork -> decref_pyobject -> take_gil -> pthread_exit ->
    terminate, the main thread in Py_FinalizeEx). PyTorch's own attempt to destroy groups before finalization
    (pytorch#179291) was abandoned. Everything a stage writes is closed before `main` returns; nothing of ours needs
    finalization (no atexit handlers). Lives here, standard library only, because `__main__` imports it while a SIGTERM
    still cancels the start (an import of torch there would turn that cancel into a traceback)."""
    try:
        main()
        code: Any = 0
    except SystemExit as e:
        code = e.code
    # A stopped command (130) is done once its events are written: the interpreter's teardown of torch and
    # transformers (0.7–0.8 s of CPU, 3–8 s of wall time on a loaded machine) would only delay the exit its user waits
    # for. The atexit handlers still run (libraries' own flushes); the modules' teardown is skipped.
    stopped = code == CANCELLED_EXIT
    if not _skip_finalization and not stopped:
        sys.exit(code)
    if code is None:
        code = 0
    elif not isinstance(code, int):  # sys.exit("message") prints the message and exits 1
        print(code, file=sys.stderr)
        code = 1
    import logging

    if not _skip_finalization:
        import atexit

        atexit._run_exitfuncs()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    _run_module_dying_with_parent()
