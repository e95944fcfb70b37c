"""TRL's GRPOTrainer in CoA Studio: a reward function that grades completions with the CoA grader, and a
TrainerCallback that streams TRL's logs and the graded completions into a CoA run directory, so the live panel, the
Runs view, the alerts and the trajectory notebook work on a TRL run as on one of ours. The three-line change to an
existing script (docs/integrations.md):

    from coa_trainer.integrations.trl import CoaRun
    coa = CoaRun("runs/my-grpo")                                              # grader: COA_ENV_URL (grader.py)
    trainer = GRPOTrainer(..., reward_funcs=[coa.reward, ...], callbacks=[coa.callback])

What is written (rank 0 only), following TRL 1.16.0's interfaces (trl/trainer/grpo_trainer.py
`_calculate_rewards`: reward functions get prompts, completions, completion_ids, every dataset column, trainer_state,
log_metric; `log`: the averaged `_metrics` reach `TrainerCallback.on_log`):
- runs/<id>/events.jsonl: run_started (on_train_begin), metrics + progress per on_log (TRL's numeric logs, and the
  reward's own `coa/*` values logged through log_metric; the end-of-training summary as a log line),
  alerts from the core (POST /v1/alerts), a checkpoint per TRL save (`<output_dir>/checkpoint-N`), stage_finished.
- runs/<id>/stages/<stage>/rollouts.coa.jsonl: one record per completion with the grader's breakdown as `reward`,
  `meta` {run, stage, step, sample, group} (TRL repeats each prompt num_generations times: a group), token ids;
  beside it their line index (rollouts.index.jsonl, base/line_index.py).
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any, Callable

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from ..base.runstart import run_started
from ..env.alerts import AlertMonitor
from ..rollout.metrics import graded_sums, graded_values
from ..base import line_index
from ..base.events import EventWriter
from ..contracts.schemas import dialect_table
from .grader import golden_list, grader, reward_settings
from ..contracts.record import RewardBreakdown, TrajectoryRecord
from ..data.records import JsonRecord, RecordTokens, trajectory_record
from ..env.client import EnvClient
from ..contracts.events import (
    AlertEvent,
    CheckpointEvent,
    LogEvent,
    MetricsEvent,
    ProgressEvent,
    SampleEvent,
    StageFinishedEvent,
)

# TRL's metric names → the signals of the core's alert rules (src/core/alerts.ts). The coa/* ones are this module's.
TRL_SIGNALS = {
    "coa/tc": "tc",
    "coa/all_wrong_groups": "all_wrong_groups",
    "coa/format_error_rate": "format_error_rate",
    "reward": "reward_mean",
    "completions/mean_length": "response_len",
    "tools/failure_frequency": "tool_failure_rate",
    # TRL's share of groups whose summed reward has zero std: the groups GRPO spends compute on for no gradient
    "frac_reward_zero_std": "zero_variance_groups",
}
GOLDEN_COLUMNS = ("golden_answers", "answers", "answer", "ground_truth", "solution")


def _text(x: Any) -> str:
    """A prompt or completion as text: a string, or the contents of a conversational message list."""
    if isinstance(x, str):
        return x
    if isinstance(x, list):
        return "".join(
            m.get("content", "") if isinstance(m.get("content"), str) else "" for m in x if isinstance(m, dict)
        )
    return str(x)


def _question(prompt: Any) -> str:
    """The question of a prompt: its last user message, taken out of the dataset's instructions after the marker the
    core knows (AutoCoA's "Now, please answer the user's question below:", Search-R1's "Question:"; schemas/
    dialects.json `question_markers`, as `coa convert` reads verl parquets) — not the whole instruction."""
    text = _text(prompt)
    if isinstance(prompt, list):
        users = [m for m in prompt if isinstance(m, dict) and m.get("role") == "user"]
        if users:
            text = _text([users[-1]])
    for marker in dialect_table().question_markers:
        at = text.rfind(marker)
        if at >= 0:
            return text[at + len(marker) :].strip()
    return text.strip()


class CoaRun:
    """One TRL run seen by CoA Studio. `env` defaults to the grader of COA_ENV_URL."""

    def __init__(
        self,
        run_dir: str | Path,
        *,
        stage: str = "trl",
        scheme: str | None = None,
        params: dict | None = None,
        dialect: str | None = None,
        run_id: str | None = None,
        thresholds: dict | None = None,
        env: EnvClient | None = None,
        sample_every: int = 1,
        echo: Any = None,
    ):
        self.run_dir = Path(run_dir)
        self.stage = stage
        self.scheme, self.params, _ = reward_settings(scheme, params, None)
        self.dialect = dialect
        self.env = env
        self.sample_every = sample_every
        self.writer: EventWriter | None = None
        self._run_id = run_id
        self._echo = echo
        self.monitor: AlertMonitor | None = None
        self._thresholds = dict(thresholds or {})
        self.rollouts = self.run_dir / "stages" / stage / "rollouts.coa.jsonl"
        self.reward = self._make_reward()
        self.callback = _Callback(self)

    def grader(self) -> Any:
        if self.env is None:
            self.env = grader()
        return self.env

    def _open(self) -> EventWriter:
        if self.writer is None:
            self.writer = EventWriter(self.run_dir, self._run_id, echo=self._echo)
        return self.writer

    @property
    def grade_run(self) -> str:
        return f"{self._open().run}-{self.stage}"[:128]

    # ------------------------------------------------------------ reward
    def _make_reward(self) -> Callable[..., list[float]]:
        run = self

        def coa_reward(
            prompts: list,
            completions: list,
            completion_ids: list | None = None,
            trainer_state: Any = None,
            log_metric: Callable[[str, float], None] | None = None,
            **columns: Any,
        ) -> list[float]:
            """The CoA grader's total per completion (TRL: `rewards/coa_reward/*`)."""
            step = (getattr(trainer_state, "global_step", 0) or 0) + 1  # logged by on_log at the end of this step
            golden = golden_answers(columns)
            questions = columns.get("question") or [_question(p) for p in prompts]
            # each record's parts: built without its tokens to be graded, then whole with its grade
            pending: list[partial[JsonRecord]] = []
            groups: dict[str, int] = {}
            group_of: list[str] = []  # each completion's group (its prompt's), as written in its record's meta
            for i, (p, c) in enumerate(zip(prompts, completions)):
                key = json.dumps(p, sort_keys=True, default=str)
                g = groups.setdefault(key, len(groups))
                group_of.append(f"{step}-g{g}")
                pending.append(
                    partial(
                        trajectory_record,
                        f"{run.stage}-{step}-{i}",
                        str(questions[i]),
                        _text(c),
                        golden_answers=golden[i],
                        dialect=run.dialect or None,
                        tokens=RecordTokens([int(t) for t in completion_ids[i]])
                        if completion_ids is not None
                        else None,
                        meta={
                            "run": run._open().run,
                            "stage": run.stage,
                            "step": step,
                            "sample": i,
                            "group": group_of[-1],
                        },
                    )
                )
            breakdowns = run.grader().grade(
                [make(tokens=None) for make in pending],
                scheme=run.scheme,
                params=run.params or None,
                run=run.grade_run,
            )
            records = [make(reward=b) for make, b in zip(pending, breakdowns)]
            stats = _step_stats(breakdowns, group_of)
            if log_metric is not None:
                for k, v in stats.items():
                    log_metric(f"coa/{k}", v)
            if getattr(trainer_state, "is_world_process_zero", True):
                run._write_rollouts(step, records)
            return [float(b.total) for b in breakdowns]

        return coa_reward

    def _write_rollouts(self, step: int, records: list[dict]) -> None:
        line_index.append_step(self.rollouts, records)
        if self.sample_every and step % self.sample_every == 0 and records:
            self._open().emit(
                SampleEvent(stage=self.stage, step=step, record=TrajectoryRecord.model_validate(records[0]))
            )


def golden_answers(columns: dict[str, list]) -> list[list[str]]:
    """Each completion's golden answers from the dataset's columns, as TRL passes them: a FlashRAG / Search-R1 column
    (`golden_answers`, `answers`, …) or verl's `reward_model.ground_truth` (AutoCoA's and Search-R1's published
    parquets loaded with `datasets`). No column: an error, not a reward of 0 for every completion."""
    key = next((k for k in GOLDEN_COLUMNS if k in columns), None)
    if key is not None:
        return [golden_list(v) for v in columns[key]]
    if "reward_model" in columns:
        out = []
        for i, rm in enumerate(columns["reward_model"]):
            if not isinstance(rm, dict) or "ground_truth" not in rm:
                raise ValueError(
                    f"coa_reward: row {i} of the batch has reward_model {rm!r} without 'ground_truth' "
                    "(verl's layout is reward_model: {'ground_truth': …, 'style': 'rule'})"
                )
            out.append(golden_list(rm["ground_truth"]))
        return out
    shown = ", ".join(sorted(columns)) or "none"
    raise ValueError(
        f"coa_reward: the dataset has no golden answers (columns: {shown}); add a "
        f"{' / '.join(GOLDEN_COLUMNS)} column or verl's reward_model.ground_truth — without them every "
        f"reward would be 0"
    )


def _step_stats(breakdowns: list[RewardBreakdown], groups: list[str]) -> dict[str, float]:
    """The agent metrics of a TRL step, computed where every other caller computes them (rollout/metrics.py)."""
    values = graded_values(graded_sums(breakdowns, groups))
    return {
        k: float(v)
        for k in ("em", "f1", "tc", "tp", "format_error_rate", "all_wrong_groups")
        if (v := values.get(k)) is not None
    }


class _Callback(TrainerCallback):
    """TRL/transformers callback: run_started, metrics/progress per log, alerts, stage_finished."""

    def __init__(self, run: CoaRun):
        self.run = run
        self.started = 0.0
        self.last_checkpoint: Path | None = None

    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: object
    ) -> None:
        import time

        self.started = time.time()
        if not state.is_world_process_zero:
            return
        config = {
            "engine": "trl",
            "output_dir": str(args.output_dir),
            "learning_rate": args.learning_rate,
            "scheme": self.run.scheme,
        }
        for key in ("num_generations", "max_completion_length", "beta", "loss_type"):
            if hasattr(args, key):
                config[key] = getattr(args, key)
        # TRL's trainer has loaded a checkpoint's state before this call: a resumed run starts past step 0
        run_started(
            self.run._open(),
            self.run.stage,
            config,
            int(state.max_steps),
            device=str(args.device),
            world_size=int(args.world_size),
            resumed_from=int(state.global_step) or None,
        )

    def on_log(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        logs: dict | None = None,
        **kwargs: object,
    ) -> None:
        import math
        import time

        if not state.is_world_process_zero or not logs:
            return
        values = {
            k: (float(v) if math.isfinite(v) else None)
            for k, v in logs.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)
        }
        if not values:
            return
        w = self.run._open()
        step = int(state.global_step)
        if "train_runtime" in values:
            # transformers' end-of-training summary (train_runtime, train_loss averaged over the run, …), logged at
            # the last step's number after that step's own log: the run's summary, not a second point of that step
            said = ", ".join(f"{k} {v:.6g}" for k, v in values.items() if v is not None)
            w.emit(LogEvent(level="info", message=f"{self.run.stage}: training finished: {said}"))
            return
        w.emit(MetricsEvent(stage=self.run.stage, step=step, values=values))
        elapsed = time.time() - self.started
        total = int(state.max_steps)
        w.emit(
            ProgressEvent(
                stage=self.run.stage,
                step=step,
                total=total,
                elapsed_s=elapsed,
                eta_s=elapsed / step * (total - step) if step else None,
            )
        )
        signals = {TRL_SIGNALS[k]: v for k, v in values.items() if k in TRL_SIGNALS and v is not None}
        if signals:
            if self.run.monitor is None:
                self.run.monitor = AlertMonitor(self.run._thresholds, self.run.grader())
            for a in self.run.monitor.update(step, signals):
                w.emit(AlertEvent(stage=self.run.stage, step=step, kind=a.kind, severity=a.severity, message=a.message))

    def on_save(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: object) -> None:
        """TRL's checkpoint (a model directory `<output_dir>/checkpoint-<step>`, transformers' PREFIX_CHECKPOINT_DIR),
        announced so the Runs view lists it with the run (it lies outside the run directory)."""
        from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

        if not state.is_world_process_zero:
            return
        assert args.output_dir is not None  # TrainingArguments fills in its default
        path = Path(args.output_dir) / f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}"
        if path.is_dir():
            self.last_checkpoint = path.resolve()
            self.run._open().emit(
                CheckpointEvent(stage=self.run.stage, step=int(state.global_step), path=str(self.last_checkpoint))
            )

    def on_train_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: object
    ) -> None:
        if not state.is_world_process_zero:
            return
        w = self.run._open()
        last = self.last_checkpoint if self.last_checkpoint is not None and self.last_checkpoint.is_dir() else None
        w.emit(
            StageFinishedEvent(
                stage=self.run.stage, step=int(state.global_step), status="ok", checkpoint=str(last) if last else None
            )
        )
        w.close()
        self.run.writer = None
