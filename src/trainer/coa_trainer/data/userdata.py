"""The user's own data (run config `data`), read ONLY through the core's importers: `coa data prepare
questions|sft|pairs <file> --out <jsonl>` is spawned (argument list, no shell; node found like the environment
server's) and its normalised JSONL is read back. Bad data makes the CLI exit 2 with one
`FILE:LINE:COL: error: FIELD: message` line, which becomes a DataError carrying that line — before any training.

Prepared files are cached in `<run>/data/prepared/`, keyed by the input's path, size and mtime, so a stage, a
resume and the evaluation read the same records."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, Sequence

from ..contracts.run_config import RunConfig
from ..base.core_cli import find_core_cli, find_node
from .benchmark import Question
from .prepared import DataError, PairRecord, PreparedQuestion, SftRecord, read_prepared


@dataclass
class UserQuestion:
    """A question of the user's data, shaped like the benchmark's (the parts evaluation and RL read)."""

    id: str
    question: str
    golden_answers: list[str]
    data_source: str | None = None
    kind: str = "user"
    hops: list = field(default_factory=list)
    known: bool | None = None
    optimal_tool_calls: int | None = None
    source_id: str | None = None  # the id in the user's file, when the file repeats it and this row's id was qualified

    @property
    def answer(self) -> str:
        return self.golden_answers[0] if self.golden_answers else ""


class QuestionSplits(Protocol):
    """What evaluation reads of its questions: the embedded benchmark, the user's data, or a narrowed view of either."""

    def split(self, name: str, /) -> Sequence[Question | UserQuestion]: ...


def golden(q: Question | UserQuestion) -> list[str]:
    """Golden answers of a benchmark or user question."""
    return list(getattr(q, "golden_answers", None) or [q.answer])


def source_of(q: Question | UserQuestion) -> dict:
    """`{"source_id": …}` for a record's meta when the question's id was qualified (its file repeats the id), so
    results join back to the user's rows; {} otherwise."""
    source_id = getattr(q, "source_id", None)
    return {"source_id": source_id} if source_id else {}


def question_meta(q: Question | UserQuestion) -> dict:
    """What a record's meta says about its question, for grouping (coa diff, Compare Runs): the embedded benchmark's
    kind and hops, a user's question's data source."""
    said = (
        ("kind", q.kind if q.kind != "user" else None),
        ("hops", len(q.hops) if q.hops else None),
        ("data_source", q.data_source if isinstance(q, UserQuestion) else None),
    )
    return {key: value for key, value in said if value}  # what the question does not have is left out


def find_cli(config: RunConfig) -> tuple[str, Path]:
    node = find_node(config.env.node)
    if not node:
        raise DataError("node not found: put it on PATH or set COA_NODE (the data importers are in the core)")
    cli, fix = find_core_cli(config.env.cli)
    if not cli.is_file():
        raise DataError(f"{cli} not found: {fix}")
    return node, cli


# The layout of what `coa data prepare` writes, in the cache key: a file prepared by an older CLI (without the fields
# read now, such as an SFT record's format_ok) is prepared again rather than read with them missing.
PREPARED_LAYOUT = 2


class UserData:
    def __init__(self, config: RunConfig, cache_dir: Path, prepare: bool = True):
        """`prepare`: run the CLI where a prepared file is missing (rank 0); other ranks only read."""
        if config.data is None:  # the stages build UserData only for a run config with a data section
            raise DataError("the run config has no data section to read")
        self.config, self.data = config, config.data
        self.cache_dir, self.prepare = cache_dir, prepare
        self._questions: dict[str, list[UserQuestion]] = {}
        self.notes: list[str] = []  # what the importers said of the data (ids made unique, …), for the run's log

    # ------------------------------------------------------------ the CLI
    def _prepared(self, kind: str, inputs: list[str], extra: list[str] | None = None) -> Path:
        key = json.dumps([kind, PREPARED_LAYOUT, extra or [], [(str(Path(p).resolve()), *_stat(p)) for p in inputs]])
        out = self.cache_dir / f"{kind}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.jsonl"
        notes = out.with_suffix(".notes.txt")  # the importer's own lines, kept with the cached file
        if not out.is_file() and self.prepare:
            said = self._cli(["data", "prepare", kind, *inputs, "--out", str(out), *(extra or [])])
            notes.write_text("".join(f"{ln}\n" for ln in said if not ln.startswith("{")), encoding="utf-8")
        if notes.is_file():
            self.notes += [ln for ln in notes.read_text(encoding="utf-8").splitlines() if ln and ln not in self.notes]
        return out

    def _cli(self, args: list[str]) -> list[str]:
        """Runs the core's CLI; returns the lines it wrote to stderr."""
        node, cli = find_cli(self.config)
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        res = subprocess.run([node, str(cli), *args], stdin=subprocess.DEVNULL, capture_output=True, text=True)
        lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
        if res.returncode != 0:
            msg = next((ln for ln in lines if ": error: " in ln), lines[-1] if lines else f"exit {res.returncode}")
            raise DataError(msg)
        return lines

    def check_corpus(self) -> None:
        """data.corpus through the core's corpus check (`coa data check` on a config naming only it): the
        environment server skips a bad line, so a broken corpus is caught here, before training. Once per file
        version (a stamp in the cache)."""
        path = self.data.corpus
        if not path or not self.prepare:
            return
        key = hashlib.sha256(json.dumps([str(Path(path).resolve()), *_stat(path)]).encode()).hexdigest()[:16]
        stamp = self.cache_dir / f"corpus-{key}.ok"
        if stamp.is_file():
            return
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        probe = self.cache_dir / f"corpus-{key}.check.json"
        probe.write_text(json.dumps({"data": {"corpus": str(Path(path).resolve())}}) + "\n", encoding="utf-8")
        try:
            self._cli(["data", "check", str(probe)])
        finally:
            probe.unlink(missing_ok=True)
        stamp.write_text("ok\n", encoding="utf-8")

    # ------------------------------------------------------------ what the stages read
    def has_questions(self, split: str) -> bool:
        return bool(getattr(self.data.questions, split))

    def split(self, name: str) -> list[UserQuestion]:
        """Questions of a split (train, dev, test); [] when the data section names none."""
        if name not in self._questions:
            path = getattr(self.data.questions, name)
            strict = ["--strict-ids"] if self.data.strict_ids else []
            rows = read_prepared(self._prepared("questions", [path], strict), PreparedQuestion) if path else []
            self._questions[name] = [
                UserQuestion(
                    r.id,
                    r.question,
                    list(r.golden_answers),
                    r.data_source,
                    source_id=r.meta.source_id if r.meta else None,
                )
                for r in rows
            ]
        return self._questions[name]

    def sft_records(self) -> list[SftRecord]:
        """Trajectories of data.sft through `prepare sft` (segments as code-point spans of `response`)."""
        out: list[SftRecord] = []
        for entry in self.data.sft:
            path, dialect = (entry, "auto") if isinstance(entry, str) else (entry.path, entry.dialect)
            extra = [] if dialect == "auto" else ["--dialect", dialect]
            out += read_prepared(self._prepared("sft", [path], extra), SftRecord)
        return out

    def pairs(self) -> list[PairRecord]:
        """SFT-1 pairs: data.sft1_pairs, else built by the core from data.sft (`prepare pairs`)."""
        if self.data.sft1_pairs:
            return read_prepared(self._prepared("pairs", [self.data.sft1_pairs]), PairRecord)
        files = [e if isinstance(e, str) else e.path for e in self.data.sft]
        if not files:
            raise DataError("SFT-1 needs data.sft1_pairs or data.sft trajectories to build pairs from")
        return read_prepared(self._prepared("pairs", files), PairRecord)

    def corpus(self) -> str | None:
        return self.data.corpus


def _stat(p: str) -> tuple[int, int]:
    try:
        st = os.stat(p)
    except OSError:
        return (-1, -1)  # the CLI reports the missing file with its own message
    return (st.st_size, st.st_mtime_ns)
