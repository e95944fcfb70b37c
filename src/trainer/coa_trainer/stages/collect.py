"""`python -m coa_trainer collect --config C --run-dir runs/<id> [--resume]` — SFT data the AutoCoA way: questions ×
K samples per question from a teacher, in CoA mode (the dialect's agent prompt, searches through the environment
server) and/or CoT mode (the tool-free prompt), every trajectory graded by the server's /v1/grade, then selection
(rejection sampling and filters), SFT-1 pairs by the core's pair builder, and the CoA : CoT mix for SFT-2/3.

Run directory (stages/collect/):
  settings.json          what is being collected (teacher, modes, K, sampling): --resume refuses other settings
  collection.coa.jsonl   every graded trajectory, append-only; record id `<question id>:<mode>:<k>` is the dedupe key
  selected.coa.jsonl     the kept trajectories (SFT-2/3 data), written atomically at the end
  pairs.jsonl            SFT-1 pairs over the whole collection (`coa data prepare pairs`, the core's builder)
  report.json, report.md kept / dropped by reason, by mode, pair counts, teacher errors
  collect.json           written last: the collection is finished (the pipeline's and the SFT stages' marker)

Resume after SIGKILL: a line is written with one write() and the file is fsynced after every batch, so at most
the last line is partial; --resume cuts it off, reads the ids already there and samples only the rest — no record
lost, none twice. SIGTERM finishes the batch in flight, then exits 130.

The teacher produces continuations inside the trainer's own multi-turn loop (rollout.run_turns): a model directory
through rollout.ModelSampler, an OpenAI-compatible endpoint through teacher.EndpointSampler."""

from __future__ import annotations

import json
import os
import subprocess
import time
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, NamedTuple

from pydantic import ValidationError

from ..base import quiet  # noqa: F401
from ..base.config import validate_config
from ..contracts.run_config import CollectSelect, DataConfig, QuestionFiles, RunConfig
from ..base.errors import CoaError
from ..base.lifecycle import on_stop_signals
from ..base.options import CollectOptions
from ..base.runstart import run_started
from ..rollout.metrics import graded_sums, graded_values
from ..data.records import RecordTokens, grading_view, trajectory_record
from ..contracts.record import RewardBreakdown, TrajectoryRecord
from ..contracts.error_code import ErrorCode
from ..base.events import EventWriter
from ..data.benchmark import Question
from ..data.userdata import UserData, UserQuestion
from ..evaluation.claims import ResultRow, RunTable, by_setting
from .collect_report import CollectReport, ModeCounts, PairsReport, SftMix, report_markdown
from .collect_settings import CollectSettings, Sampling, TeacherSettings
from ..contracts.events import (
    AlertEvent,
    EvalEvent,
    LogEvent,
    MetricsEvent,
    ProgressEvent,
    SampleEvent,
    StageFinishedEvent,
)

if TYPE_CHECKING:
    from ..rollout.trajectory import RlTrajectory

COLLECT_DIR = "collect"


class CollectError(CoaError):
    """A collection that cannot run as configured (bad_config unless the raiser says otherwise)."""

    code = ErrorCode.bad_config


@dataclass
class Work:
    q: Question | UserQuestion
    mode: str
    k: int

    @property
    def key(self) -> str:
        return f"{self.q.id}:{self.mode}:{self.k}"


@dataclass
class Generated:
    tokens: float = 0.0  # tokens the teacher generated so far (the throughput metric)


@dataclass
class TeacherBackend:
    """A teacher ready to sample: `rollout(works, batch_no)` runs the multi-turn loop for one batch (trajectories in
    the works' order), `response(trajectory)` is its text (and its tokens when the teacher is a model here),
    `stats()` the endpoint's request counts, `device` and `name` what the run's first events say about it."""

    rollout: Callable[[list[Work], int], list[RlTrajectory]]
    response: Callable[[RlTrajectory], tuple[str, RecordTokens | None]]
    stats: Callable[[], dict[str, float]]
    device: str
    name: str
    generated: Generated = field(default_factory=Generated)


def _every(out: list[RlTrajectory | None]) -> list[RlTrajectory]:
    """A batch's trajectories once every mode filled its places."""
    done = [tr for tr in out if tr is not None]
    assert len(done) == len(out), "a work item of no configured mode"
    return done


def collect_dir(run_dir: Path) -> Path:
    from ..base.runlayout import stage_dir

    return stage_dir(run_dir, COLLECT_DIR)


def finished(run_dir: Path) -> bool:
    return (collect_dir(run_dir) / "collect.json").is_file()


# ---------------------------------------------------------------- the collection file (append-only, resumable)


class Collected(NamedTuple):
    """A line of the collection file: its record, and the line as written (copied byte for byte into the
    selection)."""

    record: TrajectoryRecord
    line: str


def read_collection(path: Path, repair: bool) -> dict[str, Collected]:
    """Records of the collection by id. `repair`: a last line without its newline (a write cut by SIGKILL) is
    removed from the file first. A repeated id keeps its first record."""
    if not path.is_file():
        return {}
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    if end < len(data) and repair:
        with open(path, "r+b") as f:
            f.truncate(end)
            f.flush()
            os.fsync(f.fileno())
    out: dict[str, Collected] = {}
    # lines end at "\n" only: a response may hold U+2028 and the like, which json.dumps leaves unescaped
    for no, line in enumerate(data[:end].decode("utf-8").split("\n"), 1):
        if line.strip():
            try:
                rec = TrajectoryRecord.model_validate_json(line)
            except ValidationError as e:
                # pydantic's text of the first error: its field (none for bad JSON), then its message
                first = [
                    x.split(" [type=")[0].strip() for x in str(e).splitlines()[1:3] if "further information" not in x
                ]
                raise CollectError(
                    f"{path}:{no}: not a collected record ({': '.join(first)}); move the file away to collect again",
                    ErrorCode.bad_data,
                ) from e
            out.setdefault(rec.id, Collected(rec, line))
    return out


def append_records(path: Path, records: list[dict]) -> None:
    """One write() per line, then flush + fsync: a kill leaves whole lines and at most one partial last line."""
    with open(path, "a", encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
        f.flush()
        os.fsync(f.fileno())


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)


# ---------------------------------------------------------------- selection (rejection sampling + filters)

DROP_REASONS = ("incorrect", "format", "too_many_tool_calls", "duplicate")


def graded(rec: TrajectoryRecord) -> RewardBreakdown:
    """A collected record's grade (every record of the collection file is graded before it is written)."""
    if rec.reward is None:
        raise CollectError(
            f"collected record {rec.id} has no reward: the collection file was not written by collect", "bad_data"
        )
    return rec.reward


def mode_of(rec: TrajectoryRecord) -> str:
    """The collection mode (coa or cot) the record's meta names: collect's own meta field."""
    extra = rec.meta.model_extra if rec.meta is not None else None
    return str((extra or {}).get("mode", ""))


def select(
    records: list[TrajectoryRecord], sel: CollectSelect
) -> tuple[list[TrajectoryRecord], dict[str, int], list[str | None]]:
    """(kept records, dropped count per reason, the reason of each record or None when kept). A record is dropped
    for the first reason that applies, in DROP_REASONS order."""
    kept: list[TrajectoryRecord] = []
    dropped = {r: 0 for r in DROP_REASONS}
    seen: set[tuple[str, str]] = set()
    reasons: list[str | None] = []
    for rec in records:
        b = graded(rec)
        reason = None
        if sel.correct_only and float(b.em) != 1.0:
            reason = "incorrect"
        elif sel.format_clean and not b.format_ok:
            reason = "format"
        elif sel.max_tool_calls is not None and int(b.tool_calls) > sel.max_tool_calls:
            reason = "too_many_tool_calls"
        elif sel.dedupe and (rec.question, rec.response) in seen:
            reason = "duplicate"
        reasons.append(reason)
        if reason:
            dropped[reason] += 1
        else:
            seen.add((rec.question, rec.response))
            kept.append(rec)
    return kept, dropped, reasons


def build_report(
    records: list[TrajectoryRecord],
    kept: list[TrajectoryRecord],
    dropped: dict[str, int],
    reasons: list[str | None],
    modes: list[str],
    failed: int,
    teacher_stats: dict[str, float],
    pairs: PairsReport,
    ratio: float,
    empty_responses: int = 0,
) -> CollectReport:
    by_mode = {m: ModeCounts() for m in modes}
    for rec, reason in zip(records, reasons):
        m = by_mode.setdefault(mode_of(rec), ModeCounts())
        m.collected += 1
        m.correct += int(float(graded(rec).em) == 1.0)
        m.kept += int(reason is None)
        m.with_tools += int(graded(rec).tool_calls > 0)
    coa = sum(1 for r in kept if graded(r).tool_calls > 0)
    cot = len(kept) - coa
    # what sft_mix_stream does with them (data/samples.py): every CoA trajectory, CoT ones at coa_cot_ratio : 1
    cot_used = min(cot, max(1, round(coa / ratio))) if cot and coa else cot
    return CollectReport(
        collected=len(records),
        questions=len({r.question for r in records}),
        kept=len(kept),
        dropped=dropped,
        failed_samples=failed,
        empty_responses=empty_responses,
        by_mode={m: by_mode[m] for m in modes},
        questions_with_kept=len({r.question for r in kept}),
        sft_mix=SftMix(with_tools=coa, tool_free=cot, coa_cot_ratio=ratio, tool_free_per_epoch=cot_used),
        pairs=pairs,
        teacher=teacher_stats,
    )


# ---------------------------------------------------------------- the collected data as SFT data


def collected_data(config: RunConfig, run_dir: Path, prepare: bool = True) -> UserData | None:
    """A userdata.UserData whose SFT trajectories are this run's kept collection and whose SFT-1 pairs are the ones
    built from it — or None when the run has no finished collection (or collect.use_for_sft is off)."""
    from ..base.runlayout import data_dir

    cdir = collect_dir(run_dir)
    if not config.collect.use_for_sft or not finished(run_dir):
        return None
    own = config.data
    with_defaults = own if own is not None else validate_config({"data": {}}).data  # sft_filter's default
    assert with_defaults is not None  # {"data": {}} validates to a data section with every default
    data = DataConfig(
        questions=own.questions if own else QuestionFiles(train=None, dev=None, test=None),
        sft=[str(cdir / "selected.coa.jsonl")],
        sft1_pairs=str(cdir / "pairs.jsonl") if (cdir / "pairs.jsonl").is_file() else None,
        corpus=own.corpus if own else None,
        strict_ids=own.strict_ids if own else False,
        sft_filter=with_defaults.sft_filter,
    )
    return UserData(config.model_copy(update={"data": data}), data_dir(config, run_dir) / "prepared", prepare=prepare)


# ---------------------------------------------------------------- the command


class Collector:
    def __init__(self, config: RunConfig, opts: CollectOptions, run_dir: Path, writer: EventWriter):
        self.config, self.opts, self.run_dir, self.writer = config, opts, run_dir, writer
        self.ccfg = config.collect
        self.dir = collect_dir(run_dir)
        self.cancelled = False
        self.env: Any = None
        self.own_env = False
        self.empty_responses = 0  # samples the teacher answered with nothing (counted among the failed ones)

    # ------------------------------------------------------------ set-up (every check before sampling)
    def questions(self) -> list[Question | UserQuestion]:
        from ..data.benchmark import ensure_benchmark_files
        from ..base.runlayout import data_dir

        split = self.ccfg.split
        if self.config.data is not None:
            data = UserData(self.config, data_dir(self.config, self.run_dir) / "prepared")
            if not data.has_questions(split):
                raise CollectError(f"collect needs data.questions.{split} (collect.split is {split})")
            qs: list[Question | UserQuestion] = list(data.split(split))
            data.check_corpus()
            for note in data.notes:
                self.writer.emit(LogEvent(level="warning", message=f"{COLLECT_DIR}: {note}"))
        else:
            qs = list(ensure_benchmark_files(self.config, data_dir(self.config, self.run_dir)).split(split))
        from ..data.userdata import golden

        for q in qs:
            if not [g for g in golden(q) if g.strip()]:
                raise CollectError(
                    f"question {q.id} has no golden answer: collection grades every trajectory against "
                    "them (rejection sampling)",
                    "bad_data",
                )
        if not qs:
            raise CollectError(f"no questions in split {split}", "bad_data")
        return qs[: self.ccfg.limit] if self.ccfg.limit else qs

    def teacher_settings(self) -> TeacherSettings:
        from ..base.runlayout import STAGE_ORDER, final_dir

        t = self.ccfg.teacher
        if t.url:
            return TeacherSettings(
                kind="endpoint", url=t.url, api=t.api, model=t.model, tokenizer=t.tokenizer or t.path
            )
        path = t.path
        if not path:
            found = [
                final_dir(self.run_dir, s)
                for s in reversed(STAGE_ORDER)
                if (final_dir(self.run_dir, s) / "config.json").is_file()
            ]
            path = str(found[0]) if found else self.config.model.path
        if not path:
            raise CollectError(
                "collect needs a teacher: collect.teacher.path (a model directory) or "
                "collect.teacher.url (an OpenAI-compatible endpoint), or a finished stage in this run"
            )
        return TeacherSettings(kind="model", path=str(Path(path).resolve()))

    def check_model_dir(self, path: str) -> None:
        """The core's model-directory check (config.json and a tokenizer), as `coa data check` does it."""
        from ..data.userdata import DataError, find_cli

        probe = self.dir / "teacher-check.json"
        probe.write_text(json.dumps({"model": {"path": path}}) + "\n", encoding="utf-8")
        node, cli = find_cli(self.config)
        try:
            res = subprocess.run(
                [node, str(cli), "data", "check", str(probe)],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                check=False,
            )
        finally:
            probe.unlink(missing_ok=True)
        if res.returncode != 0:
            line = next((ln for ln in res.stderr.splitlines() if ": error: " in ln), res.stderr.strip()[-300:])
            msg = line.split(": error: ", 1)[1] if ": error: " in line else line
            raise DataError(f"teacher {msg.removeprefix('model.path: ')}")

    def settings(self, teacher: TeacherSettings) -> CollectSettings:
        c = self.ccfg
        return CollectSettings(
            teacher=teacher,
            split=c.split,
            limit=c.limit,
            modes=list(c.modes),
            samples=c.samples,
            dialect=self.config.dialect,
            reward=c.reward.model_copy(deep=True),
            sampling=Sampling(
                temperature=c.temperature,
                top_p=c.top_p,
                seed=self.config.seed if c.seed is None else c.seed,
                max_new_tokens=c.max_new_tokens,
                max_turns=c.max_turns,
                max_obs_tokens=c.max_obs_tokens,
                max_len=c.max_len,
                top_k=c.top_k,
            ),
        )

    # ------------------------------------------------------------ run
    def run(self) -> int:
        w = self.writer
        self.dir.mkdir(parents=True, exist_ok=True)
        coll_path = self.dir / "collection.coa.jsonl"
        resume = self.opts.resume
        if coll_path.is_file() and not resume:
            raise CollectError(
                f"{coll_path} exists: pass --resume to continue that collection (or use another run directory)"
            )
        questions = self.questions()  # bad data stops here
        self.first_question = questions[0].question
        teacher = self.teacher_settings()
        if teacher.kind == "model":
            assert teacher.path is not None
            self.check_model_dir(teacher.path)
        settings = self.settings(teacher)
        backend = self.make_teacher(teacher)  # endpoint probed, tokenizer loaded: before any sampling
        settings_path = self.dir / "settings.json"
        now = settings.to_json()
        if resume and settings_path.is_file():
            before = json.loads(settings_path.read_text(encoding="utf-8"))
            diff = [k for k in now if before.get(k) != now[k] and k != "teacher"]
            # what the endpoint said about itself may differ between two starts
            before_teacher = TeacherSettings.from_json(before.get("teacher") or {})
            diff += ["teacher"] if before_teacher.identity() != teacher.identity() else []
            if diff:
                raise CollectError(
                    f"--resume: {settings_path} was collected with other settings ({', '.join(diff)}); "
                    "use another run directory for a different collection"
                )
        write_atomic(settings_path, json.dumps(now, indent=2) + "\n")
        (self.dir / "collect.json").unlink(missing_ok=True)

        done = read_collection(coll_path, repair=True)
        work = [Work(q, m, k) for m in self.ccfg.modes for q in questions for k in range(self.ccfg.samples)]
        todo = [x for x in work if x.key not in done]
        total = len(work)
        run_started(
            w,
            COLLECT_DIR,
            self.config,
            total,
            device=backend.device,
            resumed_from=len(done) if resume and done else None,
        )
        w.emit(
            LogEvent(
                level="info",
                message=f"collect: {len(questions)} questions × {len(self.ccfg.modes)} "
                f"mode(s) × K={self.ccfg.samples} = {total} samples from {backend.name}"
                + (f"; {total - len(todo)} already collected, {len(todo)} to go" if done else ""),
            )
        )
        self.start_env()
        failed = self.sample(todo, len(work) - len(todo), total, backend, coll_path, settings)
        if self.cancelled:
            w.emit(
                StageFinishedEvent(
                    stage=COLLECT_DIR, step=len(read_collection(coll_path, False)), status="cancelled", checkpoint=None
                )
            )
            return 130
        return self.finish(coll_path, work, settings, failed, backend.stats())

    def start_env(self) -> None:
        from ..env.session import open_env, started_here

        self.env = open_env(self.opts.env, self.config, self.run_dir, check=True)
        self.own_env = started_here(self.env)

    def make_teacher(self, teacher: TeacherSettings) -> TeacherBackend:
        """The teacher's sampling: a model directory loaded here, or an endpoint probed (its model name and what it
        does with stop strings written into `teacher`)."""
        from ..rollout.agentio import AgentIO
        from ..data.dialects import tags
        from ..data.prompts import chat_messages, prompt_ids, prompt_string
        from ..rollout.loop import ModelSampler, RlTrajectory, run_turns

        c, config = self.ccfg, self.config
        t = tags(config.dialect)
        seed = config.seed if c.seed is None else c.seed
        limits: dict[str, Any] = {
            "max_turns": c.max_turns,
            "max_new_tokens": c.max_new_tokens,
            "max_obs_tokens": c.max_obs_tokens,
            "max_len": c.max_len,
        }
        generated = Generated()

        if teacher.kind == "model":
            import torch

            from ..model.load import load_model, setup_runtime

            rt = setup_runtime(config)
            # the teacher's vocabulary is used as it is: tags that are single tokens there (the embedded default's
            # stage directories) are read as ids, others as text (AgentIO.make)
            assert teacher.path is not None
            model, tok = load_model(
                teacher.path, rt, None, trainable=False, special_tags=False, weight_dtype=config.model.dtype
            )
            model.eval()
            gen_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
            extra = (
                tuple(gen_eos) if isinstance(gen_eos, (list, tuple)) else ((gen_eos,) if gen_eos is not None else ())
            )
            io = AgentIO.make(tok, t, extra)
            generator = torch.Generator(device=rt.device)

            def rollout_batch(works: list[Work], batch_no: int) -> list[RlTrajectory]:
                generator.manual_seed(zlib.crc32(f"{seed}/collect/{works[0].key}".encode()))
                sampler = ModelSampler(model, io, rt.device, rt.autocast_dtype, c.temperature, generator, c.top_p)
                out: list[RlTrajectory | None] = [None] * len(works)
                for mode in c.modes:
                    idx = [i for i, x in enumerate(works) if x.mode == mode]
                    if not idx:
                        continue
                    trajs = [RlTrajectory(prompt_ids(tok, config, works[i].q.question, mode=mode)) for i in idx]
                    with torch.no_grad():
                        run_turns(sampler, trajs, self.tool if mode == "coa" else None, **limits)
                    for i, tr in zip(idx, trajs):
                        out[i] = tr
                        generated.tokens += sum(tr.loss_mask)
                return _every(out)

            def response(tr: RlTrajectory) -> tuple[str, RecordTokens | None]:
                ids, mask, lps = tr.ids, tr.loss_mask, tr.logprobs
                if ids and ids[-1] in io.eos_ids() and mask[-1] == 1:  # the end of turn is not part of the text
                    ids, mask, lps = ids[:-1], mask[:-1], lps[:-1]
                return tok.decode(ids, skip_special_tokens=False), RecordTokens(ids, mask, lps)

            return TeacherBackend(
                rollout=rollout_batch,
                response=response,
                stats=dict,
                generated=generated,
                device=str(rt.device),
                name=f"the model directory {teacher.path}",
            )

        from ..rollout.teacher import Endpoint, EndpointSampler, TeacherError, api_key

        tc = c.teacher
        tok = None
        if teacher.tokenizer:
            from ..model.load import load_tokenizer

            try:
                tok = load_tokenizer(Path(teacher.tokenizer), special_tags=False)
            except (OSError, ValueError) as e:
                raise TeacherError(f"collect.teacher.tokenizer {teacher.tokenizer}: no usable tokenizer ({e})") from e
        elif teacher.api == "completions":
            raise TeacherError(
                'collect.teacher.api "completions" renders the prompt here: give the teacher\'s '
                "tokenizer (collect.teacher.tokenizer, a directory with its chat template), or use "
                'api "chat"'
            )
        assert teacher.url is not None
        endpoint = Endpoint(
            teacher.url,
            api_key=api_key(tc.api_key_env),
            timeout_s=tc.timeout_s,
            max_retries=tc.max_retries,
            backoff_s=tc.backoff_s,
        )
        teacher.model = endpoint.probe(teacher.model, teacher.api)
        io = AgentIO(tok, t, False) if tok is None else AgentIO.make(tok, t)
        if io.special:
            io = AgentIO(tok, t, False)  # an endpoint returns text: tags are read as text whatever the tokenizer
        sampler = EndpointSampler(
            endpoint,
            io,
            teacher.model,
            teacher.api,
            temperature=c.temperature,
            top_p=c.top_p,
            concurrency=tc.concurrency,
            seed=seed,
        )
        q0 = self.first_question
        msgs0 = chat_messages(config, q0, config.dialect, c.modes[0])
        echo = sampler.probe_stops("" if tok is None else prompt_string(tok, config, q0, mode=c.modes[0]), msgs0)
        teacher.stops_in_text, teacher.probed = echo, True
        self.writer.emit(
            LogEvent(
                level="info",
                message="collect: the endpoint "
                + {
                    True: "returns matched stop strings in its text",
                    False: "drops matched stop strings from its text",
                    None: "did not show whether it returns matched stop strings (an unclosed tag at a stop is closed)",
                }[echo],
            )
        )

        def rollout_batch(works: list[Work], batch_no: int) -> list[RlTrajectory]:
            out: list[RlTrajectory | None] = [None] * len(works)
            before = endpoint.stats["completion_tokens"]
            for mode in c.modes:
                idx = [i for i, x in enumerate(works) if x.mode == mode]
                if not idx:
                    continue
                trajs = []
                for i in idx:
                    tr = RlTrajectory([])
                    q = works[i].q.question
                    if teacher.api == "chat":
                        msgs = chat_messages(config, q, config.dialect, mode)
                        sampler.start(tr, "\n".join(m["content"] for m in msgs), msgs, works[i].key)
                    else:  # the completions api renders the prompt with the teacher's tokenizer (required above)
                        assert tok is not None
                        sampler.start(tr, prompt_string(tok, config, q, mode=mode), None, works[i].key)
                    trajs.append(tr)
                run_turns(sampler, trajs, self.tool if mode == "coa" else None, **limits)
                for i, tr in zip(idx, trajs):
                    out[i] = tr
            generated.tokens += endpoint.stats["completion_tokens"] - before
            return _every(out)

        return TeacherBackend(
            rollout=rollout_batch,
            response=lambda tr: (tr.text, None),
            stats=lambda: dict(endpoint.stats),
            generated=generated,
            device=f"endpoint {teacher.url}",
            name=f"the endpoint {teacher.url} ({teacher.api}, model {teacher.model})",
        )

    def tool(self, queries: list[str]) -> list[str | None]:
        return self.env.observations(queries, self.ccfg.top_k, self.config.dialect)

    def sample(
        self,
        todo: list[Work],
        already: int,
        total: int,
        teacher: TeacherBackend,
        coll_path: Path,
        settings: CollectSettings,
    ) -> int:
        w, c = self.writer, self.ccfg
        started, done, failed, empty = time.time(), already, 0, 0
        meta_teacher = {k: v for k, v in settings.teacher.to_json().items() if v is not None}
        meta_sampling = asdict(settings.sampling)
        B = c.batch_size
        for b in range(0, len(todo), B):
            if self.cancelled:
                break
            works = todo[b : b + B]
            t0 = time.time()
            gen_before = teacher.generated.tokens
            trajs = teacher.rollout(works, b // B)
            answered: list[tuple[Work, RlTrajectory, str, RecordTokens | None]] = []
            empty_before = empty
            for x, tr in zip(works, trajs):
                if tr.error is not None:
                    failed += 1
                    continue
                response, tokens = teacher.response(tr)
                if not response.strip():  # an API or `transformers serve` may answer nothing: a failed sample
                    failed += 1
                    empty += 1
                    continue
                answered.append((x, tr, response, tokens))
            owners = [tr for _, tr, _, _ in answered]
            breakdowns: list[RewardBreakdown] = []
            dialect = self.config.dialect
            if answered:
                breakdowns = self.env.grade(
                    [
                        grading_view(
                            trajectory_record(x.key, x.q.question, r, golden_answers=_golden(x.q), dialect=dialect)
                        )
                        for x, _, r, _ in answered
                    ],
                    scheme=c.reward.scheme,
                    params=dict(c.reward.params),
                )
                if len(breakdowns) != len(answered):
                    raise CollectError(f"the env server graded {len(breakdowns)} of {len(answered)} records")
            # each record written once, whole: its grade beside it
            records = [
                trajectory_record(
                    x.key,
                    x.q.question,
                    response,
                    golden_answers=_golden(x.q),
                    dialect=dialect,
                    tokens=tokens,
                    meta={
                        "run": w.run,
                        "stage": COLLECT_DIR,
                        "step": done + i + 1,
                        "sample": x.k,
                        "group": str(x.q.id),
                        "mode": x.mode,
                        "teacher": meta_teacher,
                        "sampling": meta_sampling,
                        "truncated": tr.truncated,
                        "finished": tr.finished,
                        "tool_failures": tr.tool_failures,
                    },
                    reward=bd,
                )
                for i, ((x, tr, response, tokens), bd) in enumerate(zip(answered, breakdowns))
            ]
            if records:
                append_records(coll_path, records)
            done += len(records)
            dt = time.time() - t0
            n = max(1, len(records))
            stats = teacher.stats()
            graded = graded_values(graded_sums(breakdowns))  # rollout/metrics.py: one place
            values = {
                "collected": float(done),
                "failed": float(failed),
                **{k: graded[k] for k in ("em", "f1", "tc", "tp", "format_error_rate")},
                "tool_failures": float(sum(tr.tool_failures for tr in owners)),
                "truncated_rate": sum(1.0 for tr in owners if tr.truncated) / n if records else None,
                "samples_per_s": len(records) / max(dt, 1e-9),
                "gen_tokens_per_s": (teacher.generated.tokens - gen_before) / max(dt, 1e-9),
                **{f"teacher_{k}": float(v) for k, v in stats.items() if k != "completion_tokens"},
            }
            w.emit(MetricsEvent(stage=COLLECT_DIR, step=done, values=values))
            elapsed = time.time() - started
            rate = (done - already) / elapsed if elapsed > 0 else 0.0
            w.emit(
                ProgressEvent(
                    stage=COLLECT_DIR,
                    step=done,
                    total=total,
                    elapsed_s=elapsed,
                    eta_s=(total - done - failed) / rate if rate > 0 else None,
                )
            )
            if records:
                w.emit(SampleEvent(stage=COLLECT_DIR, step=done, record=TrajectoryRecord.model_validate(records[0])))
            errors = [tr.error for tr in trajs if tr.error is not None]
            if errors:  # counted, never fatal: the samples are left out and a --resume samples them again
                w.emit(
                    AlertEvent(
                        stage=COLLECT_DIR,
                        step=done,
                        kind="other",
                        severity="warning",
                        message=f"{len(errors)} sample(s) of this batch failed at the teacher after retries "
                        f"({failed} so far; last: {errors[-1][:200]}); --resume samples them again",
                    )
                )
            if empty > empty_before:
                w.emit(
                    AlertEvent(
                        stage=COLLECT_DIR,
                        step=done,
                        kind="other",
                        severity="warning",
                        message=f"the teacher answered {empty - empty_before} sample(s) of this batch with an empty "
                        f"response ({empty} so far): counted as failed samples; --resume samples them again",
                    )
                )
        self.empty_responses = empty
        return failed

    def finish(
        self, coll_path: Path, work: list[Work], settings: CollectSettings, failed: int, teacher_stats: dict[str, float]
    ) -> int:
        from ..data.userdata import DataError, find_cli

        w = self.writer
        by_id = read_collection(coll_path, repair=False)
        # collection order, whatever the resume history
        records = [by_id[x.key].record for x in work if x.key in by_id]
        kept, dropped, reasons = select(records, self.ccfg.select)
        sel_path = self.dir / "selected.coa.jsonl"  # the kept lines as collected, byte for byte
        write_atomic(sel_path, "".join(by_id[r.id].line + "\n" for r in kept))
        pairs = PairsReport()
        pairs_path = self.dir / "pairs.jsonl"
        pairs_path.unlink(missing_ok=True)
        pair_error = None
        if records:
            node, cli = find_cli(self.config)
            rep = self.dir / "pairs.report.json"
            res = subprocess.run(
                [
                    node,
                    str(cli),
                    "data",
                    "prepare",
                    "pairs",
                    str(coll_path),
                    "--out",
                    str(pairs_path),
                    "--per-question",
                    str(self.ccfg.pairs_per_question),
                    "--report",
                    str(rep),
                ],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                check=False,
            )
            if res.returncode == 0:
                pairs = PairsReport.parse(rep.read_text(encoding="utf-8"))
            elif "no pairs" in res.stderr:
                pairs = PairsReport.failed(res.stderr.strip().split(": error: ")[-1][:300])
            else:  # the report is written first: a collection is never lost to its pairs
                pair_error = next((ln for ln in res.stderr.splitlines() if ": error: " in ln), res.stderr[-300:])
                pairs = PairsReport.failed(pair_error.split(": error: ")[-1][:300])
        ratio = float(self.config.stages.sft2.coa_cot_ratio)
        report = build_report(
            records,
            kept,
            dropped,
            reasons,
            list(self.ccfg.modes),
            failed,
            teacher_stats,
            pairs,
            ratio,
            self.empty_responses,
        )
        write_atomic(self.dir / "report.json", json.dumps(report.to_json(), indent=2) + "\n")
        md = report_markdown(report, settings)
        write_atomic(self.dir / "report.md", md)
        if pair_error is not None:
            raise DataError(pair_error)
        if not kept:
            raise nothing_kept(len(work), records, failed, self.empty_responses, dropped)
        write_atomic(
            self.dir / "collect.json",
            json.dumps(
                {
                    "stage": COLLECT_DIR,
                    "settings": settings.to_json(),
                    "collected": len(records),
                    "kept": len(kept),
                    "selected": str(sel_path),
                    "pairs": str(pairs_path) if pairs_path.is_file() else None,
                    "failed_samples": failed,
                },
                indent=2,
            )
            + "\n",
        )
        w.emit(
            EvalEvent(
                stage=COLLECT_DIR,
                step=len(records),
                split=self.ccfg.split,
                metrics={
                    "collected": float(len(records)),
                    "kept": float(len(kept)),
                    "failed": float(failed),
                    "kept_rate": len(kept) / len(records) if records else None,
                    "pairs": float(pairs.pairs),
                    **{f"dropped_{k}": float(v) for k, v in dropped.items()},
                },
            )
        )
        w.emit(LogEvent(level="info", message=f"collect: {md}"))
        w.emit(StageFinishedEvent(stage=COLLECT_DIR, step=len(records), status="ok", checkpoint=str(sel_path)))
        return 0

    def on_signal(self, *_: Any) -> None:
        self.cancelled = True

    def close(self) -> None:
        if self.env is not None and self.own_env:
            self.env.stop()


def nothing_kept(
    samples: int, records: list[TrajectoryRecord], failed: int, empty: int, dropped: dict[str, int]
) -> CollectError:
    """The error of a collection that kept no trajectory — SFT would have nothing to train on, so it is not "ok".
    The teacher's fault (bad_teacher) when nothing came back graded, the data's (bad_data) when selection dropped
    everything; the reasons counted either way (report.md has the rest)."""
    parts = []
    if failed:
        parts.append(f"{failed} failed at the teacher" + (f" ({empty} empty responses)" if empty else ""))
    if records:
        why = ", ".join(f"{n} {reason.replace('_', ' ')}" for reason, n in dropped.items() if n)
        parts.append(f"{len(records)} graded and dropped by collect.select ({why})")
    code = ErrorCode.bad_teacher if not records else ErrorCode.bad_data
    return CollectError(
        f"collect kept 0 of {samples} samples: {'; '.join(parts) or 'nothing was sampled'} — "
        "nothing for SFT to train on (stages/collect/report.md)",
        code,
    )


def _golden(q: Question | UserQuestion) -> list[str]:
    from ..data.userdata import golden

    return golden(q)


def collect_command(opts: CollectOptions) -> int:
    from ..base.runstart import RunStart, run_in_directory

    collector: Collector | None = None

    def body(start: RunStart) -> int:
        nonlocal collector
        config = start.config
        if opts.limit:
            config.collect.limit = opts.limit
        if opts.samples:
            config.collect.samples = opts.samples
        if opts.teacher:
            t = config.collect.teacher
            if opts.teacher.startswith(("http://", "https://")):
                t.url = opts.teacher
            else:
                t.path, t.url = str(Path(opts.teacher).resolve()), None
        collector = Collector(config, opts, start.run_dir, start.writer)
        on_stop_signals(collector.on_signal)  # TERM, INT, HUP: finish the batch in flight, then stop
        return collector.run()

    def close() -> None:
        if collector is not None:
            collector.close()

    return run_in_directory(
        opts.run_dir, COLLECT_DIR, opts.config, opts.overrides, body, lock_as="collect", cleanup=close
    )


# ---------------------------------------------------------------- the results table's comparison


def comparison_lines(run_dir: Path, rows: list[ResultRow]) -> list[str]:
    """For results.md: when this run's SFT data is a collection whose teacher is another run's stage result
    (`<run>/stages/<stage>/final`) and that run has a results table (trained on the embedded oracle, or on other
    data), each setting both tables have, side by side, with the difference — measured, whichever way it goes."""
    info_path = collect_dir(run_dir) / "collect.json"
    if not info_path.is_file():
        return []
    info = json.loads(info_path.read_text(encoding="utf-8"))
    settings = info.get("settings") or {}
    teacher = TeacherSettings.from_json(settings.get("teacher") or {})
    head = [
        "",
        "## SFT data collected from a teacher",
        "",
        (
            f"The SFT stages of this run trained on {info.get('kept')} trajectories kept of {info.get('collected')} "
            f"collected from {teacher.path or teacher.url} (stages/collect/report.md; SFT-1 pairs built from all of "
            "them)."
        ),
    ]
    tp = Path(teacher.path) if teacher.path else None
    other = tp.parents[2] / "results.json" if tp is not None and tp.parent.parent.name == "stages" else None
    if other is None or not other.is_file():
        return head + ["", "The teacher is not a run with a results table here, so there is nothing to compare with."]
    theirs = by_setting(RunTable.of(json.loads(other.read_text(encoding="utf-8"))).rows)
    lines = [
        "",
        f"Against {other.parent.name} (the teacher's own run, its SFT data as that run configured it):",
        "",
        "| setting | EM here | EM there | Δ EM | TC here | TC there | format errors here | there |",
        "|---|---|---|---|---|---|---|---|",
    ]

    def cell(v: float | None) -> str:
        return "—" if v is None else f"{v:.3f}"

    both = [(r, o, r.em, o.em) for r in rows if (o := theirs.get(r.setting)) is not None]
    pairs = [(r, o, em, their_em) for r, o, em, their_em in both if em is not None and their_em is not None]
    if not pairs:
        return head + ["", f"{other} has no setting evaluated in both runs."]
    lines += [
        f"| {r.setting} | {cell(em)} | {cell(their_em)} | {em - their_em:+.3f} | {cell(r.tc)} | "
        f"{cell(o.tc)} | {cell(r.format_error_rate)} | {cell(o.format_error_rate)} |"
        for r, o, em, their_em in pairs
    ]

    def verdict(d: float) -> str:  # the results table's own threshold for "barely changes" is relative; EM: 0.02
        return "higher" if d > 0.02 else ("lower" if d < -0.02 else "about the same (within 0.02)")

    summary = [
        f"- {r.setting}: EM {em:.3f} with the collected data vs {their_em:.3f}: {verdict(em - their_em)}."
        for r, _, em, their_em in pairs
    ]
    return head + lines + ["", *summary]
